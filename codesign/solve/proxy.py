"""A model proxy on loopback: the Anthropic Messages API, answered by any codesign :class:`Model`.

Agent CLIs that speak Anthropic's API (Claude Code) are pointed at it with ``ANTHROPIC_BASE_URL``.
Each call is translated to the OpenAI format (litellm's adapter), answered by the trial's model —
a litellm endpoint or an offline one — and translated back. The proxy is where every call is
recorded (turns, tokens, cost, tool calls by kind) and where the caps are enforced, the same way
for every harness (Inspect AI's lesson).
"""

from __future__ import annotations

import json
import secrets
import threading
from typing import TYPE_CHECKING, Any, cast

from codesign._protocols import Model, Recorder
from codesign.runtime.http import LoopbackHandler, LoopbackServer
from codesign.solve.ended import Ended, InfraError

if TYPE_CHECKING:
    from litellm.types.llms.anthropic import AnthropicMessagesRequest


def anthropic_sse(message: dict[str, Any]) -> bytes:
    """A complete Anthropic message as the server-sent events of a stream."""
    usage = dict(message.get("usage") or {})
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": start})]
    for i, block in enumerate(message.get("content") or []):
        if block["type"] == "text":
            events.append(
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}},
                )
            )
            text = block["text"]
            for j in range(0, len(text), 64):
                delta = {"type": "text_delta", "text": text[j : j + 64]}
                events.append(("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}))
        elif block["type"] == "tool_use":
            start_block = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            events.append(
                ("content_block_start", {"type": "content_block_start", "index": i, "content_block": start_block})
            )
            args = json.dumps(block.get("input") or {})
            for j in range(0, len(args), 64):
                delta = {"type": "input_json_delta", "partial_json": args[j : j + 64]}
                events.append(("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}))
        else:
            continue
        events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message.get("stop_reason"), "stop_sequence": None},
                "usage": {"output_tokens": usage.get("output_tokens", 0)},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return "".join(f"event: {e}\ndata: {json.dumps(d)}\n\n" for e, d in events).encode()


class ModelProxy:
    def __init__(self, model: Model, recorder: Recorder):
        self.model, self.recorder = model, recorder
        self.token = "codesign-" + secrets.token_hex(16)  # only the CLI this proxy was started for may call it
        self.ended: Ended | None = None  # set when a cap was hit or the model failed: the harness reports it
        self.calls = 0
        self._lock = threading.Lock()
        self._httpd: LoopbackServer | None = None
        from codesign.solve.models.litellm_model import _litellm

        litellm = _litellm()
        from litellm.llms.anthropic.messages.adapters.transformation import LiteLLMAnthropicMessagesAdapter

        self._litellm, self._adapter = litellm, LiteLLMAnthropicMessagesAdapter()

    def __enter__(self) -> ModelProxy:
        handler = type("Handler", (_Handler,), {"proxy": self})
        self._httpd = LoopbackServer(handler).start("codesign-model-proxy")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._httpd:
            self._httpd.stop()

    @property
    def base_url(self) -> str:
        assert self._httpd
        return self._httpd.url

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """Status and Anthropic-format body for one Messages request."""
        with self._lock:
            if self.ended is not None:
                return 400, _error("invalid_request_error", f"codesign: this solve has ended ({self.ended})")
            try:
                self.recorder.check_limits()
            except Ended as e:
                self.ended = e
                return 400, _error("invalid_request_error", f"codesign: {e}")
        # The agent CLI's request as it came (JSON): the adapter reads it as Anthropic's request type.
        anthropic = cast("AnthropicMessagesRequest", {**body, "stream": False})
        request, _ = self._adapter.translate_anthropic_to_openai(anthropic)
        messages = [{k: v for k, v in m.items() if v is not None} for m in request.get("messages", [])]
        tools = [dict(t) for t in request.get("tools") or []]
        try:
            reply = self.model.query(messages, tools)
        except Exception as e:  # the endpoint failed after its own retries: an infrastructure outcome
            with self._lock:
                self.ended = InfraError(f"model call failed: {type(e).__name__}: {e}")
            return 500, _error("api_error", str(e)[:500])
        with self._lock:
            self.calls += 1
            self.recorder.model_replied(reply)
            for call in reply.message.get("tool_calls") or []:
                fn = call["function"]
                try:
                    args = json.loads(fn.get("arguments") or "{}")
                except json.JSONDecodeError:
                    args = None
                if not isinstance(args, dict):
                    # The model's malformed call reaches the CLI as one it will reject with an error the model
                    # sees (a tool_use must carry an object): its mistake, answered like any other.
                    args = {"unparsable_arguments": str(fn.get("arguments"))[:2000]}
                    fn["arguments"] = json.dumps(args)
                self.recorder.count_tool_call(fn["name"], args)
        response = self._litellm.ModelResponse(
            id=f"msg_codesign_{self.calls}",
            choices=[
                {
                    "index": 0,
                    "message": reply.message,
                    "finish_reason": "tool_calls" if reply.message.get("tool_calls") else "stop",
                }
            ],
            usage={
                "prompt_tokens": reply.usage.input_tokens,
                "completion_tokens": reply.usage.output_tokens,
                "total_tokens": reply.usage.input_tokens + reply.usage.output_tokens,
            },
        )
        message = dict(self._adapter.translate_openai_response_to_anthropic(response))
        message["model"] = body.get("model", "codesign")
        message["usage"] = {
            "input_tokens": reply.usage.input_tokens,
            "output_tokens": reply.usage.output_tokens,
            "cache_read_input_tokens": reply.usage.cached_tokens,
            "cache_creation_input_tokens": 0,
        }
        return 200, message


def _error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


class _Handler(LoopbackHandler):
    proxy: ModelProxy

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        key = self.headers.get("x-api-key") or (self.headers.get("authorization") or "").removeprefix("Bearer ")
        if key != self.proxy.token:
            self.send_body(401, "application/json", json.dumps(_error("authentication_error", "bad key")).encode())
            return
        path = self.path.split("?")[0]
        if path.endswith("/messages/count_tokens"):
            estimate = max(1, len(json.dumps(body)) // 4)
            self.send_body(200, "application/json", json.dumps({"input_tokens": estimate}).encode())
            return
        if not path.endswith("/messages"):
            self.send_body(404, "application/json", json.dumps(_error("not_found_error", path)).encode())
            return
        status, message = self.proxy.answer(body)
        if status == 200 and body.get("stream"):
            self.send_body(200, "text/event-stream", anthropic_sse(message))
        else:
            self.send_body(status, "application/json", json.dumps(message).encode())
