"""Names the tests import from ``upskills`` exist, GPU tests' included.

GPU tests never run in CI, so an import inside one of them that names a function since moved
or removed only fails on a device: the 2026-12-03 run lost two GPU tests so. This reads every
test module's ``from upskills... import ...`` (at the top and inside functions) and looks the
names up, without running the tests.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

TESTS = Path(__file__).parent


def _imports() -> list[tuple[str, int, str, str]]:
    found: list[tuple[str, int, str, str]] = []
    for path in sorted(TESTS.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                if node.module == "upskills" or node.module.startswith("upskills."):
                    rel = path.relative_to(TESTS).as_posix()
                    found += [(rel, node.lineno, node.module, a.name) for a in node.names]
    return found


def test_the_scan_finds_the_gpu_tests_imports():
    where = {(f, m, n) for f, _, m, n in _imports()}
    assert ("verify/test_gpu.py", "upskills.verify.sandbox", "sandbox_user_differs") in where


def _missing(module: str, name: str) -> str | None:
    """Why ``from module import name`` fails, or None (also when a third-party need is absent)."""
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        if (exc.name or "").startswith("upskills"):
            return f"{module} does not import: {exc}"
        return None  # needs a package not installed here (ray, ...): its tests skip too
    if name == "*" or hasattr(mod, name):
        return None
    try:
        importlib.import_module(f"{module}.{name}")
    except ModuleNotFoundError:
        return f"{module} has no {name}"
    return None


def test_every_name_the_tests_import_exists():
    missing = [
        f"{path}:{line}: {why}"
        for path, line, module, name in _imports()
        if (why := _missing(module, name)) is not None
    ]
    assert not missing, "\n".join(missing)


def test_a_removed_name_is_reported():
    assert _missing("upskills.verify.verifier", "sandbox_user_differs") is not None
    assert _missing("upskills.verify.sandbox", "sandbox_user_differs") is None
