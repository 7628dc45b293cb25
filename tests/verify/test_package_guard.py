"""upskills' own files, rewritten by a candidate of the judge's user, are put back and fail it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from upskills.verify import CheckOptions, Verifier
from upskills.verify.package_guard import PackageSnapshot, package_root


def _tree(root: Path) -> None:
    (root / "verify" / "__pycache__").mkdir(parents=True)
    (root / "verify" / "judge.py").write_text("def judge():\n    return 'honest'\n")
    (root / "verify" / "data.json").write_text("{}\n")
    (root / "verify" / "__pycache__" / "judge.cpython-311.pyc").write_bytes(b"old")


def test_changed_deleted_and_added_sources_are_put_back(tmp_path):
    _tree(tmp_path)
    snap = PackageSnapshot(tmp_path)
    snap.refresh()
    assert snap.put_back() == []  # nothing changed
    (tmp_path / "verify" / "judge.py").write_text("def judge():\n    return 'pass'\n")
    (tmp_path / "verify" / "data.json").unlink()
    (tmp_path / "verify" / "planted.py").write_text("x = 1\n")
    assert snap.put_back() == ["verify/data.json", "verify/judge.py", "verify/planted.py"]
    assert (tmp_path / "verify" / "judge.py").read_text().endswith("'honest'\n")
    assert (tmp_path / "verify" / "data.json").read_text() == "{}\n"
    assert not (tmp_path / "verify" / "planted.py").exists()
    assert snap.put_back() == []  # the restored tree is the new normal


def test_bytecode_is_removed_when_it_appears_or_changes_but_never_blamed(tmp_path):
    _tree(tmp_path)
    snap = PackageSnapshot(tmp_path)
    snap.refresh()
    cache = tmp_path / "verify" / "__pycache__"
    (cache / "judge.cpython-311.pyc").write_bytes(b"planted bytecode, header of the source")
    (cache / "new.cpython-311.pyc").write_bytes(b"written by an import")
    assert snap.put_back() == []
    assert not (cache / "judge.cpython-311.pyc").exists()
    assert not (cache / "new.cpython-311.pyc").exists()


def test_a_source_replaced_by_a_link_is_not_written_through(tmp_path):
    _tree(tmp_path / "pkg")
    outside = tmp_path / "outside.py"
    outside.write_text("untouched\n")
    snap = PackageSnapshot(tmp_path / "pkg")
    snap.refresh()
    judge = tmp_path / "pkg" / "verify" / "judge.py"
    judge.unlink()
    os.symlink(outside, judge)
    assert snap.put_back() == ["verify/judge.py"]
    assert not judge.is_symlink() and judge.read_text().endswith("'honest'\n")
    assert outside.read_text() == "untouched\n"


PLANT = """
import glob, os, re, sys
import torch
import torch.nn as nn
import triton
import triton.language as tl

_name = "up" + "skills"
_site = os.path.dirname(os.path.dirname(torch.__file__))
_dirs = [os.path.join(p, _name) for p in sys.path if isinstance(p, str)]
for _f in glob.glob(os.path.join(_site, "__editable__*finder.py")):
    _dirs += re.findall("'([^']+/" + _name + ")'", open(_f).read())
for _d in _dirs:
    if os.path.isfile(os.path.join(_d, "verify", "judge.py")):
        open(os.path.join(_d, "verify", "_planted_by_candidate.py"), "w").write("PLANTED = 1\\n")


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + tl.load(y_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x, y):
        out = torch.empty_like(x)
        n = x.numel()
        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        return out
"""


def test_a_candidate_that_plants_a_module_in_the_judge_fails_and_the_file_goes(
    add_task, monkeypatch, request
):
    """Found in review: an honest add that also wrote a module into upskills/verify passed."""
    planted = package_root() / "verify" / "_planted_by_candidate.py"
    request.addfinalizer(lambda: planted.unlink(missing_ok=True))
    if not os.access(package_root() / "verify", os.W_OK):
        pytest.skip("the package is not writable here: nothing to attack")
    monkeypatch.setenv("UPSKILLS_SANDBOX_USER", "none")  # the candidate runs as this user
    with Verifier("cpu", CheckOptions(seeds=1, timeout_s=300)) as verifier:
        verdict = verifier.check(add_task, PLANT)
    assert not verdict.passed and verdict.guard == "package_files", verdict.message
    assert "_planted_by_candidate.py" in verdict.message
    assert not planted.exists()


def test_a_source_made_read_only_is_still_put_back(tmp_path):
    _tree(tmp_path)
    snap = PackageSnapshot(tmp_path)
    snap.refresh()
    judge = tmp_path / "verify" / "judge.py"
    judge.write_text("def judge():\n    return 'pass'\n")
    judge.chmod(0o444)
    (tmp_path / "verify").chmod(0o555)
    try:
        assert snap.put_back() == ["verify/judge.py"]
        assert judge.read_text().endswith("'honest'\n")
    finally:
        (tmp_path / "verify").chmod(0o755)
