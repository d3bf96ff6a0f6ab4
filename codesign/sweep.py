"""``python -m codesign.sweep ARGS`` is ``python -m codesign ARGS -m``: kept as an alias for old commands.

The grid itself — every cell's trials in one pool — is Hydra's multirun with codesign's pooled launcher
(``hydra_plugins/codesign_launcher``), the default for ``-m``.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    from codesign.__main__ import main as codesign_main

    args = list(sys.argv[1:] if argv is None else argv)
    sys.argv = [sys.argv[0], *args, *([] if "-m" in args or "--multirun" in args else ["-m"])]
    codesign_main()


if __name__ == "__main__":
    main()
