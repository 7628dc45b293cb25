import pytest

from upskills.lift.store import (
    EvaluationRecord,
    GenerationRecord,
    RecordWriter,
    RunStoreError,
    read_records,
    sample_key,
)


def _gen(i: int) -> GenerationRecord:
    return GenerationRecord(
        key=sample_key("s", "baseline", "c", i),
        student="s",
        arm="baseline",
        case="c",
        task="t",
        split="heldout",
        sample=i,
        seed=i,
        prompt_hash="h",
    )


def test_append_read_and_skip_duplicates(tmp_path):
    path = tmp_path / "generations.jsonl"
    with RecordWriter(path) as w:
        assert w.write(_gen(0))
        assert w.write(_gen(1))
        assert not w.write(_gen(0))
    with RecordWriter(path, {r.key for r in read_records(path, GenerationRecord)}) as w:
        assert not w.write(_gen(1))
        assert w.write(_gen(2))
    recs = read_records(path, GenerationRecord)
    assert [r.sample for r in recs] == [0, 1, 2]
    assert len(path.read_text().splitlines()) == 3


def test_partial_last_line_is_ignored_then_cut(tmp_path):
    path = tmp_path / "generations.jsonl"
    with RecordWriter(path) as w:
        w.write(_gen(0))
    with path.open("a") as f:
        f.write('{"schema_version": 1, "kind": "generation", "key": "s/ba')  # killed mid-write
    assert [r.sample for r in read_records(path, GenerationRecord)] == [0]
    with RecordWriter(path, {"s/baseline/c/0"}) as w:
        w.write(_gen(1))
    assert [r.sample for r in read_records(path, GenerationRecord)] == [0, 1]
    assert "s/ba\n" not in path.read_text()


def test_bad_line_names_file_and_line(tmp_path):
    path = tmp_path / "evaluations.cpu.jsonl"
    good = EvaluationRecord(key="k", passed=True, device="cpu").model_dump_json()
    path.write_text(good + "\n" + '{"key": "k2", "passed": "maybe", "device": "cpu"}\n')
    with pytest.raises(
        RunStoreError, match=r"evaluations.cpu.jsonl:2: not a valid EvaluationRecord"
    ):
        read_records(path, EvaluationRecord)


def test_missing_file_reads_empty(tmp_path):
    assert read_records(tmp_path / "none.jsonl", GenerationRecord) == []


def test_the_check_salt_is_drawn_once_kept_private_and_checked(tmp_path):
    import stat

    from upskills.lift.evaluate import SALT_FILE, check_salt

    salt = check_salt(tmp_path)
    assert len(salt) == 64 and int(salt, 16) >= 0
    assert check_salt(tmp_path) == salt  # a resume reads it back
    assert stat.S_IMODE((tmp_path / SALT_FILE).stat().st_mode) == 0o600
    other = tmp_path / "other"
    other.mkdir()
    assert check_salt(other) != salt  # another run, another secret
    (tmp_path / SALT_FILE).write_text("0" * 63 + "\n")
    with pytest.raises(ValueError, match="not a check salt"):
        check_salt(tmp_path)


def test_a_units_check_seed_is_wide_and_needs_the_salt():
    from upskills.lift.evaluate import verdict_seed
    from upskills.verify.verifier import SEED_BITS

    a, b = "a" * 64, "b" * 64
    seeds = {verdict_seed(a, 0, f"case/{i:04x}") for i in range(64)}
    assert len(seeds) == 64 and max(seeds) >= 2**31 and max(seeds) < 2**SEED_BITS
    assert verdict_seed(a, 0, "case/k") == verdict_seed(a, 0, "case/k")
    assert verdict_seed(b, 0, "case/k") != verdict_seed(a, 0, "case/k")  # run seed 0 alone: no
