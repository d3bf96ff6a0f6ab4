"""``python -m codesign.review [PATH…] [--store URI] [--reviewer NAME] [--port N]``

Serves a page on 127.0.0.1 listing every graded criterion of the runs, sweeps or stores given (filters:
cell, task, kind, verdict, grader, disagreements, not yet reviewed; a stratified sample of N with a seed)
and, for one criterion, the request, the verdict with its reason and the verifier's refutation, the
evidence it cites and the evidence it does not. Your verdicts (PASS, PARTIAL, FAIL, can't tell, a note)
are kept in the store next to the evaluation they judge; ``python -m codesign.report`` compares them with
every grader. ``--export FILE`` / ``--import FILE`` (.csv or .parquet) move labels made elsewhere.
"""

from __future__ import annotations

import argparse
import getpass
import sys
import time
from pathlib import Path

from codesign.errors import CodesignError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codesign.review", description=__doc__.split("\n\n")[1])
    parser.add_argument("paths", nargs="*", type=Path, help="run folders and multirun/sweep folders")
    parser.add_argument("--store", action="append", default=[], help="also every trial stored here (a folder or URI)")
    parser.add_argument("--reviewer", default=None, help="your name, as labels record it (default: your login)")
    parser.add_argument("--port", type=int, default=0, help="the loopback port (default: a free one)")
    parser.add_argument("--export", type=Path, metavar="FILE", help="write every label of these stores and exit")
    parser.add_argument("--import", dest="import_", type=Path, metavar="FILE", help="add the labels in FILE and exit")
    args = parser.parse_args(argv)
    if not args.paths and not args.store:
        parser.error("give run folders, multirun/sweep folders, or --store")
    from codesign.report.collect import collect, find_runs, from_store, merge
    from codesign.review.items import items_of
    from codesign.review.server import Review, serve
    from codesign.review.transfer import export_labels, import_labels

    try:
        parts = ([collect(find_runs(args.paths))] if args.paths else []) + [from_store(uri) for uri in args.store]
        items = items_of(merge(parts))
        if items.is_empty():
            print("error: nothing to review: these runs hold no graded criteria", file=sys.stderr)
            return 2
        review = Review(items, args.reviewer or getpass.getuser() or "reviewer")
        if args.export:
            print(export_labels(review, args.export))
            return 0
        if args.import_:
            saved, refused = import_labels(review, args.import_)
            print(f"imported {saved} labels from {args.import_}")
            for line in refused:
                print(f"  not imported: {line}", file=sys.stderr)
            return 1 if refused else 0
    except CodesignError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    server = serve(review, args.port)
    print(f"reviewing {items.height} criteria as {review.reviewer}: {server.url}/ (Ctrl-C to stop)", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
