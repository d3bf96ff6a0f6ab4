"""Tools for task authors.

python -m codesign.author patch <task_dir> <solved_app_dir>   # writes solution/solution.patch
python -m codesign.author checkout <task_dir> <dest>          # app + reference patch, to edit
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from codesign.workspace import Baseline, apply_patch, copy_tree


def make_patch(app_dir: Path, solved_dir: Path) -> str:
    """The minimal patch turning ``app_dir`` into ``solved_dir`` (generated folders ignored)."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "work"
        copy_tree(app_dir, work)
        baseline = Baseline(Path(tmp) / "baseline.git", work)
        baseline.snapshot()
        shutil.rmtree(work)
        copy_tree(solved_dir, work)
        return baseline.diff()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m codesign.author")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("patch", help="write solution/solution.patch from a solved copy of app/")
    p.add_argument("task_dir", type=Path)
    p.add_argument("solved_dir", type=Path)
    c = sub.add_parser("checkout", help="copy app/ with the reference patch applied, to edit the solution")
    c.add_argument("task_dir", type=Path)
    c.add_argument("dest", type=Path)
    args = parser.parse_args()
    if args.command == "patch":
        patch = make_patch(args.task_dir / "app", args.solved_dir)
        out = args.task_dir / "solution" / "solution.patch"
        out.parent.mkdir(exist_ok=True)
        out.write_text(patch)
        print(f"wrote {out} ({patch.count(chr(10))} lines)")
    else:
        copy_tree(args.task_dir / "app", args.dest)
        apply_patch(args.dest, (args.task_dir / "solution" / "solution.patch").read_text())
        print(f"checked out {args.dest}")


if __name__ == "__main__":
    main()
