"""``upskills distill --ablate --plan``: what an ablation still has to judge, judging nothing.

The plan must be what the ablation then really asks its judge for (the same walk, the same
"one episode, one GPU" rule), and it must leave the caches and the skills folder untouched.
"""

from __future__ import annotations

from click.testing import CliRunner

from tests.distill.test_ablation_gpus import AFTER, ALONE, BEFORE, FAST_WARPS, GpuTimer
from tests.distill.tracegen import verdict, write_trace
from upskills._cli.distill import cli
from upskills.distill import DistillConfig, distill
from upskills.distill.ablate import AblationCache
from upskills.distill.plan import ablation_plan, cache_gpus

TASK_HASH = "0" * 16  # tracegen's


def _trace(root):
    write_trace(
        root / "traces" / "t.jsonl",
        [
            (BEFORE, verdict(BEFORE, True, speedup=2.0, gpu="GPU A")),
            (AFTER, verdict(AFTER, True, speedup=5.0, gpu="GPU A")),
        ],
        task_origin="builtin",
    )
    return root / "traces"


def test_the_plan_is_what_the_ablation_then_judges(tmp_path):
    traces, cache = _trace(tmp_path), tmp_path / "a.jsonl"
    planned = ablation_plan([traces], [cache], "GPU A")
    assert [k.source for k in planned] == [BEFORE, AFTER, *ALONE]
    assert {(k.task, k.task_hash, k.backend) for k in planned} == {("row_sum", TASK_HASH, "triton")}
    assert not cache.exists()  # planning wrote no cache

    timer = GpuTimer("GPU A", FAST_WARPS)
    config = DistillConfig(ablate=True, ablation_cache=str(cache))
    result = distill([traces], tmp_path / "skills", None, config, timer)
    assert result.ablations == {"ablated": 1}
    assert timer.judged == [k.source for k in planned]
    assert ablation_plan([traces], [cache], "GPU A") == []
    # GPU A finished the episode: another GPU is not asked for it either
    assert ablation_plan([traces], [cache], "GPU B") == []


def test_the_plan_for_another_gpu_is_the_whole_unfinished_episode(tmp_path):
    traces, a = _trace(tmp_path), tmp_path / "a.jsonl"
    cache, timer = AblationCache(a), GpuTimer("GPU A", FAST_WARPS)
    for s in (BEFORE, AFTER, ALONE[0]):
        cache.measure(timer, "row_sum", TASK_HASH, s)
    before = a.read_bytes()
    assert [k.source for k in ablation_plan([traces], [a], "GPU A")] == [ALONE[1]]
    assert [k.source for k in ablation_plan([traces], [a], "GPU B")] == [BEFORE, AFTER, *ALONE]
    assert a.read_bytes() == before  # only read
    assert cache_gpus([a, tmp_path / "missing.jsonl"]) == ["GPU A"]


def test_the_cli_prints_a_table_a_gpu_and_writes_nothing(tmp_path):
    traces, a = _trace(tmp_path), tmp_path / "a.jsonl"
    cache, timer = AblationCache(a), GpuTimer("GPU A", FAST_WARPS)
    for s in (BEFORE, AFTER, ALONE[0]):
        cache.measure(timer, "row_sum", TASK_HASH, s)
    skills, own = tmp_path / "skills", tmp_path / "own.jsonl"
    args = [str(traces), "--skills-dir", str(skills), "--ablate", "--plan"]
    run = CliRunner().invoke(cli, [*args, "--ablation-cache", str(own), "--ablation-read", str(a)])
    assert run.exit_code == 0, run.output
    assert "left to judge on GPU A" in run.output
    rows = [line.split("│")[1:5] for line in run.output.splitlines() if line.startswith("│")]
    assert [[c.strip() for c in r] for r in rows] == [
        ["row_sum", "1", "0", "1"],
        ["all", "1", "0", "1"],
    ]
    assert not skills.exists() and not own.exists()

    named = CliRunner().invoke(cli, [*args, "--ablation-read", str(a), "--gpu", "GPU B"])
    assert named.exit_code == 0, named.output
    assert "left to judge on GPU B" in named.output and "GPU A" not in named.output
    assert "│ all " in named.output and "│ 4 " in named.output

    fresh = CliRunner().invoke(cli, args)  # no cache at all: any GPU
    assert fresh.exit_code == 0, fresh.output
    assert "any GPU (the caches name none)" in fresh.output

    for wrong in ([str(traces), "--plan"], [str(traces), "--ablate", "--gpu", "GPU B"]):
        bad = CliRunner().invoke(cli, wrong)
        assert bad.exit_code == 2 and "--plan goes with --ablate" in bad.output


def test_a_malformed_cache_is_named_and_nothing_is_planned(tmp_path):
    traces, bad = _trace(tmp_path), tmp_path / "bad.jsonl"
    bad.write_text('{"task": "row_sum"}\n')
    run = CliRunner().invoke(cli, [str(traces), "--ablate", "--plan", "--ablation-read", str(bad)])
    assert run.exit_code == 1
    assert f"{bad}:1: not a valid ablation Measurement" in run.output
    assert "left to judge" not in run.output
    assert bad.read_text() == '{"task": "row_sum"}\n'


def test_an_episode_whose_task_does_not_load_is_left_out_and_named(tmp_path):
    """The plan loads each task as the verifier would: an episode whose file is not here is in
    no plan (the ablation cannot judge it either) and its task is named with the reason."""
    from tests.tasks.kernelbench_files import SQUARE_MATMUL

    problem = tmp_path / "kb" / "1_Square_matmul.py"
    write_trace(
        tmp_path / "traces" / "t.jsonl",
        [
            (BEFORE, verdict(BEFORE, True, speedup=2.0, gpu="GPU A")),
            (AFTER, verdict(AFTER, True, speedup=5.0, gpu="GPU A")),
        ],
        task="1_Square_matmul",
        task_origin=str(problem),
    )
    traces, cache = tmp_path / "traces", tmp_path / "a.jsonl"
    unloadable: dict[str, str] = {}
    assert ablation_plan([traces], [cache], "GPU A", unloadable) == []
    assert list(unloadable) == [str(problem)] and "1_Square_matmul.py" in unloadable[str(problem)]
    run = CliRunner().invoke(
        cli, [str(traces), "--skills-dir", str(tmp_path / "s"), "--ablate", "--plan"]
    )
    assert run.exit_code == 0, run.output
    assert "0 kernels" in run.output and "not judgeable here" in run.output

    problem.parent.mkdir()
    problem.write_text(SQUARE_MATMUL, encoding="utf-8")
    unloadable.clear()
    planned = ablation_plan([traces], [cache], "GPU A", unloadable)
    assert [k.source for k in planned] == [BEFORE, AFTER, *ALONE] and unloadable == {}
    assert {k.task for k in planned} == {str(problem)}
