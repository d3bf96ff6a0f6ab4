"""``python -m codesign.export {inspect,harbor} …``

``inspect PATH… OUT``: one Inspect AI eval log per cell of the runs at PATH (``inspect view OUT`` shows them).
``harbor TASKS OUT``: each codesign task as a Harbor task folder.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] not in ("inspect", "harbor"):
        print(__doc__, file=sys.stderr)
        return 2
    if args[0] == "inspect":
        from codesign.export.inspect_logs import main as inspect_main

        return inspect_main(args[1:])
    from codesign.export.harbor_tasks import main as harbor_main

    return harbor_main(args[1:])


if __name__ == "__main__":
    sys.exit(main())
