"""Generation groups (case, sample) units into the provider's batch size, and resumes cleanly."""

from __future__ import annotations

from types import SimpleNamespace


class BatchingProvider:
    """Answers every conversation with a kernel naming its prompt; records each batched call."""

    def __init__(self, batch_size: int) -> None:
        self.batch_size = batch_size
        self.calls: list[tuple[int, int | None]] = []  # (conversations, seed) per call

    def generate_batch(self, conversations, tools, params, n=1):
        self.calls.append((len(conversations), params.seed))
        usage = SimpleNamespace(input_tokens=3, output_tokens=5, cache_read_tokens=0)
        out = []
        for conv in conversations:
            text = f"```python\n# {conv[-1].content}\nclass ModelNew: pass\n```"
            out.append([SimpleNamespace(text=text, usage=usage, latency_s=0.5, stop_reason="end")])
        return out


def _manifest(tmp_path, n_cases: int):
    from upskills.lift.arms import Arm
    from upskills.lift.config import CaseInfo, LiftConfig, RunManifest
    from upskills.lift.student import student_from_dict
    from upskills.tasks.model import Task

    student = student_from_dict({"name": "s", "provider": "mock", "model": "m"})
    cases = [
        CaseInfo(
            id=f"c{i}",
            task=f"t{i}",
            task_hash=f"h{i}",
            split="heldout",
            prompt=f"write kernel {i}",
            task_def=Task(name=f"t{i}", statement="s", source="class Model: pass\n"),
            rung="write",
        )
        for i in range(n_cases)
    ]
    arms = [Arm(name="baseline", kind="baseline"), Arm(name="s@1", kind="inline", block="B")]
    manifest = RunManifest(
        config=LiftConfig(
            out=str(tmp_path), students=["s"], cases=["x"], evaluate=False, samples=2
        ),
        arms=arms,
        cases=cases,
        students=[student.model_dump(mode="json")],
        prompt_hashes={},
        token_counter="estimate:chars/4",
        created="2026-01-01T00:00:00+00:00",
        upskills_version="0.1.0",
    )
    return manifest, student


def test_units_fill_the_batch_and_each_record_keeps_its_calls_seed(tmp_path):
    from upskills.lift.generate import Generator, sample_seed
    from upskills.lift.store import GenerationRecord, read_records

    manifest, student = _manifest(tmp_path, n_cases=5)  # 5 cases x 2 samples x 2 arms = 20
    provider = BatchingProvider(batch_size=8)
    path = tmp_path / "generations.jsonl"
    assert Generator(manifest, student, provider, {}).run(path) == 20
    assert [n for n, _ in provider.calls] == [8, 8, 4]  # four units per call, then the rest
    records = read_records(path, GenerationRecord)
    assert len({r.key for r in records}) == 20
    first = [sample_seed(0, c, i) for c, i in (("c0", 0), ("c2", 0), ("c4", 0))]
    assert [seed for _, seed in provider.calls] == first
    by_key = {(r.case, r.sample, r.arm): r for r in records}
    assert by_key[("c1", 1, "s@1")].seed == first[0]  # the call's seed, not the unit's own
    assert by_key[("c3", 0, "baseline")].seed == first[1]
    # each response went back to the conversation that asked for it
    assert all(f"write kernel {r.case[1:]}" in (r.kernel_source or "") for r in records)


def test_a_resumed_run_generates_only_what_is_missing(tmp_path):
    from upskills.lift.generate import Generator

    manifest, student = _manifest(tmp_path, n_cases=3)
    path = tmp_path / "generations.jsonl"
    assert Generator(manifest, student, BatchingProvider(batch_size=4), {}).run(path) == 12
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:5]) + "\n")  # a run killed after five records
    provider = BatchingProvider(batch_size=4)
    assert Generator(manifest, student, provider, {}).run(path) == 7
    assert sum(n for n, _ in provider.calls) == 7
    assert len(path.read_text().splitlines()) == 12
