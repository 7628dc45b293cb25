"""What changed between two versions of a pack: evidence, lessons, and the text itself."""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field

from upskills.skills.pack import SkillPack
from upskills.core.markdown import sections


@dataclass
class PackDiff:
    """The differences between pack ``old`` and pack ``new``."""

    old: str
    new: str
    traces_added: list[str] = field(default_factory=list[str])
    traces_removed: list[str] = field(default_factory=list[str])
    lessons_added: list[str] = field(default_factory=list[str])
    lessons_removed: list[str] = field(default_factory=list[str])
    prevalence_changed: list[tuple[str, int, int]] = field(
        default_factory=list[tuple[str, int, int]]
    )
    files_added: list[str] = field(default_factory=list[str])
    files_removed: list[str] = field(default_factory=list[str])
    sections_added: list[str] = field(default_factory=list[str])
    sections_removed: list[str] = field(default_factory=list[str])
    sections_changed: list[str] = field(default_factory=list[str])
    text_diff: list[str] = field(default_factory=list[str])

    @property
    def empty(self) -> bool:
        """No difference at all."""
        return not (
            self.traces_added
            or self.traces_removed
            or self.lessons_added
            or self.lessons_removed
            or self.prevalence_changed
            or self.files_added
            or self.files_removed
            or self.sections_added
            or self.sections_removed
            or self.sections_changed
            or self.text_diff
        )

    def render(self) -> str:
        """Human-readable summary followed by the unified diff of SKILL.md."""
        out = [f"{self.old} -> {self.new}"]
        for label, items in (
            ("traces added", self.traces_added),
            ("traces removed", self.traces_removed),
            ("lessons added", self.lessons_added),
            ("lessons removed", self.lessons_removed),
            ("files added", self.files_added),
            ("files removed", self.files_removed),
            ("sections added", self.sections_added),
            ("sections removed", self.sections_removed),
            ("sections changed", self.sections_changed),
        ):
            mark = "+" if "added" in label else "~" if "changed" in label else "-"
            out += [f"{label}:"] + [f"  {mark} {i}" for i in items]
            if not items:
                out.pop()
        if self.prevalence_changed:
            out.append("prevalence changed:")
            out += [f"  ~ {lid}: {a} -> {b} traces" for lid, a, b in self.prevalence_changed]
        if self.empty:
            out.append("no differences")
        return "\n".join(out + self.text_diff) + "\n"


def _traces(pack: SkillPack) -> dict[str, str]:
    prov = pack.provenance
    return {t.trace_id: t.describe() for t in prov.traces} if prov else {}


def _lessons(pack: SkillPack) -> dict[str, int]:
    path = pack.path / "references" / "lessons.json"
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return {item["id"]: int(item.get("prevalence", 1)) for item in data.get("lessons", [])}


def _sections(pack: SkillPack) -> dict[str, str]:
    """SKILL.md body sections by heading (Markdown-parsed), numbered when a title repeats."""
    out: dict[str, str] = {}
    for sec in sections(pack.body):
        key = sec.title or "(preamble)"
        n = 2
        while key in out:
            key, n = f"{sec.title or '(preamble)'} #{n}", n + 1
        out[key] = sec.text.strip()
    return out


def diff_packs(old: SkillPack, new: SkillPack) -> PackDiff:
    """Compare two packs (usually two versions of one skill).

    Returns:
        Traces and lessons added or removed, prevalence changes, files added or removed,
        SKILL.md sections added, removed or changed, and a unified diff of SKILL.md.
    """
    result = PackDiff(old=old.ref, new=new.ref)
    ta, tb = _traces(old), _traces(new)
    result.traces_added = [tb[k] for k in sorted(set(tb) - set(ta))]
    result.traces_removed = [ta[k] for k in sorted(set(ta) - set(tb))]
    la, lb = _lessons(old), _lessons(new)
    result.lessons_added = sorted(set(lb) - set(la))
    result.lessons_removed = sorted(set(la) - set(lb))
    result.prevalence_changed = [
        (k, la[k], lb[k]) for k in sorted(set(la) & set(lb)) if la[k] != lb[k]
    ]
    fa, fb = set(old.files()), set(new.files())
    result.files_added = sorted(fb - fa)
    result.files_removed = sorted(fa - fb)
    sa, sb = _sections(old), _sections(new)
    result.sections_added = [k for k in sb if k not in sa]
    result.sections_removed = [k for k in sa if k not in sb]
    result.sections_changed = [k for k in sb if k in sa and sa[k] != sb[k]]
    a_text = (old.path / "SKILL.md").read_text(encoding="utf-8").splitlines()
    b_text = (new.path / "SKILL.md").read_text(encoding="utf-8").splitlines()
    result.text_diff = list(
        difflib.unified_diff(
            a_text, b_text, f"{old.ref}/SKILL.md", f"{new.ref}/SKILL.md", lineterm=""
        )
    )
    return result
