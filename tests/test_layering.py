"""The import graph keeps its layers: a forbidden import anywhere in the library fails here.

Every ``import``/``from ... import`` statement counts, lazy ones inside functions and
``TYPE_CHECKING`` blocks included: a lazy import still makes the lower layer know the higher
one. See ``docs/design/seams.md`` for the layering.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import upskills

ROOT = Path(upskills.__file__).parent

# What each package may import from upskills, besides itself, the root ``upskills``
# (``__version__``), ``upskills._lazy`` and ``upskills.core`` (shared leaf definitions).
# A package missing here may import anything but ``upskills._cli``.
ALLOWED: dict[str, set[str]] = {
    "core": set(),
    "prompts": set(),
    "schemas": set(),
    "tasks": set(),
    "verify": {"tasks"},
    "trace": {"verify.verdict"},
    "llm": {"trace.events", "prompts"},
    "skills": {"llm.base", "prompts", "trace.events", "verify.verdict"},
    "executor": {"tasks", "verify", "trace", "agent"},
    "cases": {"tasks", "verify", "prompts", "skills", "executor"},
    "agent": {"llm", "prompts", "skills", "tasks", "trace", "verify"},
    "distill": {"cases", "llm", "prompts", "skills", "tasks", "trace", "verify", "agent"},
    "lift": {
        "agent", "cases", "distill", "llm", "prompts", "skills", "tasks", "trace", "verify",
        "executor",
    },
    "report": {"lift", "tasks", "trace", "verify", "skills", "cases"},
}  # fmt: skip

# Modules that form the trace schema: stdlib, pydantic and these upskills modules only.
SCHEMA_LEAVES = {
    "upskills.trace.events": {"upskills.verify.verdict"},
    "upskills.verify.verdict": set(),
}
THIRD_PARTY_OK = {"pydantic", "typing_extensions"}


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every absolute module a file imports (``from a.b import c`` gives ``a.b.c`` and ``a.b``)."""
    tree = ast.parse(path.read_text("utf-8"), str(path))
    out: list[tuple[int, str]] = []
    pkg = _module_name(path).rsplit(".", 0 if path.name == "__init__.py" else 1)[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = pkg.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            out.append((node.lineno, base))
            out += [(node.lineno, f"{base}.{a.name}") for a in node.names]
    return out


def _library_files() -> list[Path]:
    return [
        p
        for p in sorted(ROOT.rglob("*.py"))
        if "_cli" not in p.relative_to(ROOT).parts
        and "builtin" not in p.parts
        and p.name != "__main__.py"  # ``python -m upskills`` is the CLI's entry point
    ]


def _allowed(target: str, allowed: set[str]) -> bool:
    rest = target.removeprefix("upskills.")
    return any(rest == a or rest.startswith(a + ".") for a in allowed)


def test_library_never_imports_the_cli():
    bad = [
        f"{p.relative_to(ROOT.parent)}:{line} imports {mod}"
        for p in _library_files()
        for line, mod in _imports(p)
        if mod == "upskills._cli" or mod.startswith("upskills._cli.")
    ]
    assert not bad, "library -> CLI imports:\n" + "\n".join(bad)


def test_packages_import_only_their_lower_layers():
    bad = []
    for p in _library_files():
        parts = p.relative_to(ROOT).parts
        if len(parts) < 2 or parts[0] not in ALLOWED:
            continue
        own = parts[0]
        allowed = ALLOWED[own] | {own, "_lazy", "core"}
        for line, mod in _imports(p):
            if not mod.startswith("upskills.") or mod == "upskills.__version__":
                continue
            if not _allowed(mod, allowed):
                bad.append(f"{p.relative_to(ROOT.parent)}:{line} ({own}) imports {mod}")
    assert not bad, "imports across layers:\n" + "\n".join(bad)


@pytest.mark.parametrize("module", sorted(SCHEMA_LEAVES))
def test_schema_modules_are_leaves(module):
    path = ROOT.parent / (module.replace(".", "/") + ".py")
    stdlib = sys.stdlib_module_names | {"__future__"}
    bad = []
    for line, mod in _imports(path):
        top = mod.split(".")[0]
        if top in stdlib or top in THIRD_PARTY_OK or mod == "upskills.__version__":
            continue
        if any(mod == ok or mod.startswith(ok + ".") for ok in SCHEMA_LEAVES[module]):
            continue
        if top == "upskills" and mod.rsplit(".", 1)[0] in SCHEMA_LEAVES[module]:
            continue  # ``from upskills.verify.verdict import Verdict``
        bad.append(f"{module}:{line} imports {mod}")
    assert not bad, "the trace schema must depend on pydantic only:\n" + "\n".join(bad)


def _loaded_after(stmt: str) -> set[str]:
    code = f"import sys; {stmt}; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    return set(out.split())


@pytest.mark.parametrize(
    ("stmt", "forbidden"),
    [
        ("import upskills.trace.events", {"upskills.verify.verifier", "upskills.tasks"}),
        ("import upskills.llm", {"upskills.verify.verifier", "upskills.verify.sandbox"}),
        ("import upskills.verify", {"upskills.verify.verifier", "upskills.tasks"}),
        ("import upskills.agent", {"upskills.verify.verifier", "upskills.llm.base"}),
        ("import upskills.distill", {"upskills.distill.pipeline"}),
        ("import upskills.trace", {"upskills.trace.reader", "upskills.verify.verifier"}),
        ("import upskills.lift", {"upskills.report", "upskills.lift.runner"}),
    ],
)
def test_package_faces_are_lazy(stmt, forbidden):
    loaded = _loaded_after(stmt)
    assert not loaded & forbidden
    heavy = {"torch", "triton", "transformers", "anthropic", "openai", "matplotlib", "mcp"}
    assert not loaded & heavy


def test_a_submodule_never_shadows_the_function_a_face_exports():
    code = (
        "import upskills.agent.teach, upskills.trace.redact, upskills.trace.writer\n"
        "from upskills.agent import teach\nfrom upskills.trace import redact\n"
        "assert callable(teach) and callable(redact), (teach, redact)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
