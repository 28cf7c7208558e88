#!/usr/bin/env python3
"""bench/allreduce_report.py labels each size with the algorithm the kernels' table runs there,
from its own copy of the table in src/kernels/kern_choose.c. This compares the copy with the
library's table, printed by `kern_choose print` (ranks ll_max oneshot_max inplace_min).

usage: kern_table_report.py <kern_choose executable> <bench dir>
"""
import subprocess
import sys


def main():
    exe, bench = sys.argv[1:3]
    sys.path.insert(0, bench)
    import allreduce_report  # noqa: E402 (the bench folder is only known here)

    out = subprocess.run([exe, "print"], check=True, capture_output=True, text=True).stdout
    bad = 0
    for line in out.split("\n"):
        if not line.strip():
            continue
        n, ll, one, lend = (int(x) for x in line.split())
        want = (ll, one, None if lend < 0 else lend)
        got = allreduce_report.table(n)
        if got != want:
            print(f"{n} ranks: allreduce_report.table gives {got}, kern_choose.c {want}")
            bad = 1
    if not bad:
        print("bench/allreduce_report.py's table is kern_choose.c's for 2 to 8 ranks")
    return bad


if __name__ == "__main__":
    sys.exit(main())
