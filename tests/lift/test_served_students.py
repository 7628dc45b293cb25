"""The shipped vLLM and Ollama student configs drive a real OpenAI-compatible wire (loopback)."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from upskills.lift.config import LiftConfig
from upskills.lift.runner import run_lift
from upskills.lift.store import GenerationRecord, read_records

pytest.importorskip("openai", reason="the openai extra is not installed")

REPO = Path(__file__).resolve().parents[2]


class _Server:
    def __init__(self, answer: str) -> None:
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                server.requests.append({"path": self.path, "body": body})
                reply = {
                    "id": "chatcmpl-1",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body["model"],
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": answer},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150},
                }
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.mark.parametrize("name", ["vllm-qwen2.5-coder-7b", "ollama-qwen2.5-coder-1.5b"])
def test_served_student_config(name, lift_env, tmp_path, monkeypatch):
    from tests.lift.mock.replay import GOOD

    server = _Server(f"```python\n{GOOD['relu']}```")
    try:
        data = yaml.safe_load((REPO / "students" / f"{name}.yaml").read_text())
        data["base_url"] = server.url
        student = tmp_path / f"{name}.yaml"
        student.write_text(yaml.safe_dump(data))
        monkeypatch.setenv(data["api_key_env"], "test-key")
        out = tmp_path / "run"
        config = LiftConfig(
            out=str(out),
            students=[str(student)],
            cases=[str(lift_env["cases"] / "relu-ragged.yaml")],
            arms=["baseline"],
            samples=2,
            seed=7,
            evaluate=False,
            progress=False,
        )
        run_lift(config)
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()
    gens = read_records(out / "generations.jsonl", GenerationRecord)
    assert [g.kernel_source for g in gens] == [GOOD["relu"], GOOD["relu"]]
    assert [(g.input_tokens, g.output_tokens) for g in gens] == [(100, 50), (100, 50)]
    bodies = [r["body"] for r in server.requests]
    assert all(r["path"] == "/v1/chat/completions" for r in server.requests)
    assert [b["model"] for b in bodies] == [data["model"]] * 2
    assert [b["seed"] for b in bodies] == [g.seed for g in gens]
    assert bodies[0]["temperature"] == data["sampling"]["temperature"]
    assert bodies[0]["messages"][0]["role"] == "system"
    assert "TASK: relu" in bodies[0]["messages"][1]["content"]
