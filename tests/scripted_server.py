"""A scripted OpenAI-compatible server on 127.0.0.1 (real HTTP), for tests.

Each POST to /v1/chat/completions takes the next scripted reply: a dict
{"status": int, "json": body, "headers": {...}} or {"stream": [chunk, ...]} (sent as SSE),
or a callable(request_body) returning one. Every request body is recorded.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def completion(content: str | None = None, tool_calls: list[dict[str, Any]] | None = None,
               usage: dict[str, int] | None = None, **message_extra: Any) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": content, **message_extra}
    if tool_calls:
        msg["tool_calls"] = tool_calls
    body: dict[str, Any] = {"id": "c1", "object": "chat.completion", "created": 0, "model": "scripted",
                            "choices": [{"index": 0, "message": msg,
                                         "finish_reason": "tool_calls" if tool_calls else "stop"}]}
    if usage is not False:
        body["usage"] = usage or {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
    return {"status": 200, "json": body}


def tool_call(name: str, arguments: Any, id: str = "call_1") -> dict[str, Any]:
    return {"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}


def error(status: int, message: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    return {"status": status, "json": {"error": {"message": message, "type": "error"}}, "headers": headers or {}}


class ScriptedServer:
    def __init__(self, script: list[Any], models: list[str] | None = None, key: str | None = None,
                 permissive: bool = False, leftover_ok: str | None = None) -> None:
        self.script = list(script)
        # a test whose scripted replies are not all served fails, unless it says why that is expected
        self.leftover_ok = leftover_ok
        self.permissive = permissive  # answer any model name, listed or not (as some servers do)
        self.key = key
        self.models = models if models is not None else ["scripted-model"]
        self.requests: list[dict[str, Any]] = []
        self.stream_ends: list[tuple[int, float]] = []  # per stream: (chunks sent, when it ended)
        self.headers: list[dict[str, str]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def _refuse(self) -> bool:
                if server.key and self.headers.get("Authorization") != f"Bearer {server.key}":
                    self._send(401, {"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}})
                    return True
                return False

            def do_GET(self) -> None:
                if self._refuse():
                    return
                if self.path.rstrip("/").endswith("/v1/models"):
                    self._send(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in server.models]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                if self._refuse():
                    return
                if not self.path.startswith("/v1/"):
                    self._send(404, {"error": {"message": "Not Found"}})
                    return
                server.requests.append(body)
                server.headers.append(dict(self.headers))
                if (not server.permissive and server.models != ["scripted-model"] and isinstance(body, dict)
                        and body.get("model") not in server.models):
                    self._send(404, {"error": {"message": f"The model `{body.get('model')}` does not exist",
                                               "code": "model_not_found"}})
                    return
                if not server.script:
                    self._send(500, {"error": {"message": "script exhausted"}})
                    return
                reply = server.script.pop(0)
                if callable(reply):
                    reply = reply(body)
                if "raw" in reply:  # a misbehaving server: the reply writes whatever it likes to the socket
                    with contextlib.suppress(OSError):
                        reply["raw"](self)
                    return
                if "stream" in reply:
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.end_headers()
                    sent = 0
                    for chunk in reply["stream"]:
                        if reply.get("delay") and self.wfile.closed:
                            break
                        try:
                            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                            self.wfile.flush()
                        except OSError:  # the client hung up: the stream ends here
                            server.stream_ends.append((sent, time.monotonic()))
                            return
                        sent += 1
                        time.sleep(reply.get("delay", 0))
                    server.stream_ends.append((sent, time.monotonic()))
                    if not reply.get("no_done"):  # llama-cpp-python ends some failed streams with nothing
                        with contextlib.suppress(OSError):  # the client hung up (Ctrl-C)
                            self.wfile.write(b"data: [DONE]\n\n")
                    return
                self._send(reply["status"], reply["json"], reply.get("headers"))

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # a short poll: shutdown() waits for the loop to notice, 0.25 s on average at the default 0.5 s, per test
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> ScriptedServer:
        self.thread.start()
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        if exc_type is None and self.script and self.leftover_ok is None:
            raise AssertionError(f"{len(self.script)} scripted repl{'y was' if len(self.script) == 1 else 'ies were'} "
                                 "never served: the test did not exercise what it scripted (or pass leftover_ok=why)")


def stream_chunks(text: str | None = None, tool_calls: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """SSE chunks: text in pieces, or tool-call deltas split across chunks by index."""
    base = {"id": "s1", "object": "chat.completion.chunk", "created": 0, "model": "scripted"}
    chunks = []
    if text:
        for i in range(0, len(text), 7):
            chunks.append(base | {"choices": [{"index": 0, "delta": {"content": text[i:i + 7]}, "finish_reason": None}]})
    for idx, tc in enumerate(tool_calls or []):
        args = tc["function"]["arguments"]
        chunks.append(base | {"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": idx, "id": tc["id"], "type": "function", "function": {"name": tc["function"]["name"], "arguments": ""}}]},
            "finish_reason": None}]})
        for i in range(0, len(args), 5):
            chunks.append(base | {"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": idx, "function": {"arguments": args[i:i + 5]}}]}, "finish_reason": None}]})
    chunks.append(base | {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return chunks
