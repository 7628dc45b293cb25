"""Per-sample seeded sampling for local models, independent of how samples are batched.

``transformers``' own sampling draws every row of a batch from one global generator, so a
sample depends on what else shares its batch. Here each row owns a ``torch.Generator``:
the logits processor applies temperature and top-p, draws one token per row from that row's
generator, and leaves only that token possible, so ``generate`` (run greedy) takes it.

Seeds: sample ``j`` of a call seeded ``s`` uses seed ``s + j``, the same sample a single
call seeded ``s + j`` draws, whichever other prompts or samples it was batched with (up to
the floating-point effects of padding, which can rarely change a near-tie on a GPU).
"""

from __future__ import annotations

import secrets
from typing import Any

SEED_MODULUS = 2**63
"""Seeds wrap around at this value (torch generators take 64-bit seeds)."""


def sample_seeds(seed: int | None, prompts: int, n: int) -> list[int]:
    """Seed of each generated row, prompt-major: row ``i * n + j`` gets ``seed + j``.

    Args:
        seed: the call's seed; None draws a fresh random one.
        prompts: number of prompts in the batch.
        n: samples per prompt.
    """
    base = secrets.randbits(62) if seed is None else seed
    return [(base + j) % SEED_MODULUS for _ in range(prompts) for j in range(n)]


def row_sampler(seeds: list[int], temperature: float, top_p: float) -> Any:
    """A ``LogitsProcessor`` that samples each row with its own seeded generator.

    Args:
        seeds: one seed per batch row.
        temperature: > 0.
        top_p: nucleus mass in (0, 1].
    """
    import torch
    from transformers import LogitsProcessor

    class RowSampler(LogitsProcessor):
        """Draw one token per row from that row's generator; mask every other token."""

        def __init__(self) -> None:
            self.generators: list[Any] = []

        def __call__(self, input_ids: Any, scores: Any) -> Any:
            if not self.generators:
                self.generators = [
                    torch.Generator(device=scores.device).manual_seed(s) for s in seeds
                ]
            logits = scores.float() / temperature
            probs = torch.softmax(logits, dim=-1)
            if top_p < 1.0:
                sorted_probs, order = torch.sort(probs, dim=-1, descending=True)
                outside = sorted_probs.cumsum(dim=-1) - sorted_probs > top_p
                sorted_probs = sorted_probs.masked_fill(outside, 0.0)
                probs = torch.zeros_like(probs).scatter(-1, order, sorted_probs)
            picks = torch.stack(
                [
                    torch.multinomial(probs[row], 1, generator=generator)
                    for row, generator in enumerate(self.generators)
                ]
            )
            chosen = torch.full_like(scores, float("-inf"))
            return chosen.scatter(-1, picks, 0.0)

    return RowSampler()
