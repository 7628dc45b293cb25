"""The kernel hash: how every artifact names a kernel source."""

from __future__ import annotations

import hashlib

KERNEL_HASH_CHARS = 16
"""Hex characters kept of the sha256."""


def kernel_hash(source: str) -> str:
    """sha256 of a kernel's source text, first 16 hex characters.

    The verifier's ``candidate_hash``, a trace's ``kernel_hash`` and a lift sample's kernel
    hash are all this value, so one kernel is one hash across traces, verdicts and reports.
    """
    return hashlib.sha256(source.encode()).hexdigest()[:KERNEL_HASH_CHARS]
