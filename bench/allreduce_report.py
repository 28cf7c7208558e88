#!/usr/bin/env python3
"""allreduce_report.py -- the report of bench/allreduce_vs_nccl.sh from the logs it kept.

    allreduce_report.py LOGS OUT.md REPEATS "GPU COUNTS" TESTS.txt

LOGS holds, per GPU count g and run r: plain-NAME-g-r.csv (`mgcomm bench --csv`, NAME one of
VARIANTS), kern-bB-g-r.txt (test_gpu_kernels bench with B blocks) and nt-g-r.txt (nccl-tests).
Writes OUT.md: per g the targets (the table against NCCL plain; the table's algorithm under a
graph against nccl-tests -R 2 -G), the crossover tables (every variant's median per size, the
fastest of ours in bold) and the sizes for src/kernels/kern_choose.c they suggest. Exit 1 when a
target was missed.
"""
import csv
import glob
import os
import re
import statistics
import subprocess
import sys

VARIANTS = ["nccl", "auto", "ll", "one-shot", "two-shot", "one-shot_lent", "two-shot_lent",
            "two-shot_b128", "two-shot_lent_b128"]
OURS = VARIANTS[2:]  # the algorithms of ours, each forced (auto, the table, runs one of them)
GRAPH = ["ll", "one-shot", "two-shot", "one-shot_lent", "two-shot_lent", "two-shot_b128",
         "two-shot_lent_b128"]


def med(v):
    return statistics.median(v) if v else float("nan")


def bench_csv(path, inplace):
    """bytes -> time_us of the all_reduce, in place or out of place."""
    want = "true" if inplace else "false"
    with open(path) as f:
        return {int(r["bytes"]): float(r["time_us"]) for r in csv.DictReader(f)
                if r["inplace"] == want}


def kern(path, g, suffix):
    """(row name + suffix, bytes) -> graph us of test_gpu_kernels bench, for g ranks."""
    d = {}
    for line in open(path):
        m = re.match(r"\| *(\d+) \| ([a-z -]+?) \| (\d+) \| [\d.]+ \| ([\d.]+) \|", line)
        if m and int(m.group(1)) == g:
            d[(m.group(2).replace(" ", "_") + suffix, int(m.group(3)))] = float(m.group(4))
    return d


def ncclt(path):
    """bytes -> nccl-tests' in-place time us."""
    d = {}
    for line in open(path):
        f = line.split()
        if len(f) >= 13 and f[0].isdigit() and f[2] == "float":
            d[int(f[0])] = float(f[9])
    return d


def table(g):
    """kern_choose.c's table for g ranks: (ll_max, oneshot_max, inplace_min or None: never).
    A copy: tests/unit/kern_table_report.py fails when it differs from the library's."""
    if g <= 2:
        return 256 << 10, 4 << 20, None
    if g <= 4:
        return 64 << 10, 256 << 10, None
    return 16 << 10, 256 << 10, 1 << 20


def table_algo(g, b):
    """What the table runs for an in-place message of b bytes of mg_mem_alloc."""
    ll, one, lend = table(g)
    if b <= ll:
        return "ll"
    if b <= one:
        return "one-shot"  # in place: one-shot cannot lend
    return "two-shot_lent" if lend is not None and b >= lend else "two-shot"


def crossover(title, sizes, cols, get, note):
    """Every column's time per size, the fastest of ours in bold. Returns (lines, fastest)."""
    lines = ["### " + title, ""] + ([note, ""] if note else []) + [
        "| bytes | " + " | ".join(c.replace("_", " ") for c in cols) + " | fastest of ours |",
        "|---:|" + "---:|" * len(cols) + "---|"]
    fastest = {}
    for b in sizes:
        vals = [(c, get(c, b)) for c in cols]
        ours = {c: v for c, v in vals if c in OURS and v == v}
        win = min(ours, key=ours.get) if ours else None
        fastest[b] = win
        cells = ["" if v != v else ("**%.2f**" % v if c == win else "%.2f" % v) for c, v in vals]
        lines.append("| %d | %s | %s |" % (b, " | ".join(cells), (win or "").replace("_", " ")))
    return lines + [""], fastest


def suggest(fastest):
    """The sizes the fastest variants suggest: the largest where ll wins, the largest where a
    one-shot wins, the smallest from which a lent variant wins."""
    sizes = sorted(fastest)
    ll = max([b for b in sizes if fastest[b] == "ll"] or [0])
    one = max([b for b in sizes if (fastest[b] or "").startswith("one-shot")] or [0])
    lent = min([b for b in sizes if "lent" in (fastest[b] or "")] or [0])
    return "ll_max = %d, oneshot_max = %d, inplace_min = %s" % (ll, max(one, ll),
                                                               lent if lent else "never")


def main():
    logs, dst, repeats, counts, tests = sys.argv[1:6]
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                              "--format=csv,noheader"], capture_output=True,
                             text=True).stdout.strip().splitlines()
    except OSError:
        smi = []
    out = ["# mgcomm's all-reduce kernels against NCCL", "",
           "- machine: %d x %s" % (len(smi), smi[0] if smi else "?"),
           "- commit: %s; %s runs per figure, medians" % (os.environ.get("SOURCE_COMMIT", "?"),
                                                          repeats),
           "- plain: `mgcomm bench -g N -c all_reduce --inplace both` (float32 sum, buffers of "
           "mg_mem_alloc, one thread posts every rank): MGCOMM_ALGO=nccl, the table (auto), and "
           "each algorithm forced (bench/allreduce_vs_nccl.sh lists the variables); graph: our "
           "kernels in CUDA graphs of 100 (test_gpu_kernels bench, 64 and 128 blocks) against "
           "nccl-tests `all_reduce_perf -R 2 -G 100` (in place)", "",
           "## Tests", ""] + ["    " + l.rstrip() for l in open(tests)] + [""]
    missed = 0
    for g in map(int, counts.split()):
        plain = {(v, ip): [bench_csv(p, ip) for p in
                           sorted(glob.glob("%s/plain-%s-%d-*.csv" % (logs, v, g)))]
                 for v in VARIANTS for ip in (True, False)}

        def pm(v, b, ip=True):
            return med([d[b] for d in plain[(v, ip)] if b in d])

        kg = [kern(p, g, "" if blocks == 64 else "_b128") for blocks in (64, 128)
              for p in sorted(glob.glob("%s/kern-b%d-%d-*.txt" % (logs, blocks, g)))]

        def km(name, b):
            return med([d[(name, b)] for d in kg if (name, b) in d])

        nt = [ncclt(p) for p in sorted(glob.glob("%s/nt-%d-*.txt" % (logs, g)))]
        sizes = sorted(plain[("nccl", True)][0]) if plain[("nccl", True)] else []
        out += ["## %d GPUs" % g, "",
                "| bytes | NCCL plain us | mgcomm plain us (table) | ratio | target | table's "
                "algorithm in graph us | nccl-tests -R 2 -G us | ratio | target |",
                "|---:|---:|---:|---:|---|---:|---:|---:|---|"]
        for b in sizes:
            n, m = pm("nccl", b), pm("auto", b)
            ratio = m / n
            lim = 0.5 if b <= 256 << 10 else 0.7
            missed += not ratio <= lim
            algo = table_algo(g, b)
            kv, nv = km(algo, b), med([d[b] for d in nt if b in d])
            gcell = "%.2f (%s)" % (kv, algo.replace("_", " ")) if kv == kv else ""
            ntcell = gr = gt = ""
            if kv == kv and nv == nv and nv > 0:  # nccl-tests prints 0.00 for a no-op
                ntcell, gr = "%.2f" % nv, "%.2f" % (kv / nv)
                gt = "ok" if kv <= nv else "MISSED (<= 1)"
                missed += kv > nv
            out.append("| %d | %.2f | %.2f | %.2f | %s | %s | %s | %s | %s |" % (
                b, n, m, ratio, "ok" if ratio <= lim else "MISSED (<= %.1f)" % lim, gcell,
                ntcell, gr, gt))
        out.append("")
        lines, fastest_in = crossover(
            "%d GPUs, plain, in place (us)" % g, sizes,
            [v for v in VARIANTS if v != "one-shot_lent"], lambda c, b: pm(c, b, True),
            "One-shot cannot lend a buffer it overwrites: in place it is staged (no 'one-shot "
            "lent' column).")
        out += lines
        lines, _ = crossover("%d GPUs, plain, out of place (us)" % g, sizes, VARIANTS,
                             lambda c, b: pm(c, b, False), "")
        out += lines
        gsizes = sorted({b for d in kg for (_, b) in d})
        lines, fastest_graph = crossover(
            "%d GPUs, CUDA graph (us)" % g, gsizes, GRAPH, km,
            "test_gpu_kernels bench: staged rows in place, one-shot lent out of place, two-shot "
            "lent in place; ll up to 1 MiB (its area in that test).")
        out += lines
        beat = [b for b in sizes if min([pm(c, b) for c in OURS if pm(c, b) == pm(c, b)] or
                                          [float("inf")]) < pm("nccl", b)]
        out += ["Suggested for kern_choose.c, %d ranks: from the plain in-place crossover %s; "
                "from the graph crossover %s; max_bytes = %d (the largest size at which the "
                "fastest of ours beat NCCL in place)." % (
                    g, suggest(fastest_in), suggest(fastest_graph), max(beat or [0])), ""]
    out.append("Targets missed: %d" % missed)
    open(dst, "w").write("\n".join(out) + "\n")
    print("\n".join(out))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
