"""The static check's rules for C++ source held in a candidate's strings (``load_inline``).

Split from :mod:`upskills.verify.static` (2026-12-05) when that passed 600 lines: a string
that looks like C++ is searched for calls that hand the work to a library, and for the APIs
that keep L2 lines across calls. Each rule answers ``(message, rule name)``.
"""

from __future__ import annotations

import re

CPP_MARKERS = re.compile(r"#include|__global__|torch::Tensor|extern\s+\"C\"|PYBIND11_MODULE")
"""A string literal with one of these is C++ source (for ``load_inline``)."""

CPP_LIBRARY_CALLS = re.compile(
    r"\b(?:cublas|cublasLt|cudnn|cufft|cusparse|cusolver)\w*"
    r"|\bat::native::|\bat::cuda::blas\b|\bdlopen\b|\bdlsym\b|\bdlfcn\.h\b|\bRTLD_\w+"
)
"""Calls in C++ source that hand the compute to a vendor library or ATen's native code, or
load code by name at run time (see :mod:`upskills.verify.libraries`)."""

CPP_L2_PERSISTENCE = re.compile(
    r"\b(?:accessPolicyWindow|\w*AccessPolicyWindow|\w*ACCESS_POLICY_WINDOW|\w*PersistingL2\w*"
    r"|\w*PERSISTING_L2\w*"
    r"|cudaAccessPropertyPersisting|CU_ACCESS_PROPERTY_PERSISTING)\b"
)
"""C++ that sets lines of L2 aside for given addresses (an access policy window, the persisting
L2 limit): they outlive the judge's L2 flush between timed calls, so a kernel would read its
inputs from L2 when timed and be credited with bandwidth it does not have. A single call gains
nothing from it; only repeated calls on the same buffers do, which is the timer's loop."""


def cpp_issues(text: str) -> list[tuple[str, str]]:
    """``(message, rule)`` for each C++ rule ``text`` breaks; none unless it is C++ source."""
    if not CPP_MARKERS.search(text):
        return []
    out: list[tuple[str, str]] = []
    if found := CPP_LIBRARY_CALLS.search(text):
        out.append(
            (
                f"(b) the C++ source calls {found.group(0).strip()!r}: a library doing the "
                "work is not the candidate's kernel",
                "vendor_library",
            )
        )
    if kept := CPP_L2_PERSISTENCE.search(text):
        out.append(
            (
                f"(d) the C++ source uses {kept.group(0)!r}: L2 lines set aside across calls "
                "outlive the L2 flush between timed calls",
                "l2_persistence",
            )
        )
    return out
