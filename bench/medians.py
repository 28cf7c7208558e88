"""medians.py -- the runs that bench/lib.sh's mg_alternate kept, reduced to one value per row.

load(DIR, NAME, R) reads DIR/NAME-1.json .. DIR/NAME-R.json (the JSON of `mgcomm bench` or of
bench/mpi_peer.c) and returns (the first run's document, rows), where rows maps
(collective, inplace, bytes) to the medians over the runs of that row's time_us and busbw_gbs
(each run's value is already the median over its iterations), and "runs": how many runs had it.
"""
import json
import statistics


def load(directory, name, repeats):
    docs = []
    for r in range(1, repeats + 1):
        with open(f"{directory}/{name}-{r}.json") as f:
            docs.append(json.load(f))
    seen = {}
    for doc in docs:
        for x in doc["results"]:
            seen.setdefault((x["collective"], x["inplace"], x["bytes"]), []).append(x)
    rows = {key: {"time_us": statistics.median(x["time_us"] for x in xs),
                  "busbw_gbs": statistics.median(x["busbw_gbs"] for x in xs),
                  "runs": len(xs)}
            for key, xs in seen.items()}
    return docs[0], rows
