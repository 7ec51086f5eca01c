"""An OpenAI-compatible chat-completions server on 127.0.0.1 that answers from a script.

Each request to /v1/chat/completions (or /chat/completions) takes the next entry of the script:
a `Reply` (an assistant turn with tool calls), or `Fail` (an HTTP error status), `Malformed` (a
200 whose body is not JSON) or `Slow` (sleeps before answering, to trigger a client timeout).
Every request body is kept, so tests can check what the client sent.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from simulator.agent.models import LiteLLMClient


@dataclass
class Reply:
    content: str = ""
    tool_calls: list[tuple[str, str]] = field(default_factory=list)  # (name, JSON arguments)
    prompt_tokens: int = 100
    completion_tokens: int = 20


@dataclass
class Fail:
    status: int
    message: str = "scripted failure"


@dataclass
class Malformed:
    body: str = '{"id": "chatcmpl-broken", "choices": [ {"message": '


@dataclass
class Slow:
    seconds: float
    then: Reply = field(default_factory=Reply)


Entry = Reply | Fail | Malformed | Slow


def call(name: str, **arguments: Any) -> tuple[str, str]:
    return name, json.dumps(arguments)


class FakeLLM:
    def __init__(self, script: list[Entry] | None = None, model: str = "fake-model") -> None:
        self.script: list[Entry] = list(script or [])
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._counter = 0
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def api_base(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> FakeLLM:
        self._thread.start()
        return self

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _next(self) -> Entry:
        with self._lock:
            if not self.script:
                return Fail(500, "the fake server's script is exhausted")
            return self.script.pop(0)

    def _completion(self, reply: Reply, model: str) -> dict[str, Any]:
        with self._lock:
            self._counter += 1
            number = self._counter
        calls = [
            {
                "id": f"call_{number}_{i}",
                "type": "function",
                "function": {"name": name, "arguments": arguments},
            }
            for i, (name, arguments) in enumerate(reply.tool_calls)
        ]
        message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
        if calls:
            message["tool_calls"] = calls
        return {
            "id": f"chatcmpl-{number}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if calls else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": reply.prompt_tokens,
                "completion_tokens": reply.completion_tokens,
                "total_tokens": reply.prompt_tokens + reply.completion_tokens,
            },
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _send(self, status: int, body: str) -> None:
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                # the client may have given up already (a timeout test)
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(data)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if not self.path.rstrip("/").endswith("chat/completions"):
                    self._send(404, json.dumps({"error": {"message": f"no route {self.path}"}}))
                    return
                with fake._lock:
                    fake.requests.append(body)
                    fake.headers.append({k.lower(): v for k, v in self.headers.items()})
                entry = fake._next()
                model = str(body.get("model") or fake.model)
                if isinstance(entry, Slow):
                    time.sleep(entry.seconds)
                    entry = entry.then
                if isinstance(entry, Fail):
                    error = {"error": {"message": entry.message, "type": "scripted", "code": None}}
                    self._send(entry.status, json.dumps(error))
                elif isinstance(entry, Malformed):
                    self._send(200, entry.body)
                else:
                    self._send(200, json.dumps(fake._completion(entry, model)))

        return Handler


def serve(script: list[Entry]) -> Iterator[FakeLLM]:
    server = FakeLLM(script).start()
    try:
        yield server
    finally:
        server.close()


def fake_client(server: FakeLLM) -> LiteLLMClient:
    """The client `--model openai/fake-model --api-base <server>` builds, with short retries."""
    from simulator.agent.models import LiteLLMClient, RetryPolicy

    return LiteLLMClient(
        "openai/fake-model",
        api_base=server.api_base,
        api_key="sk-test",
        retry=RetryPolicy(attempts=2, base_delay=0.01, max_delay=0.02),
    )
