"""Bad inputs fail before any generation with a clear error, or become per-sample failures."""

import socket

import pytest
import yaml

from upskills.lift.config import LiftConfig
from upskills.lift.runner import InfrastructureError, LiftError, run_lift
from upskills.lift.store import EvaluationRecord, GenerationRecord, read_records


def _config(env, out, **kw):
    base = dict(
        out=str(out),
        students=[str(env["student"])],
        skills=[str(env["skill"])],
        cases=[str(env["cases"])],
        traces=[str(env["traces"])],
        samples=1,
        device="cpu",
        progress=False,
    )
    base.update(kw)
    return LiftConfig(**base)


def _nothing_written(out):
    assert not (out / "generations.jsonl").exists()


def test_unknown_provider(lift_env, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nprovider: nosuch\nmodel: m\n")
    with pytest.raises(LiftError, match=r"bad.yaml: field provider: unknown provider 'nosuch'"):
        run_lift(_config(lift_env, tmp_path / "o", students=[str(bad)]))
    _nothing_written(tmp_path / "o")


def test_missing_weights(lift_env, tmp_path):
    bad = tmp_path / "local.yaml"
    bad.write_text("name: local\nprovider: transformers\nmodel: m\nweights: gone/model.gguf\n")
    with pytest.raises(LiftError, match=r"field weights: gone/model.gguf does not exist"):
        run_lift(_config(lift_env, tmp_path / "o", students=[str(bad)]))
    _nothing_written(tmp_path / "o")


def test_unreachable_endpoint(lift_env, tmp_path):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    bad = tmp_path / "vllm.yaml"
    bad.write_text(f"name: v\nprovider: openai\nmodel: m\nbase_url: http://127.0.0.1:{port}/v1\n")
    with pytest.raises(LiftError, match=r"vllm.yaml: field base_url: cannot reach"):
        run_lift(_config(lift_env, tmp_path / "o", students=[str(bad)]))
    _nothing_written(tmp_path / "o")


def test_skill_failing_validation(lift_env, tmp_path, replay_registered):
    md = lift_env["skill"] / "SKILL.md"
    md.write_text(md.read_text().replace('version: "1.0.0"', "version: one"))
    with pytest.raises(LiftError, match=r"(?s)fails validation.*SKILL.md: metadata.version 'one'"):
        run_lift(_config(lift_env, tmp_path / "o"))
    _nothing_written(tmp_path / "o")


def test_reference_that_does_not_parse(lift_env, tmp_path, replay_registered):
    case = lift_env["cases"] / "relu-ragged.yaml"
    data = yaml.safe_load(case.read_text())
    data["task_source"] = "class Model(:\n"
    case.write_text(yaml.safe_dump(data))
    with pytest.raises(LiftError, match=r"case relu-ragged \(task relu\): reference line 1"):
        run_lift(_config(lift_env, tmp_path / "o"))
    _nothing_written(tmp_path / "o")


def test_unknown_variant(lift_env, tmp_path, replay_registered):
    case = lift_env["cases"] / "relu-ragged.yaml"
    data = yaml.safe_load(case.read_text())
    data["variants"] = ["huge"]
    case.write_text(yaml.safe_dump(data))
    with pytest.raises(LiftError, match=r"case relu-ragged: variant 'huge' is not a variant"):
        run_lift(_config(lift_env, tmp_path / "o"))


def test_train_cases_refused_unless_allowed(lift_env, tmp_path, replay_registered):
    case = lift_env["cases"] / "relu-ragged.yaml"
    data = yaml.safe_load(case.read_text())
    data["split"] = "train"
    case.write_text(yaml.safe_dump(data))
    with pytest.raises(LiftError, match=r"1 case\(s\) come from tasks that fed the skills"):
        run_lift(_config(lift_env, tmp_path / "o"))
    # a case whose task hash appears in the skill's provenance is train too
    data["split"] = "heldout"
    case.write_text(yaml.safe_dump(data))
    prov = lift_env["skill"] / "references" / "provenance.json"
    prov.write_text(
        prov.read_text().replace('"task_hash": "x"', f'"task_hash": "{data["task_hash"]}"')
    )
    with pytest.raises(LiftError, match=r"relu-ragged"):
        run_lift(_config(lift_env, tmp_path / "o"))
    out = tmp_path / "allowed"
    run_lift(_config(lift_env, out, allow_train=True, arms=["baseline"], evaluate=False))
    splits = {g.case: g.split for g in read_records(out / "generations.jsonl", GenerationRecord)}
    assert splits == {"relu-ragged": "train", "vector_add-ragged": "heldout"}


def test_provider_errors_are_recorded_not_raised(lift_env, tmp_path):
    script = tmp_path / "empty.json"
    script.write_text("[]")  # every call fails: the script is exhausted
    student = tmp_path / "m.yaml"
    student.write_text(f"name: m\nprovider: mock\nmodel: {script}\n")
    out = tmp_path / "o"
    with pytest.raises(InfrastructureError, match="2 sample\\(s\\) ended in infrastructure errors"):
        run_lift(_config(lift_env, out, students=[str(student)], arms=["baseline"]))
    gens = read_records(out / "generations.jsonl", GenerationRecord)
    assert len(gens) == 2 and all("script exhausted" in (g.error or "") for g in gens)
    # not judged, so not counted as failures: they stay pending until a rerun retries them
    assert read_records(out / "evaluations.cpu.jsonl", EvaluationRecord) == []


def test_failing_reference_is_a_recorded_failure(lift_env, tmp_path, replay_registered):
    case = lift_env["cases"] / "relu-ragged.yaml"
    data = yaml.safe_load(case.read_text())
    data["task_source"] = data["task_source"].replace(
        "return [torch.randn(M, N)]", "raise RuntimeError('broken reference')"
    )
    data["variants"] = []
    case.write_text(yaml.safe_dump(data))
    (lift_env["cases"] / "vector_add-ragged.yaml").unlink()
    out = tmp_path / "o"
    run_lift(_config(lift_env, out, arms=["baseline"]))
    (ev,) = read_records(out / "evaluations.cpu.jsonl", EvaluationRecord)
    assert ev.passed is False and ev.error_class in ("task", "runtime")
    assert "broken reference" in ev.message


def test_other_experiment_in_run_folder(lift_env, tmp_path, replay_registered):
    out = tmp_path / "o"
    run_lift(_config(lift_env, out, arms=["baseline"], evaluate=False))
    with pytest.raises(LiftError, match="describes a different experiment"):
        run_lift(_config(lift_env, out, arms=["baseline"], samples=2, evaluate=False))
