from pathlib import Path

import pytest

from upskills.lift.student import StudentError, check_endpoint, load_student, student_from_dict

REPO = Path(__file__).resolve().parents[2]


def test_shipped_students_validate():
    names = sorted(p.stem for p in (REPO / "students").glob("*.yaml"))
    assert "smollm2-135m" in names and len(names) >= 5
    for name in names:
        s = load_student(REPO / "students" / f"{name}.yaml")
        assert s.name == name
    providers = {load_student(p).provider for p in (REPO / "students").glob("*.yaml")}
    assert {"transformers", "openai", "anthropic"} <= providers


def test_embedded_default_without_students_folder(tmp_path):
    s = load_student("smollm2-135m", search=tmp_path)
    assert s.provider == "transformers" and s.device == "cpu"
    assert s.provider_spec() == "transformers/smollm2-135m"


def test_unknown_provider_names_file_and_field(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("name: bad\nprovider: ollamaa\nmodel: x\n")
    with pytest.raises(StudentError, match=r"bad.yaml: field provider: unknown provider 'ollamaa'"):
        load_student(p)


def test_missing_weights(tmp_path):
    p = tmp_path / "local.yaml"
    p.write_text("name: local\nprovider: transformers\nmodel: m\nweights: nothere.gguf\n")
    with pytest.raises(StudentError, match=r"field weights: nothere.gguf does not exist"):
        load_student(p)


def test_unknown_key_and_bad_yaml(tmp_path):
    with pytest.raises(StudentError, match=r"field temprature"):
        student_from_dict({"name": "a", "provider": "openai", "model": "m", "temprature": 1})
    p = tmp_path / "broken.yaml"
    p.write_text("name: a\nprovider: [openai\n")
    with pytest.raises(StudentError, match=r"broken.yaml line \d+: not valid YAML"):
        load_student(p)


def test_unknown_student_name(tmp_path):
    with pytest.raises(StudentError, match="no student 'nobody'"):
        load_student("nobody", search=tmp_path)


def test_unreachable_endpoint():
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    s = student_from_dict(
        {"name": "v", "provider": "openai", "model": "m", "base_url": f"http://127.0.0.1:{port}/v1"}
    )
    with pytest.raises(StudentError, match="cannot reach"):
        check_endpoint(s, timeout_s=1.0)
