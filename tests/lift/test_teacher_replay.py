"""Acceptance sanity run: the teacher's own final kernels (from its traces, via distill and the
cases' ``known_good``) replayed through the mock provider score 100%; its failed first attempts,
fed to another arm, score 0%. The pipeline neither loses nor invents correct answers.
"""

import re

from tests.distill.tracegen import ROW_SUM_MASKED, ROW_SUM_TAIL_DROPPED, verdict, write_trace
from upskills.lift.config import LiftConfig
from upskills.lift.runner import run_lift
from upskills.report import write_report


def test_teacher_final_kernels_pass_and_failed_attempts_fail(tmp_path):
    from upskills.cases.model import load_cases
    from upskills.distill.pipeline import distill
    from upskills.llm import register_provider
    from upskills.llm.mock import MockProvider
    from upskills.tasks import load_task

    h = load_task("row_sum").hash
    traces = tmp_path / "traces"
    for i in range(2):
        write_trace(
            traces / f"t{i}.jsonl",
            [
                (ROW_SUM_TAIL_DROPPED, verdict(ROW_SUM_TAIL_DROPPED, False, task_hash=h)),
                (ROW_SUM_MASKED, verdict(ROW_SUM_MASKED, True, task_hash=h)),
            ],
            trace_id=f"{i:032x}",
        )
    result = distill([traces], tmp_path / "skills", tmp_path / "testcases")
    train = [c for c in load_cases(tmp_path / "testcases") if c.task == "row_sum"]
    assert train and all(c.split == "train" and c.known_good == ROW_SUM_MASKED for c in train)
    (tmp_path / "cases").mkdir()
    for c in train:
        src = next((tmp_path / "testcases").rglob(f"{c.id}.yaml"))
        (tmp_path / "cases" / src.name).write_text(src.read_text())
    known_good = {c.task: c.known_good for c in train}

    def answer(messages, tools):
        task = re.search(r"Task `(\w+)`", messages[1].content).group(1)
        kernel = known_good[task] if "<skill " in messages[0].content else ROW_SUM_TAIL_DROPPED
        return f"```python\n{kernel}```"

    register_provider("teacher-replay", lambda model, **kw: MockProvider(fn=answer))
    (tmp_path / "teacher.yaml").write_text("name: teacher\nprovider: teacher-replay\nmodel: x\n")
    out = tmp_path / "run"
    run_lift(
        LiftConfig(
            out=str(out),
            students=[str(tmp_path / "teacher.yaml")],
            skills=[str(tmp_path / "skills" / result.packs[0].name)],
            cases=[str(tmp_path / "cases")],
            arms=["baseline", "inline"],
            samples=2,
            allow_train=True,
            device="cpu",
            progress=False,
        )
    )
    report = write_report(out)
    arms = {a.kind: a for a in report.arms}
    assert arms["inline"].pass_at_k["1"] == 1.0 and arms["inline"].cases == len(train)
    assert arms["baseline"].pass_at_k["1"] == 0.0
    assert arms["baseline"].failures == {"mismatch": 2 * len(train)}
    assert report.splits == {"train": len(train)}
