"""The scripted model server takes only whole requests: a body cut short (the client reset its connection) is
never answered or handed to the policy, an empty one is refused, and the server goes on serving."""

from __future__ import annotations

import json
import socket
import urllib.request

from codesign.testing.model_server import Reply, ScriptedModelServer


def raw_post(url: str, head_length: int, body: bytes) -> bytes:
    """POST ``body`` to the chat route while announcing ``head_length`` bytes, then stop writing; the answer."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(
            f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {head_length}\r\n\r\n".encode()
            + body
        )
        sock.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
        return answer


def test_a_cut_short_body_is_not_answered_an_empty_one_is_refused_and_serving_goes_on():
    seen: list[int] = []

    def policy(request):
        seen.append(len(request.messages))
        return Reply("hello")

    whole = json.dumps({"model": "scripted", "messages": [{"role": "user", "content": "hi"}]}).encode()
    with ScriptedModelServer(policy) as server:
        for cut in (b"", whole[:10]):  # announced, then nothing or a part: the connection closed, nothing said
            assert raw_post(server.url, len(whole), cut) == b""
        empty = raw_post(server.url, 0, b"")
        assert empty.startswith(b"HTTP/1.1 400") and b"empty body" in empty
        assert server.requests == [] and seen == []  # the policy never saw either
        request = urllib.request.Request(server.openai_base + "/chat/completions", data=whole,
                                         headers={"Content-Type": "application/json"})  # fmt: skip
        with urllib.request.urlopen(request, timeout=10) as response:
            assert json.load(response)["choices"][0]["message"]["content"] == "hello"
        assert seen == [1]
