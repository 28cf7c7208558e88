"""`mgcomm topo` on the simulated driver and without one (tests/unit/p2p.cmake).

Usage: p2p_cli.py <mgcomm> <libcuda.so.1 of the simulator> <its libnvidia-ml.so.1>

Without a driver, and with a driver but no GPU: one line that says why, exit 0, and the JSON
form with device_count 0. With 4 simulated GPUs (an asymmetric matrix, an enable that fails, a
pair whose copies arrive corrupted): the matrices, the verdicts, the islands and the failures
in the text, and the JSON form checked field by field against docs/p2p.md's schema. With the
simulated NVML: the link matrix as nvidia-smi prints it.
"""
import json
import os
import subprocess
import sys

MG, SIM, NVML = sys.argv[1], sys.argv[2], sys.argv[3]


def run(args, nvml="/nonexistent/libnvidia-ml.so.1", **env):
    e = dict(os.environ, MGCOMM_NVML_LIBRARY=nvml)
    e.update(env)
    p = subprocess.run([MG, "topo"] + args, env=e, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def check(cond, what, out=""):
    if not cond:
        print("FAIL:", what, "\n---\n" + out)
        sys.exit(1)


# No driver, no GPU: one line, exit 0.
for env, why in (({"MGCOMM_CUDA_LIBRARY": "/nonexistent/libcuda.so.1"}, "MGCOMM_CUDA_LIBRARY"),
                 ({"MGCOMM_CUDA_LIBRARY": SIM, "MGSIM_DEVICES": "0"}, "reports no GPU")):
    rc, out, err = run([], **env)
    check(rc == 0, "no GPU must exit 0", out + err)
    check(out.count("\n") == 1 and out.startswith("mgcomm topo: no GPU: ") and why in out,
          "no GPU must be one line saying why", out)
    rc, out, err = run(["--json"], **env)
    j = json.loads(out)
    check(rc == 0 and j["format"] == "mgcomm-topo" and j["version"] == 1, "JSON head", out)
    check(j["device_count"] == 0 and why in j["reason"] and j["pairs"] == [], "JSON no GPU", out)

rc, out, err = run(["--bogus"])
check(rc == 2 and "unknown option" in err, "a bad option is a usage error", err)
rc, out, err = run(["--bytes", "2G"])
check(rc == 2, "--bytes above 1G is a usage error", err)

sim = {"MGCOMM_CUDA_LIBRARY": SIM, "MGSIM_DEVICES": "4",
       "MGSIM_PEERS": "0>1,1>0,1>2,2>3,3>2", "MGSIM_PEER_ENABLE_FAIL": "1>2",
       "MGSIM_PEER_CORRUPT": "2>3"}
rc, out, err = run(["--bytes", "64K"], **sim)
check(rc == 0, "4 GPUs: exit 0", out + err)
lines = out.splitlines()
acc = lines.index("Peer access (row maps column's memory)")
check(lines[acc + 2].split() == ["GPU0", "X", "OK", "NS", "NS"], "peer access row 0", out)
check(lines[acc + 3].split() == ["GPU1", "OK", "X", "FAIL", "NS"], "peer access row 1", out)
check(lines[acc + 4].split() == ["GPU2", "NS", "NS", "X", "off"], "peer access row 2", out)
pro = [i for i, l in enumerate(lines) if l.startswith("Probe (65536 bytes")][0]
check(lines[pro + 4].split() == ["GPU2", "-", "-", "OK", "FAIL"], "probe row 2", out)
check(lines[pro + 5].split() == ["GPU3", "-", "-", "OK", "OK"], "probe row 3", out)
check("Bandwidth" not in out, "no bandwidth without --bandwidth", out)
check("Islands: 2\n  island 0: GPU0 GPU1\n  island 1: GPU2 GPU3\n" in out, "islands", out)
check("GPU1 -> GPU2: enabling peer access 1 -> 2" in out and "TOO_MANY_PEERS" in out,
      "the failed enable is named", out)
check("GPU2 -> GPU3: the bytes copied 2 -> 3 differ" in out, "the failed probe is named", out)

rc, out, err = run(["--json", "--bandwidth", "--bytes", "64K"], **sim)
check(rc == 0, "JSON exit 0", out + err)
j = json.loads(out)
check(set(j) == {"format", "version", "mgcomm", "device_count", "reason", "links_from",
                 "probe_bytes", "timed", "devices", "pairs", "islands"}, "top-level keys", out)
check(j["device_count"] == 4 and j["reason"] is None and j["links_from"] == "driver", "head", out)
check(j["probe_bytes"] == 65536 and j["timed"] is True, "probe settings", out)
check([d["island"] for d in j["devices"]] == [0, 0, 1, 1], "device islands", out)
check(j["islands"] == [[0, 1], [2, 3]], "islands", out)
check(len(j["pairs"]) == 16, "16 ordered pairs", out)
keys = {"from", "to", "link", "link_type", "nvlinks", "perf_rank", "native_atomics",
        "array_access", "can_access", "enabled", "enable_status", "probe", "path", "gbps",
        "reason"}
pairs = {(p["from"], p["to"]): p for p in j["pairs"]}
for (a, b), p in pairs.items():
    check(set(p) == keys, "pair keys", json.dumps(p))
    check(p["link"] == ("X" if a == b else "?"), "link label", json.dumps(p))
p = pairs[(1, 2)]
check(p["can_access"] and not p["enabled"] and p["enable_status"] == "MG_ERR_BACKEND" and
      p["path"] == "staged" and p["probe"] == "not_run" and "TOO_MANY_PEERS" in p["reason"],
      "pair 1 -> 2", json.dumps(p))
p = pairs[(2, 3)]
check(p["probe"] == "failed" and p["path"] == "staged" and p["gbps"] is None and
      "differ" in p["reason"], "pair 2 -> 3", json.dumps(p))
p = pairs[(3, 2)]
check(p["probe"] == "ok" and p["path"] == "peer" and p["gbps"] > 0 and p["reason"] is None,
      "pair 3 -> 2", json.dumps(p))
p = pairs[(0, 2)]
check(not p["can_access"] and p["enable_status"] == "MG_OK" and p["path"] == "staged",
      "pair 0 -> 2", json.dumps(p))
check(pairs[(0, 0)]["path"] == "local" and pairs[(0, 0)]["link_type"] == "self", "self", out)
# Links from the simulated NVML: as nvidia-smi topo -m prints them.
wired = {"MGCOMM_CUDA_LIBRARY": SIM, "MGSIM_DEVICES": "4", "MGSIM_NVLINKS": "0-1:4,2-3:2",
         "MGSIM_PCIE": "0-2:SYS,1-3:NODE,0-3:PIX"}
rc, out, err = run([], nvml=NVML, **wired)
lines = out.splitlines()
lk = lines.index("Links (NVML)")
check([l.split() for l in lines[lk + 2:lk + 6]] ==
      [["GPU0", "X", "NV4", "SYS", "PIX"], ["GPU1", "NV4", "X", "PHB", "NODE"],
       ["GPU2", "SYS", "PHB", "X", "NV2"], ["GPU3", "PIX", "NODE", "NV2", "X"]], "link matrix", out)
rc, out, err = run(["--json"], nvml=NVML, **wired)
j = json.loads(out)
pairs = {(p["from"], p["to"]): p for p in j["pairs"]}
check(j["links_from"] == "nvml", "links from NVML", out)
check(pairs[(0, 1)]["link"] == "NV4" and pairs[(0, 1)]["link_type"] == "nvlink" and
      pairs[(0, 1)]["nvlinks"] == 4, "pair 0 -> 1 over NVLink", out)
check(pairs[(1, 3)]["link"] == "NODE" and pairs[(1, 3)]["link_type"] == "node", "1 -> 3", out)
print("p2p_cli: ok")
