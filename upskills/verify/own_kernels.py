"""The verifier's own Triton kernels, known by identity.

The candidate process's launch counter counts every Triton launch as the candidate's but for
the verifier's own kernels (the timing inputs' perturbation, the outputs' fingerprint). They
were marked by an attribute, ``_upskills_internal``, which a candidate could set on its own
kernel too: its launch then went uncounted, unguarded and, under the interpreter, never
compiled for sm_90 or checked against the interpreter's fingerprint (found 2026-12-06). So a
kernel is the verifier's own only if it is one of the objects :func:`mark_own` was given.
"""

from __future__ import annotations

from typing import Any

OWN: list[Any] = []
"""The verifier's own kernel objects (a handful; compared by identity)."""


def mark_own(kernel: Any) -> Any:
    """Record ``kernel`` as the verifier's own; returns it."""
    OWN.append(kernel)
    return kernel


def is_own(obj: Any) -> bool:
    """Whether ``obj`` is one of the verifier's own kernels (by identity, never by attribute)."""
    return any(obj is kernel for kernel in OWN)
