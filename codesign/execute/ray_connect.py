"""Connecting to Ray: once per process, a new local instance or a cluster, with Ray's token authentication."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from codesign.errors import EnvironmentSetupError

BROWSER = "browser"  # the custom resource one actor (one Chromium) takes; nodes declare how many they host
CORES_PER_BROWSER = 2  # one Chromium per two cores: measured here, more give no speed-up on 2 cores


def use_token_auth(address: str) -> None:
    """Ray's token authentication, out of the box. A cluster started with a token (``ray start`` makes one
    when ``~/.ray/auth_token`` exists) admits only clients in token mode, and Ray does not switch a client
    to it by itself; a token-mode client of a cluster without tokens connects but cannot start actors
    (both seen with Ray 2.60). So unless ``RAY_AUTH_MODE`` says otherwise, the cluster is asked (one
    instant call to its GCS) and the client follows it."""
    if os.environ.get("RAY_AUTH_MODE") is not None or address == "local":
        return
    from ray.exceptions import AuthenticationError

    try:
        from ray._private.services import canonicalize_bootstrap_address_or_die
        from ray._raylet import GcsClient  # type: ignore[attr-defined]  # Ray's _raylet stub omits this Cython class

        GcsClient(address=canonicalize_bootstrap_address_or_die(address)).internal_kv_get(b"codesign", None, timeout=30)
        return  # admitted without a token
    except AuthenticationError:
        pass
    except Exception:  # not reachable (yet), or a ray:// address: ray.init reports it in its own words
        return
    token_file = Path(os.environ.get("RAY_AUTH_TOKEN_PATH") or "~/.ray/auth_token").expanduser()
    if not (os.environ.get("RAY_AUTH_TOKEN") or token_file.is_file()):
        raise EnvironmentSetupError(
            f"the Ray cluster at {address} uses token authentication and this machine has no token",
            "export RAY_AUTH_TOKEN=<the output of `ray get-auth-token` on the head node> and run again",
        )
    from ray._raylet import Config  # type: ignore[attr-defined]  # Ray's _raylet stub omits this Cython class

    os.environ["RAY_AUTH_MODE"] = "token"
    Config.initialize("")  # Ray read its mode at import: refresh it


def ensure_ray(
    address: str | None, num_cpus: int | None = None, runtime_env: dict | None = None, browsers: int | None = None
) -> None:
    """Connect once per process: ``address`` / ``$RAY_ADDRESS`` for a cluster, else a new local instance
    (declaring ``browsers`` units of the ``browser`` resource).

    ``address="local"`` is explicit on purpose: a stale cluster file from a killed ``ray start`` makes a
    plain ``ray.init()`` hang for minutes (docs/cluster.md).
    """
    import ray

    if ray.is_initialized():
        return
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    target = address or os.environ.get("RAY_ADDRESS") or "local"
    use_token_auth(target)
    kwargs: dict[str, Any] = {"address": target, "logging_level": logging.WARNING, "runtime_env": runtime_env}
    if target == "local":
        kwargs |= {"include_dashboard": False, "num_cpus": num_cpus, "resources": {BROWSER: float(browsers or 2)}}
    # A loaded machine can miss Ray's own start-up deadline (30 s, fixed in Ray): one more try, then a hint.
    for attempt in (1, 2):
        try:
            ray.init(**kwargs)
            return
        except Exception as e:
            ray.shutdown()
            if attempt == 2:
                raise EnvironmentSetupError(
                    f"Ray did not start ({target}): {type(e).__name__}: {str(e)[:500]}",
                    "on a busy machine run without Ray (executor=inline); for a cluster check RAY_ADDRESS / "
                    "executor.address, and RAY_AUTH_TOKEN when the cluster uses token authentication",
                ) from e
