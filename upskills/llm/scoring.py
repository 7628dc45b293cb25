"""Log-likelihood of continuations under a local causal LM (the ``choose`` rung's score).

Two exact implementations of the same sum ``sum_j log p(cont_j | context, cont_<j)``:

- :func:`score_cached`: the context runs once, its KV cache is reused for every continuation
  and cropped back after each (cheap on a CPU, where the context dominates).
- :func:`score_padded`: every (context, continuation) pair is one right-padded row of a
  batched forward pass (fast on a GPU).

Context and continuation are tokenized separately and concatenated, so every candidate of a
case is scored on the same context tokens (a token that would straddle the boundary is split
at it, identically for every candidate).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ScoreItem:
    """One context and the continuations to score after it (token ids)."""

    context: list[int]
    """Context token ids (prompt and shared prefix)."""
    continuations: list[list[int]]
    """Each candidate's token ids."""


def _gather(torch: Any, logits: Any, targets: Any) -> Any:
    logp = torch.log_softmax(logits.float(), dim=-1)
    return logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1)


def score_cached(model: Any, item: ScoreItem, device: str) -> list[float]:
    """Scores of one item's continuations, reusing the context's KV cache.

    Args:
        model: a transformers causal LM.
        item: the context and continuations.
        device: where the model lives.

    Returns:
        Summed log-probabilities, one per continuation.
    """
    import inspect

    import torch
    from transformers import DynamicCache

    # transformers >= 5.2x names the argument `cache`; older releases `past_key_values`
    name = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    ctx = torch.tensor([item.context], device=device)
    with torch.no_grad():
        cache = DynamicCache()
        out = model(input_ids=ctx, use_cache=True, **{name: cache})
        last = out.logits[:, -1, :]
        scores: list[float] = []
        for cont in item.continuations:
            if not cont:
                scores.append(0.0)
                continue
            ids = torch.tensor([cont], device=device)
            step = model(input_ids=ids, use_cache=True, **{name: cache})
            logits = torch.cat([last[:, None, :], step.logits[:, :-1, :]], dim=1)
            scores.append(float(_gather(torch, logits, ids).sum()))
            cache.crop(-len(cont))  # back to the context alone
    return scores


def score_padded(
    model: Any, items: Sequence[ScoreItem], device: str, batch_size: int = 16, pad_id: int = 0
) -> list[list[float]]:
    """Scores of every item's continuations, as right-padded rows of batched forward passes.

    Args:
        model: a transformers causal LM.
        items: contexts and their continuations.
        device: where the model lives.
        batch_size: rows per forward pass.
        pad_id: token id used for padding (masked out).

    Returns:
        ``result[i][j]``: summed log-probability of continuation ``j`` of item ``i``.
    """
    import torch

    rows = [
        (i, j, it.context, c) for i, it in enumerate(items) for j, c in enumerate(it.continuations)
    ]
    out: list[list[float]] = [[0.0] * len(it.continuations) for it in items]
    for begin in range(0, len(rows), batch_size):
        chunk = rows[begin : begin + batch_size]
        width = max(len(ctx) + len(c) for _, _, ctx, c in chunk)
        ids = torch.full((len(chunk), width), pad_id, dtype=torch.long)
        mask = torch.zeros((len(chunk), width), dtype=torch.long)
        for r, (_, _, ctx, c) in enumerate(chunk):
            seq = ctx + c
            ids[r, : len(seq)] = torch.tensor(seq)
            mask[r, : len(seq)] = 1
        ids, mask = ids.to(device), mask.to(device)
        with torch.no_grad():
            logits = model(input_ids=ids, attention_mask=mask).logits
        for r, (i, j, ctx, c) in enumerate(chunk):
            if not c:
                continue
            start = len(ctx)
            pos = torch.arange(start - 1, start - 1 + len(c), device=device)
            target = ids[r, start : start + len(c)]
            out[i][j] = float(_gather(torch, logits[r, pos, :], target).sum())
    return out
