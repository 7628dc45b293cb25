"""A loopback HTTP server that answers like the Anthropic and OpenAI APIs, for wire tests.

The real SDK clients (base_url pointed here) send real requests; each test scripts the
replies (status, headers, body, optional delay) and reads back the requests received.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from upskills.llm.base import RetryPolicy


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None
    delay_s: float = 0.0


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: Any


class Wire:
    """Scripted replies in, recorded requests out."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[Received] = []
        self.url = ""

    def reply(self, status: int = 200, body: Any = None, **kwargs: Any) -> None:
        self.replies.append(Reply(status=status, body=body, **kwargs))


def _handler(wire: Wire) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server naming)
            length = int(self.headers.get("content-length") or 0)
            data = self.rfile.read(length)
            wire.requests.append(
                Received(
                    path=self.path,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=json.loads(data) if data else None,
                )
            )
            reply = wire.replies.popleft() if wire.replies else Reply(500, {"error": "unscripted"})
            if reply.delay_s:
                time.sleep(reply.delay_s)
            payload = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
            try:
                self.send_response(reply.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client timed out and left

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

    return Handler


@pytest.fixture
def wire():
    state = Wire()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    yield state
    server.shutdown()
    server.server_close()


class Sleeps(list):
    """Records the delays a RetryPolicy asked for, without waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def retry(sleeps: Sleeps) -> RetryPolicy:
    """Two retries, no jitter (random() = 0.5 gives factor 1), instant sleeps."""
    return RetryPolicy(max_retries=2, jitter=0.25, sleep=sleeps, random=lambda: 0.5)


@pytest.fixture(autouse=True)
def _no_ambient_keys(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hide real keys and endpoints from every test except the opt-in ``api`` ones."""
    if request.node.get_closest_marker("api"):
        return
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
