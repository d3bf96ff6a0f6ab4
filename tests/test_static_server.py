"""The in-process static server: a client that hangs up mid-answer is no error of the server's."""

from __future__ import annotations

import socket
import struct
import threading
import time
import urllib.request
from urllib.parse import urlparse

from codesign.runtime.serve import static_server


def answering(earlier: set[threading.Thread]) -> int:
    """Request threads still running (socketserver names them after their target) but those of ``earlier``:
    servers of tests before this one in the same worker may keep theirs."""
    return sum("process_request_thread" in t.name for t in set(threading.enumerate()) - earlier)


def test_a_client_hanging_up_mid_answer_prints_nothing_and_the_server_goes_on(tmp_path, capfd):
    """Chromium drops a page's connections while a large asset is still being sent (a navigation away from a
    page that is loading): socketserver printed each one's BrokenPipeError traceback — dozens over one Web-Bench
    project's import — burying what the importer itself printed."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "big.bin").write_bytes(b"x" * 8_000_000)  # more than the socket buffers hold: the send blocks
    (site / "index.html").write_text("<h1>app</h1>")
    earlier = set(threading.enumerate())
    with static_server(site, spa_fallback=False) as url:
        where = urlparse(url)
        for _ in range(3):
            client = socket.create_connection((where.hostname, where.port))
            client.sendall(b"GET /big.bin HTTP/1.1\r\nHost: app\r\n\r\n")
            client.recv(1024)  # the answer has started
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            client.close()  # a reset, mid-answer
        deadline = time.monotonic() + 60  # a safety net: the threads end at their next write
        while answering(earlier) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert answering(earlier) == 0  # every hung-up answer has ended, and said what it had to
        assert urllib.request.urlopen(url + "/index.html", timeout=30).read() == b"<h1>app</h1>"
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Broken pipe" not in err and "Connection reset" not in err, err
