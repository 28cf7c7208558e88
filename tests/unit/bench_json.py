#!/usr/bin/env python3
"""Checks a `mgcomm bench --json` file against its schema (docs/bench.md) and its numbers against
nccl-tests' definitions: algbw = bytes / time, busbw = algbw x the collective's factor.

usage: bench_json.py FILE.json [CSV]   (CSV: the same run's --csv file, which must hold the same rows)
Exit 0 when everything holds; 1 with one line per problem otherwise.
"""
import csv
import json
import sys

TOP = {"mgcomm_version": str, "backend": str, "nranks": int, "ranks_are": str, "api": str,
       "machine": dict, "results": list}
ROW = {"collective": str, "bytes": int, "count": int, "dtype": str, "op": str, "root": int,
       "inplace": bool, "time_us": (int, float), "algbw_gbs": (int, float),
       "busbw_gbs": (int, float), "wrong": int, "algo": str}
ALGOS = {"default", "auto", "nccl", "mgcomm"}
COLLS = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "reduce",
         "gather", "scatter", "sendrecv"}
DIVIDED = {"all_gather", "reduce_scatter", "all_to_all", "gather", "scatter"}
DTYPE_SIZE = {"int8": 1, "uint8": 1, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8,
              "float16": 2, "float32": 4, "float64": 8, "bfloat16": 2, "float8_e4m3": 1,
              "float8_e5m2": 1}


def factor(coll, n):
    if coll == "all_reduce":
        return 2.0 * (n - 1) / n
    if coll in DIVIDED:
        return (n - 1) / n
    return 1.0


def typed(obj, name, want, where, problems):
    if name not in obj:
        problems.append(f"{where}: no field '{name}'")
        return False
    v = obj[name]
    if isinstance(v, bool) and want is not bool:
        problems.append(f"{where}: '{name}' is a boolean")
        return False
    if not isinstance(v, want):
        problems.append(f"{where}: '{name}' is {type(v).__name__}, want {want}")
        return False
    return True


def check(doc, problems):
    for name, want in TOP.items():
        typed(doc, name, want, "top", problems)
    if problems:
        return
    if doc["backend"] not in ("host", "nccl"):
        problems.append(f"backend '{doc['backend']}'")
    if doc["ranks_are"] not in ("threads", "gpus", "processes"):
        problems.append(f"ranks_are '{doc['ranks_are']}'")
    if doc["api"] not in ("comm", "world"):
        problems.append(f"api '{doc['api']}'")
    typed(doc["machine"], "host", str, "machine", problems)
    typed(doc["machine"], "gpus", list, "machine", problems)
    n = doc["nranks"]
    if n < 1:
        problems.append(f"nranks {n}")
    if not doc["results"]:
        problems.append("no results")
    for i, r in enumerate(doc["results"]):
        where = f"results[{i}]"
        if not all([typed(r, k, t, where, problems) for k, t in ROW.items()]):
            continue
        c = r["collective"]
        if c not in COLLS:
            problems.append(f"{where}: collective '{c}'")
            continue
        size = DTYPE_SIZE.get(r["dtype"])
        if size is None:
            problems.append(f"{where}: dtype '{r['dtype']}'")
            continue
        bytes_ = r["count"] * size * (n if c in DIVIDED else 1)
        if r["bytes"] != bytes_:
            problems.append(f"{where}: bytes {r['bytes']}, count gives {bytes_}")
        if r["time_us"] <= 0:
            problems.append(f"{where}: time_us {r['time_us']}")
            continue
        algbw = bytes_ / 1e9 / (r["time_us"] * 1e-6)
        if abs(r["algbw_gbs"] - algbw) > 1e-4 * algbw + 1e-9:
            problems.append(f"{where}: algbw_gbs {r['algbw_gbs']}, bytes/time gives {algbw}")
        busbw = r["algbw_gbs"] * factor(c, n)
        if abs(r["busbw_gbs"] - busbw) > 1e-4 * busbw + 1e-9:
            problems.append(f"{where} ({c}, {n} ranks): busbw_gbs {r['busbw_gbs']}, "
                            f"want algbw x {factor(c, n)} = {busbw}")
        if r["wrong"] < 0:
            problems.append(f"{where}: wrong {r['wrong']}")
        if r["algo"] not in ALGOS or (r["algo"] != "default" and doc["backend"] != "nccl"):
            problems.append(f"{where}: algo '{r['algo']}' on the {doc['backend']} backend")
        if (r["op"] == "none") == (c in ("all_reduce", "reduce", "reduce_scatter")):
            problems.append(f"{where}: op '{r['op']}' for {c}")
        if (r["root"] == -1) != (c not in ("broadcast", "reduce", "gather", "scatter")):
            problems.append(f"{where}: root {r['root']} for {c}")


def check_csv(path, doc, problems):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if len(rows) != len(doc["results"]):
        problems.append(f"{path}: {len(rows)} rows, the JSON has {len(doc['results'])}")
        return
    for i, (c, j) in enumerate(zip(rows, doc["results"])):
        for k in ROW:
            want = j[k]
            got = c.get(k)
            if isinstance(want, bool):
                same = got == ("true" if want else "false")
            elif isinstance(want, (int, float)) and got is not None:
                same = abs(float(got) - want) <= 1e-9 * abs(want)
            else:
                same = got == want
            if not same:
                problems.append(f"{path} row {i}: {k} = {got}, the JSON has {want}")


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__.strip().splitlines()[2])
        return 2
    with open(sys.argv[1]) as f:
        doc = json.load(f)
    problems = []
    check(doc, problems)
    if not problems and len(sys.argv) == 3:
        check_csv(sys.argv[2], doc, problems)
    for p in problems:
        print(p)
    if not problems:
        print(f"{sys.argv[1]}: {len(doc['results'])} rows conform")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
