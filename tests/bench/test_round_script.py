"""The live corpus's round script (benchmarks/corpus_live/round.py): its round files and its
dry run off the GPU, which must never write into the sessions it names."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def load_script(name: str):
    """``benchmarks/corpus_live/<name>.py`` as a module."""
    spec = importlib.util.spec_from_file_location(
        f"corpus_{name}", ROOT / "benchmarks" / "corpus_live" / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def _session(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "state.json").write_text(json.dumps({"task": {"name": "row_sum"}}))
    (folder / "trace.jsonl").write_text('{"event": "run_start"}\n')
    return folder


def test_round_file_is_parsed_and_bad_lines_are_named(tmp_path):
    mod = load_script("round")
    a = _session(tmp_path / "a")
    good = tmp_path / "r.txt"
    good.write_text(f"# a comment\n{a} check, benchmark,end  # trailing\n\n")
    (item,) = mod.parse_round(good)
    assert (item.folder, item.tools) == (str(a), ["check", "benchmark", "end"])
    bad = tmp_path / "bad.txt"
    bad.write_text(f"{a} check,bench\n")
    with pytest.raises(SystemExit, match=r"bad.txt:1: tools must be among"):
        mod.parse_round(bad)
    missing = tmp_path / "missing.txt"
    missing.write_text(f"{tmp_path / 'nope'} check\n")
    with pytest.raises(SystemExit, match="not a session folder"):
        mod.parse_round(missing)


def test_a_dry_run_works_on_copies_and_leaves_the_sessions_alone(tmp_path):
    mod = load_script("round")
    a, b = _session(tmp_path / "x" / "s1"), _session(tmp_path / "y" / "s1")  # same name twice
    items = [mod.Item(str(a), ["check", "end"]), mod.Item(str(b), ["check"])]
    copies = mod.scratch_copies(items)
    assert [c.tools for c in copies] == [["check", "end"], ["check"]]
    folders = [Path(c.folder) for c in copies]
    assert len(set(folders)) == 2 and all(f.parent == folders[0].parent for f in folders)
    assert not any(f.is_relative_to(tmp_path) for f in folders)
    (folders[0] / "trace.jsonl").write_text("changed\n")
    assert (a / "trace.jsonl").read_text() == '{"event": "run_start"}\n'
    assert (folders[1] / "state.json").read_text() == (b / "state.json").read_text()
