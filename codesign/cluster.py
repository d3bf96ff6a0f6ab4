"""``python -m codesign.cluster``: start a Ray node ready for codesign's trials, token authentication on.

    python -m codesign.cluster head [--port 6379] [--browsers N]       # the first node (keeps the token)
    python -m codesign.cluster join HEAD:PORT [--browsers N]           # every other node (RAY_AUTH_TOKEN set)
    python -m codesign.cluster stop

It is ``ray start`` with what codesign needs said once: ``RAY_AUTH_MODE=token`` (Ray 2.60 admits a node or
a client of a token cluster only in token mode, and never switches to it by itself), a token made on the
head if there is none, the ``browser`` resource each trial actor takes (how many Chromiums the node hosts),
and no usage stats. Extra arguments after ``--`` go to ``ray start`` as they are (``--block``, ``--num-cpus``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from codesign.errors import CodesignError, EnvironmentSetupError
from codesign.execute.ray_connect import BROWSER
from codesign.execute.ray_placement import browsers_from_cpus


def default_browsers() -> int:
    """As many Chromiums as a node without the resource gets (one per two cores)."""
    return browsers_from_cpus(os.cpu_count() or 2)


def ray_env() -> dict[str, str]:
    return {**os.environ, "RAY_AUTH_MODE": "token", "RAY_USAGE_STATS_ENABLED": "0"}


def _ray() -> str:
    local = Path(sys.executable).with_name("ray")
    return str(local) if local.exists() else "ray"


def has_token() -> bool:
    path = Path(os.environ.get("RAY_AUTH_TOKEN_PATH") or "~/.ray/auth_token").expanduser()
    return bool(os.environ.get("RAY_AUTH_TOKEN")) or path.is_file()


def make_token() -> None:
    """A new token where Ray will look: ``$RAY_AUTH_TOKEN_PATH`` (``ray get-auth-token --generate`` writes only
    ~/.ray/auth_token, and fails when that variable names a file that does not exist yet), else by Ray."""
    custom = os.environ.get("RAY_AUTH_TOKEN_PATH")
    if custom:
        import secrets

        path = Path(custom).expanduser()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o600)
        path.write_text(secrets.token_hex(32))
        return
    subprocess.run([_ray(), "get-auth-token", "--generate"], env=ray_env(), check=True, stdout=subprocess.DEVNULL)


def start_command(address: str | None, port: int, browsers: int, extra: list[str]) -> list[str]:
    resources = json.dumps({BROWSER: browsers})
    if address is None:
        return [
            _ray(),
            "start",
            "--head",
            f"--port={port}",
            "--include-dashboard=false",
            f"--resources={resources}",
            *extra,
        ]
    return [_ray(), "start", f"--address={address}", f"--resources={resources}", *extra]


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(prog="python -m codesign.cluster", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    head = sub.add_parser("head", help="start the head node (makes a token if there is none)")
    head.add_argument("--port", type=int, default=6379)
    join = sub.add_parser("join", help="start a node that joins the head at HEAD:PORT")
    join.add_argument("address")
    for p in (head, join):
        p.add_argument("--browsers", type=int, default=default_browsers(), help="trial actors this node hosts")
    sub.add_parser("stop", help="stop this machine's Ray node")
    args = parser.parse_args(argv)
    try:
        if args.command == "stop":
            return subprocess.run([_ray(), "stop"], env=ray_env()).returncode
        if args.command == "head" and not has_token():
            make_token()
        if args.command == "join" and not has_token():
            raise EnvironmentSetupError(
                "no Ray authentication token on this node: the head admits only nodes that present its token",
                "export RAY_AUTH_TOKEN=<the output of `ray get-auth-token` on the head> (or copy the head's "
                "~/.ray/auth_token here), then run this again",
            )
        address = None if args.command == "head" else args.address
        command = start_command(address, getattr(args, "port", 6379), args.browsers, extra)
        code = subprocess.run(command, env=ray_env()).returncode
        if code == 0 and args.command == "head":
            print(
                f"\ncodesign: head ready with {args.browsers} browser(s). On each other node:\n"
                f"  export RAY_AUTH_TOKEN=...   # `ray get-auth-token` here prints it; keep it secret\n"
                f"  python -m codesign.cluster join <this host>:{args.port}\n"
                f"Then run: RAY_ADDRESS=<this host>:{args.port} python -m codesign ..."
            )
        return code
    except CodesignError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
