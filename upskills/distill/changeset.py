"""Split one attempt -> attempt diff into its separate changes, and rebuild partial kernels.

A teacher's next attempt often changes several things at once (bigger tiles, more warps, an
alignment hint, clamped offsets). To say which change bought the speed, the diff is split into
*changes* that can be applied one at a time:

1. ``difflib`` finds the line hunks between the two sources;
2. hunks that must go together are grouped: a name bound in one hunk and used in another (and
   absent from the other kernel), a function whose signature changed with the hunks that call
   it, the hunks of a CUDA/C++ source held in a string that mention the same identifier new to
   ``after`` (or gone from it), and any hunk that does not parse when applied alone (merged with
   its neighbour until the partial kernel parses);
3. changes to comments and docstrings only are dropped (they change no code);
4. each change is described by what it does: techniques it adds or removes
   (``analyze_kernel`` of ``before`` + that change alone) and the sizes it retunes
   (``num_warps 4 -> 8``, ``BLOCK_M 64 -> 128``).

``apply_changes(before, after, changes)`` builds the intermediate kernel with only the given
changes applied. Whether that kernel is *correct* is for the verifier to say (``ablate.py``);
this module only guarantees that it parses.
"""

from __future__ import annotations

import ast
import difflib
import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from upskills.distill.changes import change_key, code_lines
from upskills.distill.techniques import analyze_kernel

MAX_HUNKS = 24
"""Above this many hunks a diff is a rewrite: it is kept as one change."""

SIZE_NAMES = re.compile(r"^(?:num_warps|num_stages|BLOCK\w*|TILE\w*|GROUP\w*|VEC\w*|\w*_SIZE)$")
"""Names whose value is a launch or tile size (a retune, not new code)."""

_ASSIGN_NUM = re.compile(r"\b(\w+)\s*[=:]\s*(?:tl\.constexpr\s*=\s*)?(\d+)\b")


@dataclass(frozen=True)
class Hunk:
    """One ``difflib`` opcode that differs: before lines ``[a0, a1)`` became after ``[b0, b1)``."""

    a0: int
    a1: int
    b0: int
    b1: int


@dataclass(frozen=True)
class Change:
    """A set of hunks applied together, and what they do."""

    index: int
    """Position of the change in the diff (0-based)."""
    hunks: tuple[Hunk, ...]
    """The hunks it is made of."""
    removed: tuple[str, ...]
    """Lines of ``before`` it removes."""
    added: tuple[str, ...]
    """Lines of ``after`` it adds."""
    techniques_added: tuple[str, ...]
    """Techniques the kernel gains with this change alone."""
    techniques_removed: tuple[str, ...]
    """Techniques the kernel loses with this change alone."""
    retunes: tuple[str, ...]
    """Sizes it retunes (``num_warps 4 -> 8``)."""
    key: str
    """Hash of the code it removes and adds (formatting and comments ignored)."""

    @property
    def techniques(self) -> tuple[str, ...]:
        """What the change is about: techniques it adds, else ``launch_config`` for a retune."""
        if self.techniques_added:
            return self.techniques_added
        return ("launch_config",) if self.retunes else ()

    @property
    def summary(self) -> str:
        """One line: ``adds vectorized_memory; num_warps 4 -> 8`` or the first changed line."""
        tuning = ("launch_config", "autotune") if self.retunes else ()
        parts = [f"adds {t}" for t in self.techniques_added if t not in tuning]
        parts += [f"drops {t}" for t in self.techniques_removed]
        parts += list(self.retunes)
        if parts:
            return "; ".join(parts)
        line = next((s.strip() for s in self.added if s.strip()), "")
        if not line:
            line = "removes " + next((s.strip() for s in self.removed if s.strip()), "lines")
        return line if len(line) <= 80 else line[:77] + "..."


def _hunks(a: Sequence[str], b: Sequence[str]) -> list[Hunk]:
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return [Hunk(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def _apply(a: Sequence[str], b: Sequence[str], hunks: Iterable[Hunk]) -> str:
    out: list[str] = []
    pos = 0
    for h in sorted(hunks, key=lambda h: h.a0):
        out += a[pos : h.a0]
        out += b[h.b0 : h.b1]
        pos = h.a1
    out += a[pos:]
    return "\n".join(out) + "\n"


def apply_changes(before: str, after: str, changes: Iterable[Change]) -> str:
    """``before`` with only ``changes`` (from ``split_changes(before, after)``) applied."""
    a, b = before.splitlines(), after.splitlines()
    return _apply(a, b, [h for c in changes for h in c.hunks])


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
    except SyntaxError:
        return False
    return True


def _bindings(tree: ast.AST) -> tuple[dict[str, set[int]], dict[str, set[int]]]:
    """Name -> lines where it is bound, and name -> lines where it is read."""
    bound: dict[str, set[int]] = {}
    used: dict[str, set[int]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            target = bound if isinstance(node.ctx, ast.Store) else used
            target.setdefault(node.id, set()).add(node.lineno)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            bound.setdefault(node.name, set()).add(node.lineno)
        elif isinstance(node, ast.arg):
            bound.setdefault(node.arg, set()).add(node.lineno)
        elif isinstance(node, ast.Import | ast.ImportFrom):  # `import a.b` binds `a`
            for alias in node.names:
                name = alias.asname or alias.name.split(".")[0]
                lines = range(node.lineno, (node.end_lineno or node.lineno) + 1)
                bound.setdefault(name, set()).update(lines)
    return bound, used


def _signatures(tree: ast.AST) -> dict[str, tuple[int, str]]:
    return {
        n.name: (n.lineno, ast.unparse(n.args))
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef)
    }


def _call_lines(tree: ast.AST, name: str) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func.value if isinstance(node.func, ast.Subscript) else node.func
            if isinstance(func, ast.Name) and func.id == name:
                lines |= set(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return lines


class _Groups:
    """Union-find over hunk indices."""

    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, i: int, j: int) -> None:
        ri, rj = self.find(i), self.find(j)
        if ri != rj:
            self.parent[max(ri, rj)] = min(ri, rj)

    def groups(self) -> list[list[int]]:
        out: dict[int, list[int]] = {}
        for i in range(len(self.parent)):
            out.setdefault(self.find(i), []).append(i)
        return sorted(out.values())


def _owner(hunks: Sequence[Hunk], line: int, side: str) -> int | None:
    """Index of the hunk whose (1-based) ``line`` on ``side`` (``a`` or ``b``) it rewrites."""
    for i, h in enumerate(hunks):
        lo, hi = (h.a0, h.a1) if side == "a" else (h.b0, h.b1)
        if lo < line <= hi:
            return i
    return None


def _link_names(hunks: Sequence[Hunk], mine: ast.AST, other: ast.AST, side: str, g: _Groups):
    """Join hunks that bind a name the other kernel lacks with the hunks that read it."""
    bound, used = _bindings(mine)
    other_bound, _ = _bindings(other)
    for name, lines in bound.items():
        if name in other_bound:
            continue
        owners = {o for ln in lines if (o := _owner(hunks, ln, side)) is not None}
        owners |= {o for ln in used.get(name, ()) if (o := _owner(hunks, ln, side)) is not None}
        for o in sorted(owners)[1:]:
            g.union(min(owners), o)


_IDENT = re.compile(r"\b[A-Za-z_]\w*\b")
_CPP_COMMENT = re.compile(r"//.*$|/\*.*?\*/")


def _words(line: str) -> set[str]:
    """Identifiers of a line of C++ (its ``//`` and one-line ``/* */`` comments left out)."""
    return set(_IDENT.findall(_CPP_COMMENT.sub("", line)))


def _string_lines(tree: ast.AST) -> set[int]:
    """1-based lines of a multi-line string constant: the C++ a ``load_inline`` module holds."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            end = node.end_lineno or node.lineno
            if end > node.lineno:
                out |= set(range(node.lineno, end + 1))
    return out


def _link_string_words(
    a: Sequence[str], b: Sequence[str], hunks: Sequence[Hunk], tb: ast.AST, ta: ast.AST, g: _Groups
) -> None:
    """Join the hunks of C++ in strings that mention one identifier new to ``after`` or gone.

    A helper added in one hunk and called in another, or one removed in one hunk and its calls
    in another. Python's names are linked from its syntax tree; C++ in a string is only text to
    it, and the 2026-12-04 nvcc prescreen found CUDA intermediates failing on ``identifier
    "gelu_erf" is undefined``: the helper's hunk and its caller's, apart.
    """
    in_b, in_a = _string_lines(ta), _string_lines(tb)
    before_words = set().union(*(_words(line) for line in a)) if a else set()
    after_words = set().union(*(_words(line) for line in b)) if b else set()
    new, gone = after_words - before_words, before_words - after_words
    owners: dict[tuple[str, str], set[int]] = {}
    for i, h in enumerate(hunks):
        for ln in range(h.b0, h.b1):
            if ln + 1 in in_b:
                for word in _words(b[ln]) & new:
                    owners.setdefault(("+", word), set()).add(i)
        for ln in range(h.a0, h.a1):
            if ln + 1 in in_a:
                for word in _words(a[ln]) & gone:
                    owners.setdefault(("-", word), set()).add(i)
    for group in owners.values():
        for o in sorted(group)[1:]:
            g.union(min(group), o)


def _link_signatures(hunks: Sequence[Hunk], tb: ast.AST, ta: ast.AST, g: _Groups) -> None:
    """A function whose parameters changed goes with every changed call of it."""
    sb, sa = _signatures(tb), _signatures(ta)
    for name in sb.keys() & sa.keys():
        if sb[name][1] == sa[name][1]:
            continue
        owners = {o for o in (_owner(hunks, sa[name][0], "b"),) if o is not None}
        owners |= {o for ln in _call_lines(ta, name) if (o := _owner(hunks, ln, "b")) is not None}
        owners |= {o for ln in _call_lines(tb, name) if (o := _owner(hunks, ln, "a")) is not None}
        for o in sorted(owners)[1:]:
            g.union(min(owners), o)


def _merge_unparsable(a: list[str], b: list[str], hunks: Sequence[Hunk], g: _Groups) -> None:
    """Merge a group that does not parse alone with its neighbour until every group parses."""
    while True:
        groups = g.groups()
        if len(groups) <= 1:
            return
        bad = next(
            (grp for grp in groups if not _parses(_apply(a, b, [hunks[i] for i in grp]))), None
        )
        if bad is None:
            return
        k = groups.index(bad)
        neighbour = groups[k + 1] if k + 1 < len(groups) else groups[k - 1]
        g.union(bad[0], neighbour[0])


def _retunes(removed: Sequence[str], added: Sequence[str]) -> tuple[str, ...]:
    old = {m.group(1): m.group(2) for line in removed for m in _ASSIGN_NUM.finditer(line)}
    new = {m.group(1): m.group(2) for line in added for m in _ASSIGN_NUM.finditer(line)}
    out = [f"{k} {old[k]} -> {new[k]}" for k in sorted(old.keys() & new.keys()) if old[k] != new[k]]
    out += [f"{k}={new[k]} (new)" for k in sorted(new.keys() - old.keys())]
    return tuple(x for x in out if SIZE_NAMES.match(x.split()[0].split("=")[0]))


def split_changes(before: str, after: str) -> list[Change]:
    """The separate changes between two kernels (cached per pair of sources).

    Args:
        before: the earlier attempt's source.
        after: the later attempt's source.

    Returns:
        Changes in source order; each applied alone to ``before`` gives a module that parses.
        Empty when the sources are equal; one change when either does not parse or the diff
        has more than ``MAX_HUNKS`` hunks.
    """
    return list(_split(before, after))


@functools.lru_cache(maxsize=256)
def _split(before: str, after: str) -> tuple[Change, ...]:
    a, b = before.splitlines(), after.splitlines()
    hunks = _hunks(a, b)
    if not hunks:
        return ()
    g = _Groups(len(hunks))
    tb = ta = None
    if 1 < len(hunks) <= MAX_HUNKS:
        try:
            tb, ta = ast.parse(before), ast.parse(after)
        except SyntaxError:
            pass
    if tb is None or ta is None:
        for i in range(1, len(hunks)):
            g.union(0, i)
    else:
        _link_names(hunks, ta, tb, "b", g)
        _link_names(hunks, tb, ta, "a", g)
        _link_signatures(hunks, tb, ta, g)
        _link_string_words(a, b, hunks, tb, ta, g)
        _merge_unparsable(a, b, hunks, g)
    base = analyze_kernel(before)
    groups = g.groups()
    if len(groups) > 1:  # comment- and docstring-only changes change nothing
        code = code_lines(before)
        groups = [
            grp for grp in groups if code_lines(_apply(a, b, [hunks[i] for i in grp])) != code
        ] or groups
    out: list[Change] = []
    for index, group in enumerate(groups):
        hs = tuple(hunks[i] for i in group)
        removed = tuple(line for h in hs for line in a[h.a0 : h.a1])
        added = tuple(line for h in hs for line in b[h.b0 : h.b1])
        partial = after if len(hunks) == len(group) else _apply(a, b, hs)
        found = analyze_kernel(partial)
        out.append(
            Change(
                index=index,
                hunks=hs,
                removed=removed,
                added=added,
                techniques_added=tuple(t for t in found if t not in base),
                techniques_removed=tuple(t for t in base if t not in found),
                retunes=_retunes(removed, added),
                key=change_key("\n".join(removed), "\n".join(added)),
            )
        )
    return tuple(out)
