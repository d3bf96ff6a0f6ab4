"""``python -m codesign.cluster``: the ray start it runs, and a node without the head's token refused with the fix.
(Starting real nodes is left to tests/test_cluster.py: ``ray stop`` would stop every Ray on this machine.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from codesign.cluster import start_command
from tests.helpers import REPO


def test_nodes_declare_their_browsers_and_the_head_keeps_the_dashboard_off():
    head = start_command(None, 6400, 3, ["--block"])
    assert head[1:4] == ["start", "--head", "--port=6400"] and "--include-dashboard=false" in head
    assert json.loads(next(a for a in head if a.startswith("--resources=")).split("=", 1)[1]) == {"browser": 3}
    assert head[-1] == "--block"
    join = start_command("10.0.0.1:6400", 6400, 1, [])
    assert join[1:3] == ["start", "--address=10.0.0.1:6400"] and '--resources={"browser": 1}' in join


def test_joining_without_the_heads_token_says_where_to_get_it(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    env |= {"HOME": str(tmp_path), "RAY_AUTH_TOKEN_PATH": str(tmp_path / "none")}
    proc = subprocess.run([sys.executable, "-m", "codesign.cluster", "join", "10.0.0.1:6379"], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 2
    assert "no Ray authentication token" in proc.stderr and "ray get-auth-token" in proc.stderr


def test_a_head_token_goes_where_ray_auth_token_path_says(tmp_path, monkeypatch):
    from codesign.cluster import has_token, make_token

    path = tmp_path / "tokens" / "auth_token"
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(path))
    monkeypatch.delenv("RAY_AUTH_TOKEN", raising=False)
    assert not has_token()
    make_token()
    assert has_token() and len(path.read_text()) == 64 and path.stat().st_mode & 0o077 == 0
