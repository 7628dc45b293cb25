from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.distill.tracegen import (
    ROW_SUM_MASKED,
    ROW_SUM_TAIL_DROPPED,
    ROW_SUM_TUNED,
    verdict,
    write_trace,
)
from upskills.distill import DistillConfig, DistillError, distill
from upskills.skills.pack import load_pack, resolve_pack, validate_pack, versions
from upskills.skills.tokens import (
    COMPACT_TOKEN_BUDGET,
    SKILL_TOKEN_BUDGET,
    count_tokens,
    estimate_tokens,
)


@pytest.fixture(scope="module")
def row_sum_hash() -> str:
    from upskills.tasks import load_task

    return load_task("row_sum").hash


def _fix_trace(path: Path, task_hash: str, trace_id: str) -> None:
    write_trace(
        path,
        [
            (ROW_SUM_TAIL_DROPPED, verdict(ROW_SUM_TAIL_DROPPED, False, task_hash=task_hash)),
            (
                ROW_SUM_MASKED,
                verdict(ROW_SUM_MASKED, True, task_hash=task_hash, speedup=1.1, gpu="H200"),
            ),
            (
                ROW_SUM_TUNED,
                verdict(ROW_SUM_TUNED, True, task_hash=task_hash, speedup=1.9, gpu="H200"),
            ),
        ],
        trace_id=trace_id,
    )


@pytest.fixture
def traces(tmp_path, row_sum_hash) -> Path:
    folder = tmp_path / "traces"
    for i in range(3):
        _fix_trace(folder / f"t{i}.jsonl", row_sum_hash, f"{i:032x}")
    write_trace(
        folder / "unsolved.jsonl",
        [(ROW_SUM_TAIL_DROPPED, verdict(ROW_SUM_TAIL_DROPPED, False, task_hash=row_sum_hash))],
        trace_id="f" * 32,
    )
    return folder


def _tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_distill_writes_valid_packs_with_provenance(traces, tmp_path):
    result = distill([traces], tmp_path / "skills", tmp_path / "cases")
    assert (result.traces_read, result.traces_selected) == (4, 3)
    names = [p.name for p in result.packs]
    assert names == ["gpu-memory-access", "gpu-reductions", "gpu-launch-tuning"]
    for outcome in result.packs:
        assert outcome.change == "created" and outcome.version == "1.0.0"
        assert validate_pack(outcome.path) == []
        run = subprocess.run(
            [str(Path(sys.executable).parent / "agentskills"), "validate", str(outcome.path)],
            capture_output=True,
            text=True,
        )
        assert run.returncode == 0, run.stdout + run.stderr
    mem = load_pack(tmp_path / "skills" / "gpu-memory-access")
    assert mem.version == "1.0.0"
    assert mem.frontmatter["metadata"]["traces"] == "3"
    prov = mem.provenance
    assert prov is not None
    assert [t.trace_id for t in prov.traces] == [f"{i:032x}" for i in range(3)]
    assert all(len(t.sha256) == 16 and t.file.endswith(".jsonl") for t in prov.traces)
    assert prov.distiller.startswith("upskills-distill ")
    assert "distill_case" in prov.prompts
    assert str(tmp_path) not in (mem.path / "references" / "provenance.json").read_text()
    pitfalls = mem.body.split("\n## Pitfalls")[1].split("\n## ")[0]
    assert "mismatch on ragged shapes -> fixed by mask ragged edges (3 traces)" in pitfalls
    assert "mask=cols < N" in pitfalls and f"`{0:032x}`" in pitfalls
    assert (mem.path / "scripts" / "row_sum_kernel.py").read_text().endswith(ROW_SUM_TUNED)
    tune = load_pack(tmp_path / "skills" / "gpu-launch-tuning")
    assert "### Launch configuration: 1.10x -> 1.90x eager, H200 (isolated)" in tune.body
    assert "Final kernels using it" not in tune.body


def test_budgets_hold(traces, tmp_path):
    distill([traces], tmp_path / "skills", None)
    for pack_dir in sorted((tmp_path / "skills").iterdir()):
        if pack_dir.name.startswith("."):
            continue
        skill = (pack_dir / "SKILL.md").read_text()
        compact = (pack_dir / "references" / "compact.md").read_text()
        assert estimate_tokens(skill) <= SKILL_TOKEN_BUDGET
        assert estimate_tokens(compact) <= COMPACT_TOKEN_BUDGET
        assert count_tokens(skill)[0] <= SKILL_TOKEN_BUDGET
        assert count_tokens(compact)[0] <= COMPACT_TOKEN_BUDGET
        assert compact.strip()


def test_redistilling_is_byte_identical_and_order_independent(traces, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    distill([traces], a, None)
    again = distill([traces], a, None)
    assert {p.change for p in again.packs} == {"unchanged"}
    files = sorted(traces.glob("*.jsonl"), reverse=True)
    distill(files, b, None)
    assert _tree(a) == _tree(b)
    assert not [p for p in a.iterdir() if p.name.startswith(".staging")]


def test_adding_a_trace_bumps_minor_version_and_diff_shows_new_evidence(
    traces, tmp_path, row_sum_hash
):
    from click.testing import CliRunner

    from upskills._cli.main import main

    skills = tmp_path / "skills"
    distill([traces], skills, None)
    _fix_trace(traces / "t9.jsonl", row_sum_hash, "9" * 32)
    result = distill([traces], skills, None)
    mem = next(p for p in result.packs if p.name == "gpu-memory-access")
    assert (mem.change, mem.version) == ("minor", "1.1.0")
    assert versions("gpu-memory-access", skills) == ["1.0.0", "1.1.0"]
    old = resolve_pack("gpu-memory-access@1.0.0", skills)
    assert old.frontmatter["metadata"]["traces"] == "3"
    assert resolve_pack("gpu-memory-access", skills).frontmatter["metadata"]["traces"] == "4"
    out = CliRunner().invoke(
        main,
        [
            "skills",
            "diff",
            "gpu-memory-access@1.0.0",
            "gpu-memory-access@1.1.0",
            "--skills-dir",
            str(skills),
        ],
    )
    assert out.exit_code == 0, out.output
    assert "traces added:\n  + " + "9" * 32 in out.output
    assert "~ fix-masking-mismatch-ragged: 3 -> 4 traces" in out.output
    assert '-  traces: "3"' in out.output and '+  traces: "4"' in out.output
    val = CliRunner().invoke(main, ["skills", "validate", str(skills)])
    assert val.exit_code == 0, val.output


def test_single_trace_lessons_go_to_references_unless_configured(tmp_path, row_sum_hash):
    _fix_trace(tmp_path / "t" / "one.jsonl", row_sum_hash, "1" * 32)
    distill([tmp_path / "t"], tmp_path / "s1", None)
    body = (tmp_path / "s1" / "gpu-memory-access" / "SKILL.md").read_text()
    refs = (tmp_path / "s1" / "gpu-memory-access" / "references" / "lessons.md").read_text()
    assert "mismatch on ragged shapes -> fixed" not in body
    assert "mismatch on ragged shapes -> fixed" in refs and "references only" in refs
    distill([tmp_path / "t"], tmp_path / "s2", None, DistillConfig(min_prevalence=1))
    body = (tmp_path / "s2" / "gpu-memory-access" / "SKILL.md").read_text()
    assert "mismatch on ragged shapes -> fixed" in body


def test_group_by_domain_and_single_named_pack(traces, tmp_path):
    r = distill([traces], tmp_path / "d", None, DistillConfig(group="domain"))
    assert [p.name for p in r.packs] == ["gpu-reduction-kernels"]
    r = distill([traces], tmp_path / "n", None, DistillConfig(name="row-kernels"))
    assert [p.name for p in r.packs] == ["row-kernels"]
    assert validate_pack(tmp_path / "n" / "row-kernels") == []


@pytest.mark.parametrize("bad", ["Row_Kernels", "-x", "a--b", "x" * 65])
def test_invalid_name_is_a_clear_error(traces, tmp_path, bad):
    with pytest.raises(DistillError, match="not a valid skill name"):
        distill([traces], tmp_path / "s", None, DistillConfig(name=bad))
    assert not (tmp_path / "s").exists()


def test_missing_folder_and_empty_selection_are_clear_errors(traces, tmp_path):
    with pytest.raises(DistillError, match="no trace file or folder"):
        distill([tmp_path / "nope"], tmp_path / "s", None)
    with pytest.raises(DistillError, match=r"4 trace file\(s\) read, 0 selected"):
        distill([traces], tmp_path / "s", None, DistillConfig(min_speedup=50.0))
    assert not (tmp_path / "s").exists()


def test_malformed_traces_are_reported_and_skipped(traces, tmp_path):
    (traces / "junk.jsonl").write_text('{"event": "run_start"}\nnot json\n')
    result = distill([traces], tmp_path / "s", None)
    assert result.traces_selected == 3
    assert any("junk.jsonl:1:" in e for e in result.errors)
    assert any("junk.jsonl:2: not valid JSON" in e for e in result.errors)


def test_failure_leaves_nothing_half_written(traces, tmp_path, monkeypatch):
    import upskills.distill.pipeline as pipeline

    skills = tmp_path / "skills"
    distill([traces], skills, None)
    before = _tree(skills)
    shutil.copy(traces / "t0.jsonl", traces / "t5.jsonl")  # same evidence twice would not bump
    _fix_trace(
        traces / "t6.jsonl",
        load_pack(skills / "gpu-reductions").provenance.traces[0].task_hash,
        "6" * 32,
    )
    calls = []

    def failing(path):
        calls.append(path)
        return ["simulated failure"] if len(calls) == 2 else []

    monkeypatch.setattr(pipeline, "validate_pack", failing)
    with pytest.raises(DistillError, match="simulated failure"):
        distill([traces], skills, None)
    assert _tree(skills) == before
    assert sorted(p.name for p in skills.iterdir()) == [
        ".versions",
        "gpu-launch-tuning",
        "gpu-memory-access",
        "gpu-reductions",
    ]


def test_teacher_rewrite_is_validated_and_falls_back(traces, tmp_path):
    base = tmp_path / "base"
    distill([traces], base, None, DistillConfig(name="row-kernels"))
    body = load_pack(base / "row-kernels").body
    good = body.replace("## When to use", "Concise guidance for row kernels.\n\n## When to use")
    script = tmp_path / "teacher.json"
    script.write_text(json.dumps([good]))
    r = distill(
        [traces], tmp_path / "t1", None, DistillConfig(name="row-kernels", teacher=f"mock/{script}")
    )
    assert r.warnings == []
    rewritten = load_pack(tmp_path / "t1" / "row-kernels")
    assert rewritten.body.startswith("# ") and "Concise guidance for row kernels." in rewritten.body
    assert rewritten.provenance is not None
    assert rewritten.provenance.teacher == f"mock/{script}"
    assert "distill_rewrite" in rewritten.provenance.prompts
    bad = body.replace("mask=cols < N", "mask=cols <= N")  # a code block changed
    script.write_text(json.dumps([bad]))
    r = distill(
        [traces], tmp_path / "t2", None, DistillConfig(name="row-kernels", teacher=f"mock/{script}")
    )
    assert len(r.warnings) == 1 and "rejected: a code block was changed" in r.warnings[0]
    assert load_pack(tmp_path / "t2" / "row-kernels").body == body


def test_distill_cli(traces, tmp_path):
    from click.testing import CliRunner

    from upskills._cli.main import main

    run = CliRunner().invoke
    args = ["distill", str(traces), "--skills-dir", str(tmp_path / "s"), "--no-cases"]
    out = run(main, [*args, "--min-prevalence", "1", "--group", "domain"])
    assert out.exit_code == 0, out.output
    assert "4 traces read, 3 selected" in out.output
    assert "gpu-reduction-kernels@1.0.0 (created)" in out.output
    out = run(main, [*args, "--min-prevalence", "1", "--group", "domain"])
    assert "gpu-reduction-kernels@1.0.0 (unchanged)" in out.output
    out = run(main, [*args, "--name", "Not Valid"])
    assert out.exit_code == 1 and "is not a valid skill name" in out.output
    out = run(main, [*args, "--min-speedup", "99"])
    assert out.exit_code == 1 and "no lessons to distill" in out.output


def _practice(technique: str) -> object:
    from upskills.distill.lessons import Lesson

    return Lesson(id=f"practice-{technique}", kind="practice", technique=technique, intent="x")


def test_templates_show_most_of_the_pack_first_then_speed():
    from upskills.distill.pipeline import _Evidence, templates_by_merit
    from upskills.distill.render import Template

    ev = _Evidence()
    kernels = {  # task -> (speedup, techniques of its final kernel)
        "norm": (26.0, {"masking", "block_reduction"}),
        "gelu": (8.8, {"masking", "coalesced_access", "vectorized_memory"}),
        "cast": (2.7, {"masking", "vectorized_memory"}),
        "slow": (0.9, {"masking", "coalesced_access", "vectorized_memory"}),
    }
    for task, (speedup, techs) in kernels.items():
        ev.best[task] = Template(task, task, f"trace-{task}", "src", speedup)
        ev.template_techniques[task] = techs
    taught = [_practice(t) for t in ("masking", "coalesced_access", "vectorized_memory")]
    assert [t.task for t in templates_by_merit(taught, ev, 3)] == ["gelu", "cast", "norm"]
    assert [t.task for t in templates_by_merit([_practice("masking")], ev, 2)] == ["norm", "gelu"]


def test_a_kernel_is_the_template_of_one_pack_only():
    from upskills.distill.pipeline import _Evidence, template_homes, templates_by_merit
    from upskills.distill.render import Template

    ev = _Evidence()
    kernels = {  # a norm that stages its reduction in shared memory, a transpose, a gelu
        "norm": (11.8, {"masking", "block_reduction", "warp_shuffle", "shared_memory"}),
        "transpose": (2.7, {"masking", "shared_memory", "smem_padding"}),
        "gelu": (8.8, {"masking", "vectorized_memory"}),
    }
    for task, (speedup, techs) in kernels.items():
        ev.best[task] = Template(task, task, f"trace-{task}", "src", speedup)
        ev.template_techniques[task] = techs
    groups = {
        "gpu-reductions": [_practice(t) for t in ("block_reduction", "warp_shuffle")],
        "gpu-tiling": [_practice(t) for t in ("shared_memory", "smem_padding")],
        "gpu-memory-access": [_practice(t) for t in ("masking", "vectorized_memory")],
    }
    homes = template_homes(groups, ev)
    assert homes == {
        "norm": "gpu-reductions",
        "transpose": "gpu-tiling",
        "gelu": "gpu-memory-access",
    }
    tiling = {h for h, pack in homes.items() if pack == "gpu-tiling"}
    assert [t.task for t in templates_by_merit(groups["gpu-tiling"], ev, 2)] == [
        "transpose",
        "norm",
    ]  # without homes the norm kernel would be a tiling template too
    assert [t.task for t in templates_by_merit(groups["gpu-tiling"], ev, 2, tiling)] == [
        "transpose"
    ]


def test_a_confounded_change_goes_to_the_family_its_code_shows():
    from upskills.distill.lessons import Effect, Lesson
    from upskills.distill.pipeline import _confounded_family

    def confounded(*changes: str) -> Lesson:
        effect = Effect(attribution="confounded", changes=list(changes))
        return Lesson(
            id="perf-confounded-x", kind="perf", technique="confounded", intent="x", effect=effect
        )

    vec = confounded("const float4* w4 = reinterpret_cast<const float4*>(w);", "k<<<m, 256>>>(")
    assert _confounded_family(vec) == "memory-access"  # no technique added: float4 was there
    shfl = confounded("int i = __shfl_xor_sync(0xffffffffu, bi, o);", "if (lane == 0) out[r] = bi;")
    assert _confounded_family(shfl) == "reductions"
    assert _confounded_family(confounded("adds async_copy", "float4 v;")) == "tiling"
    assert _confounded_family(confounded('name="v2",', "k<<<m, 256>>>(")) == "launch-tuning"


def test_a_pack_written_again_after_retirement_continues_its_version_line(tmp_path):
    from upskills.distill.store import next_version

    skills = tmp_path / "skills"
    for old in ("1.0.0", "2.0.0"):
        archived = skills / ".versions" / "gpu-x" / old / "gpu-x"
        archived.mkdir(parents=True)
        (archived / "SKILL.md").write_text(f"archived {old}\n")
    version, change, files = next_version(skills / "gpu-x", lambda v: {"SKILL.md": v})
    assert (version, change, files) == ("3.0.0", "created", {"SKILL.md": "3.0.0"})
    fresh, _, _ = next_version(skills / "gpu-y", lambda v: {"SKILL.md": v})
    assert fresh == "1.0.0"
