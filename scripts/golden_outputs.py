"""Every example's user-visible outputs against the goldens in tests/golden/; `--update` rewrites them.

What runs and how each output is kept: tests/support/golden.py and golden_forms.py. The test
tests/e2e/test_golden_outputs.py compares the same; after a change that is meant to change what
users see, regenerate and commit the goldens with it, so the reviewer sees what changed:

    python -m scripts.golden_outputs              # compare; exit 1 and show what differs
    python -m scripts.golden_outputs --update     # rewrite tests/golden/ (and drop stale goldens)
    python -m scripts.golden_outputs --full DIR   # every output whole into DIR (for diff -r)

`--only NAME ...` runs the subjects that read those examples (stems or file names); `--fresh`
runs every command in a fresh process instead of in-process (slower; the same text).
Run it from the repository's root (it imports tests.support).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from tests.support import golden


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--update", action="store_true", help="rewrite the goldens")
    action.add_argument("--full", type=Path, metavar="DIR", help="every output whole into DIR")
    parser.add_argument("--only", nargs="+", default=[], metavar="NAME", help="example stems")
    parser.add_argument("--jobs", type=int, default=golden.workers(), help="processes")
    parser.add_argument("--fresh", action="store_true", help="one fresh process per command")
    args = parser.parse_args(argv)
    chosen = golden.subjects(args.only)
    start = time.perf_counter()
    if args.full is not None:
        n = golden.write_full(chosen, args.full.resolve(), args.jobs, args.fresh)
        print(f"{n} outputs in {args.full} ({time.perf_counter() - start:.1f} s)")
        return 0
    produced = golden.produce(chosen, args.jobs, args.fresh).texts
    took = (
        f"{len(produced)} outputs of {len(chosen)} subjects in {time.perf_counter() - start:.1f} s"
    )
    if args.update:
        changed = golden.write(produced, chosen, everything=not args.only)
        for path in changed:
            print(f"  {path}")
        print(f"{took}; {len(changed)} golden file(s) written or removed in {golden.GOLDEN}")
        return 0
    kept = golden.read() if not args.only else {}
    for subject in chosen if args.only else ():
        kept.update(golden.read(subject.folder))
    found = golden.differences(kept, produced)
    if found:
        print(golden.failure_message(found), file=sys.stderr)
        return 1
    print(f"{took}: all as the goldens")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
