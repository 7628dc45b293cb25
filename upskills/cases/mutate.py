"""Known bug classes applied to a verified kernel, one line at a time.

Each mutation rewrites a single line of a kernel that passed the verifier, so the wrong variant
differs from the correct one in a minimal span (what the ``choose`` rung scores, the line the
``fill`` rung removes, the bug the ``repair`` rung asks to fix). A mutation only *proposes* a
wrong kernel: the verifier labels it, and a mutant that still passes is dropped by the caller.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Mutant:
    """A one-line change to a kernel."""

    bug: str
    """Bug class (``drop_store_mask``, ``cdiv_floor``...)."""
    line: int
    """0-based index of the changed line."""
    correct_line: str
    """The line as it was (verified)."""
    wrong_line: str
    """The line as mutated."""
    source: str
    """The whole mutated kernel."""


def _sub(pattern: str, repl: str) -> Callable[[str], str | None]:
    rx = re.compile(pattern)

    def apply(line: str) -> str | None:
        new = rx.sub(repl, line, count=1)
        return new if new != line else None

    return apply


def _drop_kwarg(name: str, call: str) -> Callable[[str], str | None]:
    rx = re.compile(rf",\s*{name}=[^,()]+(\([^()]*\))?")

    def apply(line: str) -> str | None:
        if call not in line:
            return None
        new = rx.sub("", line, count=1)
        return new if new != line else None

    return apply


BUGS: dict[str, Callable[[str], str | None]] = {
    "drop_store_mask": _drop_kwarg("mask", "tl.store("),
    "drop_load_mask": lambda line: (
        re.sub(r",\s*mask=[^,()]+(,\s*other=[^()]*(\([^()]*\))?)?", "", line, count=1)
        if "tl.load(" in line and "mask=" in line
        else None
    ),
    "mask_off_by_one": _sub(r"(mask\s*=.*?) < ", r"\1 <= "),
    "cdiv_floor": _sub(r"triton\.cdiv\(([^,()]+),\s*([^()]+?)\)", r"(\1) // \2"),
    "wrong_reduction_axis": _sub(r"axis=(0|1)\b", "axis=AXIS"),
    "no_max_subtraction": _sub(
        r"tl\.exp\(([A-Za-z_][A-Za-z_0-9]*) - [A-Za-z_][A-Za-z_0-9.()]*\)", r"tl.exp(\1)"
    ),
    "fp16_accumulation": _sub(r"tl\.float32", "tl.float16"),
    "wrong_padding": _sub(r"other=-float\(\"inf\"\)", "other=0.0"),
    "int32_row_offset": _sub(r"\.to\(tl\.int64\)", ""),
    "stride_ignored": _sub(r"\* stride_[a-z0-9_]+", "* BLOCK"),
}
"""Bug class -> a function rewriting one line (None when the line does not apply)."""


def _fix_axis(line: str) -> str:
    m = re.search(r"axis=AXIS", line)
    if m is None:
        return line
    return line  # replaced by the caller (needs the original axis)


def mutants(
    source: str, bugs: dict[str, Callable[[str], str | None]] | None = None
) -> list[Mutant]:
    """Every single-line mutant of ``source``, one per (bug class, line) that applies.

    Args:
        source: a kernel module that passed the verifier.
        bugs: bug classes to apply (default: all of :data:`BUGS`).

    Returns:
        Mutants in line order; lines inside the ``ModelNew`` class and the kernel alike.
    """
    lines = source.split("\n")
    out: list[Mutant] = []
    for bug, apply in (bugs or BUGS).items():
        for i, line in enumerate(lines):
            if line.lstrip().startswith(("#", '"""')):
                continue
            new = apply(line)
            if new is None:
                continue
            if bug == "wrong_reduction_axis":
                old = re.search(r"axis=(0|1)\b", line)
                new = new.replace("axis=AXIS", f"axis={1 - int(old.group(1))}" if old else "axis=0")
            if new == line:
                continue
            mutated = lines[:i] + [new] + lines[i + 1 :]
            out.append(Mutant(bug, i, line, new, "\n".join(mutated)))
    return sorted(out, key=lambda m: (m.line, m.bug))
