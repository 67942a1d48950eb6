"""`python -m bench.soak --judge-only`: judge the last soak's saved record again and rewrite its report
(no stack is started); a plain `python -m bench.soak` runs a soak, as `python -m bench soak` does."""

from __future__ import annotations

import argparse
import sys

from bench.common import format_table
from bench.soak import judge_saved_record, run


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak")
    parser.add_argument("--judge-only", action="store_true", help="judge bench/.data/soak-record.json again")
    args = parser.parse_args(argv)
    results = judge_saved_record() if args.judge_only else run()
    print(format_table([("soak", r) for r in results]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
