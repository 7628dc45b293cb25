"""Task families for the distiller: the one ``family_hash`` lives in ``upskills.cases.family``.

A held-out case must not be a sibling of a task that fed the skill: the fp16 softmax template
passes the fp32 softmax case unchanged. This module re-exports that hash and adds the
distiller's two set helpers; the hash is always recomputed from the source (never read from a
file), at distillation and at lift time.
"""

from __future__ import annotations

from collections.abc import Iterable

from upskills.cases.family import family_hash

__all__ = ["family_hash", "fed_families", "same_family"]


def fed_families(sources: Iterable[str]) -> set[str]:
    """Family hashes of the reference sources that fed a skill."""
    return {family_hash(s) for s in sources}


def same_family(case_source: str, fed: set[str]) -> bool:
    """Whether a case's reference (hash recomputed from its source) is in a fed family."""
    return family_hash(case_source) in fed
