#!/usr/bin/env python3
"""info_cli_test.py CASE -- `mgcomm info` as a user runs it (the binary is $MGCOMM).

One CASE per CTest entry:
  json          --json parses, and its content agrees with itself and with the machine
  json-config   --json --config: the parameters only
  json-escape   a library path full of quotes, backslashes, control bytes and invalid UTF-8
                still gives valid JSON that carries the path back
  explicit      MGCOMM_NCCL_LIBRARY=/does/not/exist: NCCL not loaded, said so, features off
  text          the text report has every section and exits 0
  help          --help exits 0 and names the options
  bad-option    an unknown option: exit 2, one line on stderr, nothing on stdout
  config-bad-value    MGCOMM_TIMEOUT=abc: a warning naming the variable and the default used
  config-unknown-var  MGCOMM_TIMEOTU=5: "did you mean MGCOMM_TIMEOUT"
  config-secret MGCOMM_JOB_TOKEN is set but never printed, in text or JSON
"""
import json
import os
import subprocess
import sys

MGCOMM = os.environ.get("MGCOMM")


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def run(args, env_extra=None, env_remove=(), expect_rc=0):
    env = {k: v for k, v in os.environb.items()}
    for k in env_remove:
        env.pop(k.encode(), None)
    for k, v in (env_extra or {}).items():
        env[k.encode() if isinstance(k, str) else k] = v.encode() if isinstance(v, str) else v
    p = subprocess.run([MGCOMM] + args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=120)
    out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    if p.returncode != expect_rc:
        fail("mgcomm %s: exit %d, expected %d\nstdout:\n%s\nstderr:\n%s"
             % (" ".join(args), p.returncode, expect_rc, out[-3000:], err[-3000:]))
    return p.stdout, out, err


def load_json(raw):
    try:
        return json.loads(raw.decode("utf-8"))  # strict: invalid UTF-8 or JSON raises
    except (UnicodeDecodeError, ValueError) as e:
        fail("not valid JSON: %s\n%s" % (e, raw[:3000]))


def check_params(doc):
    params = doc["parameters"]
    names = [p["name"] for p in params]
    check(len(names) == len(set(names)), "duplicate parameters: %s" % names)
    for want in ("MGCOMM_DEBUG", "MGCOMM_TIMEOUT", "MGCOMM_BACKEND", "MGCOMM_NCCL_LIBRARY",
                 "MGCOMM_CUDA_LIBRARY", "MGCOMM_NVSHMEM_LIBRARY", "MGCOMM_NVML_LIBRARY"):
        check(want in names, "parameter %s missing" % want)
    for p in params:
        for key in ("name", "type", "value", "default", "source", "allowed", "help"):
            check(isinstance(p.get(key), str), "parameter %s: %s is not a string" % (p.get("name"), key))
        check(p["source"] in ("environment", "default"), "bad source %r" % p["source"])
        check(p["help"] != "", "parameter %s has no help" % p["name"])
    return {p["name"]: p for p in params}


def case_json():
    raw, _, _ = run(["info", "--json"])
    doc = load_json(raw)
    for key in ("mgcomm", "libraries", "cuda", "devices", "peer_access", "features", "backend",
                "parameters"):
        check(key in doc, "key %s missing" % key)
    check(doc["mgcomm"]["version"] == doc["mgcomm"]["header_version"], "library and header differ")
    libs = doc["libraries"]
    check([l["id"] for l in libs] == ["cuda", "nccl", "nvshmem", "nvml"], "library ids")
    check([l["name"] for l in libs] ==
          ["libcuda.so.1", "libnccl.so.2", "libnvshmem_host.so.3", "libnvidia-ml.so.1"], "sonames")
    for l in libs:
        att = l["attempts"]
        check(len(att) >= 1, "%s: no attempt recorded" % l["id"])
        for a in att:
            check(a["path"] and a["outcome"], "%s: empty attempt %r" % (l["id"], a))
        outcomes = [a["outcome"] for a in att]
        if l["loaded"]:
            check(l["path"] and l["path"].startswith("/"), "%s: loaded without a path" % l["id"])
            check(l["error"] == "", "%s: loaded with an error" % l["id"])
            check(outcomes[-1] == "loaded" and outcomes.count("loaded") == 1,
                  "%s: the last attempt, and only it, is 'loaded': %s" % (l["id"], outcomes))
        else:
            check(l["path"] is None and l["version"] == 0, "%s: not loaded but has a path" % l["id"])
            check(l["name"] in l["error"], "%s: error does not name the library" % l["id"])
            check("loaded" not in outcomes, "%s: 'loaded' outcome but not loaded" % l["id"])
            # every candidate tried is named in the error (the list is the point)
            for a in att:
                check(a["path"] in l["error"], "%s: %s not in the error" % (l["id"], a["path"]))
    cuda = doc["cuda"]
    check(cuda["driver_loaded"] == libs[0]["loaded"], "cuda.driver_loaded disagrees")
    n = cuda["device_count"]
    check(len(doc["devices"]) == n, "device_count %d but %d devices" % (n, len(doc["devices"])))
    check(len(doc["peer_access"]) == n and all(len(r) == n for r in doc["peer_access"]),
          "peer_access is not %dx%d" % (n, n))
    for i, d in enumerate(doc["devices"]):
        check(d["ordinal"] == i, "device ordinals")
        if d["status"] == "MG_OK":
            check(d["name"] and d["total_memory"] > 0 and d["cc_major"] >= 3, "device %d: %r" % (i, d))
            check(isinstance(d["multicast_supported"], bool), "multicast is a boolean")
            check(doc["peer_access"][i][i] is True, "a device can access itself")
    if not libs[0]["loaded"]:
        check(n == 0 and cuda["device_status"] == "MG_ERR_BACKEND_UNAVAILABLE",
              "no driver: no devices and BACKEND_UNAVAILABLE")
    feats = doc["features"]
    names = [f["name"] for f in feats]
    check(names == ["avg", "premul_sum", "config", "split", "register", "fp8", "window", "shrink",
                    "alltoall_gather_scatter", "revoke", "grow", "properties", "window_pointers",
                    "signals", "suspend", "params", "kernels"], "feature names: %s" % names)
    nccl = libs[1]
    for f in feats:
        if f["name"] == "kernels":  # the driver's: mgcomm's own kernels (docs/kernels.md)
            check(f["library"] == "cuda", "feature library")
            check(libs[0]["loaded"] or f["available"] is False, "kernels available without CUDA")
            continue
        check(f["library"] == "nccl", "feature library")
        if not nccl["loaded"]:
            check(f["available"] is False, "%s available without NCCL" % f["name"])
        else:
            check(f["available"] == (nccl["version"] >= f["min_version"]),
                  "%s: available=%s with NCCL %d (min %d)" % (f["name"], f["available"],
                                                           nccl["version"], f["min_version"]))
    b = doc["backend"]
    check(b["status"] == "MG_OK" and b["resolved"] in ("host", "nccl") and b["reason"],
          "backend: %r" % b)
    if not libs[0]["loaded"] or not nccl["loaded"]:
        check(b["resolved"] == "host", "no driver or no NCCL: auto must be host")
    check_params(doc)
    print("ok: %d libraries, %d devices, backend %s" % (len(libs), n, b["resolved"]))


def case_json_config():
    raw, _, _ = run(["info", "--json", "--config"], {"MGCOMM_TIMEOUT": "12.5"})
    doc = load_json(raw)
    check(set(doc) == {"mgcomm", "parameters"}, "keys: %s" % sorted(doc))
    p = check_params(doc)["MGCOMM_TIMEOUT"]
    check(p["value"] == "12.5" and p["source"] == "environment" and p["default"] == "600",
          "MGCOMM_TIMEOUT: %r" % p)


def case_json_escape():
    nasty = b'/tmp/mgcomm "quoted" back\\slash\ttab\nnewline\x01ctl\x7f\xff\xfe-bad-utf8 \xc3\xa9 lib.so'
    raw, _, _ = run(["info", "--json"], {b"MGCOMM_NCCL_LIBRARY": nasty})
    doc = load_json(raw)
    nccl = doc["libraries"][1]
    check(not nccl["loaded"], "a path that does not exist loaded")
    got = nccl["attempts"][0]["path"]
    want = nasty.decode("utf-8", "replace")
    check(got == want, "path did not round-trip:\n got %r\nwant %r" % (got, want))
    check("\u00e9" in got and "\ufffd" in got, "valid UTF-8 kept, invalid bytes replaced")


def case_explicit():
    raw, _, _ = run(["info", "--json"], {"MGCOMM_NCCL_LIBRARY": "/does/not/exist/libnccl.so.2"})
    doc = load_json(raw)
    nccl = doc["libraries"][1]
    check(not nccl["loaded"], "loaded from a path that does not exist")
    check(len(nccl["attempts"]) == 1, "an explicit path must be the only candidate")
    check("MGCOMM_NCCL_LIBRARY" in nccl["error"] and "no other copy" in nccl["error"],
          "error: %s" % nccl["error"])
    check(not any(f["available"] for f in doc["features"]), "features without NCCL")
    check(doc["backend"]["resolved"] == "host", "auto without NCCL is host")


def case_text():
    _, out, _ = run(["info"])
    for want in ("mgcomm ", "Libraries", "CUDA driver (libcuda.so.1)", "NCCL (libnccl.so.2)",
                 "NVSHMEM (libnvshmem_host.so.3)", "NVML (libnvidia-ml.so.1)", "CUDA driver:",
                 "GPUs:", "Features", "fp8", "revoke", "Backend for MG_BACKEND_AUTO:"):
        check(want in out, "%r missing from:\n%s" % (want, out))


def case_help():
    _, out, err = run(["info", "--help"])
    check("--json" in out and "--config" in out and err == "", "help: %s %s" % (out, err))


def case_bad_option():
    _, out, err = run(["info", "--jsn"], expect_rc=2)
    check(out == "", "stdout not empty: %r" % out)
    lines = err.splitlines()
    check(len(lines) == 1 and "--jsn" in lines[0], "stderr: %r" % err)


def case_config_bad_value():
    _, out, err = run(["info", "--config"], {"MGCOMM_TIMEOUT": "abc"})
    check("MGCOMM_TIMEOUT='abc' is not valid" in err and "using the default 600" in err,
          "warning missing from stderr: %r" % err)
    check("MGCOMM_TIMEOUT=600\n" in out, "the default is not the value in effect:\n%s" % out)
    line = out.split("MGCOMM_TIMEOUT=600\n", 1)[1].splitlines()[0]
    check("source: default" in line, "source: %r" % line)


def case_config_unknown_var():
    _, out, err = run(["info", "--config"], {"MGCOMM_TIMEOTU": "5"})
    check("unknown variable MGCOMM_TIMEOTU" in err and "did you mean MGCOMM_TIMEOUT?" in err,
          "stderr: %r" % err)
    check("MGCOMM_TIMEOTU" not in out, "an unknown variable is listed")


def case_config_secret():
    secret = "s3cr3t-token-value"
    for args in (["info", "--config"], ["info", "--json", "--config"]):
        _, out, err = run(args, {"MGCOMM_JOB_TOKEN": secret})
        check(secret not in out and secret not in err, "%s printed the job token" % args)
        check("MGCOMM_JOB_TOKEN" in out, "%s does not list MGCOMM_JOB_TOKEN" % args)
        check("not shown" in out, "%s does not say the token is set" % args)


CASES = {
    "json": case_json, "json-config": case_json_config, "json-escape": case_json_escape,
    "explicit": case_explicit, "text": case_text, "help": case_help,
    "bad-option": case_bad_option, "config-bad-value": case_config_bad_value,
    "config-unknown-var": case_config_unknown_var, "config-secret": case_config_secret,
}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        fail("usage: info_cli_test.py " + "|".join(CASES))
    if not MGCOMM or not os.access(MGCOMM, os.X_OK):
        fail("$MGCOMM must name the mgcomm binary")
    CASES[sys.argv[1]]()
    print("PASS")
