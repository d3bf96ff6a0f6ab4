"""A scripted local model server: OpenAI- and Anthropic-compatible, over real HTTP, streaming included.

It stands in for a paid endpoint in tests and benchmarks: litellm (``api_base=server.openai_base``),
the Claude Code CLI (``ANTHROPIC_BASE_URL=server.anthropic_base``) and mini-swe-agent talk to it
exactly as they would to a provider. A *policy* decides each reply from the request; every request
and the usage it was charged are recorded, so tests can check telemetry against what was served.

    with ScriptedModelServer(policy=lambda req: Reply("hello")) as server:
        litellm.completion(model="openai/scripted", api_base=server.openai_base, api_key="x", ...)
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from codesign.runtime.http import LoopbackHandler, LoopbackServer
from codesign.solve.proxy import anthropic_sse


@dataclass
class ToolCall:
    name: str
    arguments: dict[str, Any]
    raw_arguments: str | None = None  # sent instead of ``arguments`` as given (malformed JSON, OpenAI face only)

    def encoded(self) -> str:
        return self.raw_arguments if self.raw_arguments is not None else json.dumps(self.arguments)


@dataclass
class Reply:
    """One scripted answer. ``status`` other than 200 answers with an API error of that status."""

    content: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    input_tokens: int | None = None  # None: estimated from the request size
    output_tokens: int | None = None  # None: estimated from the reply size
    cached_tokens: int = 0
    status: int = 200
    retry_after_s: float | None = None
    delay_s: float = 0.0
    raw_body: str | None = None  # answer exactly this (malformed output tests)


@dataclass
class ServedRequest:
    api: str  # "openai" | "anthropic"
    path: str
    body: dict[str, Any]
    stream: bool
    peer: tuple[str, int] | None = None  # the client's address (a test can tell which process called)

    @property
    def model(self) -> str:
        return str(self.body.get("model", ""))

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))

    @property
    def tool_names(self) -> list[str]:
        tools = self.body.get("tools") or []
        return [t.get("function", {}).get("name") or t.get("name") for t in tools]

    @property
    def turn(self) -> int:
        """How many assistant turns precede this request (0 for the first call of a conversation)."""
        return sum(m.get("role") == "assistant" for m in self.messages)

    def text(self) -> str:
        return json.dumps(self.body.get("messages", [])) + json.dumps(self.body.get("system", ""))


@dataclass
class Served:
    request: ServedRequest
    reply: Reply
    input_tokens: int
    output_tokens: int
    cached_tokens: int


Policy = Callable[[ServedRequest], Reply]


def script(replies: Iterable[Reply]) -> Policy:
    """A policy that answers with ``replies`` in order, then with errors (an exhausted script is a bug)."""
    it = iter(list(replies))
    lock = threading.Lock()

    def policy(_: ServedRequest) -> Reply:
        with lock:
            return next(it, Reply(status=500, content="scripted server: script exhausted"))

    return policy


def _estimate(text: str) -> int:
    return max(1, len(text) // 4)


class ScriptedModelServer:
    def __init__(self, policy: Policy, latency_s: float = 0.0, model_name: str = "scripted"):
        self.policy, self.latency_s, self.model_name = policy, latency_s, model_name
        self.served: list[Served] = []
        self.requests: list[ServedRequest] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self.in_flight = 0  # requests being answered now
        self.peak_in_flight = 0  # the most answered at once (a concurrency limit's observable effect)
        self._httpd: LoopbackServer | None = None

    # --- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> ScriptedModelServer:
        handler = type("Handler", (_Handler,), {"owner": self})
        self._httpd = LoopbackServer(handler).start("scripted-model")
        return self

    def stop(self) -> None:
        if self._httpd:
            self._httpd.stop()
            self._httpd = None

    def __enter__(self) -> ScriptedModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._httpd, "server not started"
        return self._httpd.url

    @property
    def openai_base(self) -> str:
        return self.url + "/v1"

    @property
    def anthropic_base(self) -> str:
        return self.url

    # --- accounting --------------------------------------------------------------------------------
    def usage(self) -> dict[str, int]:
        ok = [s for s in self.served if s.reply.status == 200]
        return {
            "calls": len(ok),
            "input_tokens": sum(s.input_tokens for s in ok),
            "output_tokens": sum(s.output_tokens for s in ok),
            "cached_tokens": sum(s.cached_tokens for s in ok),
            "tool_calls": sum(len(s.reply.tool_calls) for s in ok),
        }

    def next_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):06d}"

    def answer(self, request: ServedRequest) -> Served:
        with self._lock:
            self.requests.append(request)
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            reply = self.policy(request)
            delay = self.latency_s + reply.delay_s
            if delay:
                time.sleep(delay)
        finally:
            with self._lock:
                self.in_flight -= 1
        out_text = (reply.content or "") + json.dumps([vars(t) for t in reply.tool_calls])
        served = Served(
            request,
            reply,
            reply.input_tokens if reply.input_tokens is not None else _estimate(request.text()),
            reply.output_tokens if reply.output_tokens is not None else _estimate(out_text),
            reply.cached_tokens,
        )
        with self._lock:
            self.served.append(served)
        return served


class _Handler(LoopbackHandler):
    owner: ScriptedModelServer

    def do_HEAD(self) -> None:  # Claude Code probes the base URL first; any answer will do
        self.send_response(200 if self.path == "/" else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": self.owner.model_name, "object": "model"}]})
        else:
            self._json(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if len(raw) < length:  # the client went away mid-request (a reset connection): no one to answer
            self.close_connection = True
            return
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:  # an empty body too: it was read as `{}` once, and a policy then failed on it
            self._json(400, {"error": {"message": "body is not JSON" if raw else "empty body"}})
            return
        path = self.path.split("?")[0]
        if path.endswith("/messages/count_tokens"):
            self._json(200, {"input_tokens": _estimate(json.dumps(body))})
            return
        if path.endswith("/chat/completions"):
            api = "openai"
        elif path.endswith("/messages"):
            api = "anthropic"
        else:
            self._json(404, {"error": {"message": f"no route {path}"}})
            return
        peer = (str(self.client_address[0]), int(self.client_address[1]))
        served = self.owner.answer(ServedRequest(api, path, body, bool(body.get("stream")), peer))
        reply = served.reply
        if reply.raw_body is not None:
            self.send_body(200, "application/json", reply.raw_body.encode())
        elif reply.status != 200:
            self._error(api, reply)
        elif api == "openai":
            (self._openai_stream if served.request.stream else self._openai)(served)
        else:
            (self._anthropic_stream if served.request.stream else self._anthropic)(served)

    # --- plumbing ------------------------------------------------------------------------------------
    def _json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        self.send_body(status, "application/json", json.dumps(obj).encode(), headers)

    def _sse(self, events: list[tuple[str | None, Any]]) -> None:
        chunks = []
        for event, data in events:
            payload = data if isinstance(data, str) else json.dumps(data)
            chunks.append((f"event: {event}\n" if event else "") + f"data: {payload}\n\n")
        self.send_body(200, "text/event-stream", "".join(chunks).encode(), {"Cache-Control": "no-cache"})

    def _error(self, api: str, reply: Reply) -> None:
        kind = {429: "rate_limit_error", 529: "overloaded_error", 401: "authentication_error"}.get(
            reply.status, "api_error"
        )
        message = reply.content or f"scripted {reply.status}"
        headers = {"retry-after": str(reply.retry_after_s)} if reply.retry_after_s is not None else {}
        if api == "openai":
            self._json(reply.status, {"error": {"message": message, "type": kind, "code": reply.status}}, headers)
        else:
            self._json(reply.status, {"type": "error", "error": {"type": kind, "message": message}}, headers)

    # --- OpenAI chat completions ---------------------------------------------------------------------
    def _openai_usage(self, s: Served) -> dict[str, Any]:
        return {
            "prompt_tokens": s.input_tokens,
            "completion_tokens": s.output_tokens,
            "total_tokens": s.input_tokens + s.output_tokens,
            "prompt_tokens_details": {"cached_tokens": s.cached_tokens},
        }

    def _openai_calls(self, s: Served) -> list[dict[str, Any]]:
        return [
            {
                "id": self.owner.next_id("call_"),
                "type": "function",
                "function": {"name": t.name, "arguments": t.encoded()},
            }
            for t in s.reply.tool_calls
        ]

    def _openai(self, s: Served) -> None:
        message: dict[str, Any] = {"role": "assistant", "content": s.reply.content}
        calls = self._openai_calls(s)
        if calls:
            message["tool_calls"] = calls
        self._json(
            200,
            {
                "id": self.owner.next_id("chatcmpl-"),
                "object": "chat.completion",
                "created": int(time.time()),
                "model": s.request.model,
                "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
                "usage": self._openai_usage(s),
            },
        )

    def _openai_stream(self, s: Served) -> None:
        cid, created, model = self.owner.next_id("chatcmpl-"), int(time.time()), s.request.model

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }

        events: list[tuple[str | None, Any]] = [(None, chunk({"role": "assistant", "content": ""}))]
        text = s.reply.content or ""
        for i in range(0, len(text), 16):  # a few deltas, like a real stream
            events.append((None, chunk({"content": text[i : i + 16]})))
        for i, call in enumerate(self._openai_calls(s)):
            args = call["function"]["arguments"]
            events.append(
                (
                    None,
                    chunk(
                        {
                            "tool_calls": [
                                {
                                    "index": i,
                                    "id": call["id"],
                                    "type": "function",
                                    "function": {"name": call["function"]["name"], "arguments": ""},
                                }
                            ]
                        }
                    ),
                )
            )
            for j in range(0, len(args), 24):
                delta = {"tool_calls": [{"index": i, "function": {"arguments": args[j : j + 24]}}]}
                events.append((None, chunk(delta)))
        events.append((None, chunk({}, "tool_calls" if s.reply.tool_calls else "stop")))
        if (s.request.body.get("stream_options") or {}).get("include_usage"):
            events.append(
                (
                    None,
                    {
                        "id": cid,
                        "object": "chat.completion.chunk",
                        "created": created,
                        "model": model,
                        "choices": [],
                        "usage": self._openai_usage(s),
                    },
                )
            )
        events.append((None, "[DONE]"))
        self._sse(events)

    # --- Anthropic messages --------------------------------------------------------------------------
    def _anthropic_blocks(self, s: Served) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        if s.reply.content:
            blocks.append({"type": "text", "text": s.reply.content})
        for t in s.reply.tool_calls:
            tool_id = self.owner.next_id("toolu_")
            blocks.append({"type": "tool_use", "id": tool_id, "name": t.name, "input": t.arguments})
        return blocks

    def _anthropic_usage(self, s: Served) -> dict[str, int]:
        return {
            "input_tokens": s.input_tokens,
            "output_tokens": s.output_tokens,
            "cache_read_input_tokens": s.cached_tokens,
            "cache_creation_input_tokens": 0,
        }

    def _anthropic_message(self, s: Served) -> dict[str, Any]:
        return {
            "id": self.owner.next_id("msg_"),
            "type": "message",
            "role": "assistant",
            "model": s.request.model,
            "content": self._anthropic_blocks(s),
            "stop_sequence": None,
            "stop_reason": "tool_use" if s.reply.tool_calls else "end_turn",
            "usage": self._anthropic_usage(s),
        }

    def _anthropic(self, s: Served) -> None:
        self._json(200, self._anthropic_message(s))

    def _anthropic_stream(self, s: Served) -> None:
        # The same encoder codesign's proxy streams with: one implementation of the event sequence.
        self.send_body(
            200, "text/event-stream", anthropic_sse(self._anthropic_message(s)), {"Cache-Control": "no-cache"}
        )


def serve_in_subprocess(policy_ref: str, latency_s: float = 0.0) -> tuple[Any, str]:
    """Start a server in its own process (so its work does not share the caller's GIL); returns (process,
    url). ``policy_ref`` is ``module:function``; the process prints its URL and serves until killed."""
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-m", "codesign.testing.model_server", policy_ref, str(latency_s)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None  # stdout=PIPE
    url = proc.stdout.readline().strip()
    if not url.startswith("http"):
        proc.kill()
        raise RuntimeError(f"scripted server did not start: {url!r}")
    return proc, url


if __name__ == "__main__":  # python -m codesign.testing.model_server module:policy [latency_s]
    import importlib
    import sys

    module, _, name = sys.argv[1].partition(":")
    server = ScriptedModelServer(getattr(importlib.import_module(module), name), float(sys.argv[2]))
    server.start()
    print(server.url, flush=True)
    threading.Event().wait()
