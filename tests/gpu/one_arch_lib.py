#!/usr/bin/env python3
"""one_arch_lib.py -- a copy of a CUDA shared library (libnccl) that keeps the device code of one
GPU architecture only, so that xz brings it under what a device call can carry (64 MiB).

    tests/gpu/one_arch_lib.py SRC DST SM        e.g. libnccl.so.2 out/libnccl.so.2 90

Why: NCCL's newer releases (2.28.9 from the CUDA 13.0 toolkit, for the revoke path of NCCL
>= 2.28.7) come as one 218 MB file holding code for seven architectures; the GPU machines have
2.28.3. The copy is the same file, byte for byte, except that every embedded fat binary entry
built for another architecture has its payload zeroed (its header kept, so every offset and the
file's layout stay as they were). The driver loads the entry of the GPU's own architecture and
never reads the others. The fat binaries live in the sections .nv_fatbin and __nv_relfatbin
(cudart registers fat binaries from both).

Fat binary layout (as documented by the CUDA binary utilities and seen in these files): a header
{u32 magic 0xBA55ED50, u16 version, u16 header size, u64 size of the entries}, then entries
{u16 kind, u16 version, u32 header size, u64 payload size, ..., u32 architecture at offset 28}
each followed by its payload.
"""
import struct
import subprocess
import sys

FATBIN_MAGIC = 0xBA55ED50
SECTIONS = (".nv_fatbin", "__nv_relfatbin")


def sections(path):
    """{name: (file offset, size)} of the fat binary sections, from readelf."""
    found = {}
    out = subprocess.check_output(["readelf", "-S", "-W", path], text=True)
    for line in out.splitlines():
        if "]" not in line:
            continue
        f = line.split("]", 1)[1].split()
        if len(f) >= 5 and f[0] in SECTIONS:
            found[f[0]] = (int(f[3], 16), int(f[4], 16))
    return found


def prune(data, off, size, keep, kept, zeroed):
    """Zeroes, in place, the payloads of the entries not built for sm_<keep> in one section."""
    pos, end = off, off + size
    fatbins = 0
    while pos + 16 <= end:
        magic, _, hsize, fsize = struct.unpack_from("<IHHQ", data, pos)
        if magic != FATBIN_MAGIC:
            pos += 8  # fat binaries are 8-byte aligned; padding lies between them
            continue
        fatbins += 1
        e, fend = pos + hsize, pos + hsize + fsize
        if fend > end:
            raise ValueError(f"fat binary at {pos:#x} runs past its section")
        while e < fend:
            kind, _, ehsize, psize = struct.unpack_from("<HHIQ", data, e)
            arch = struct.unpack_from("<I", data, e + 28)[0]
            tally = kept if arch == keep else zeroed
            tally[(kind, arch)] = tally.get((kind, arch), 0) + psize
            if arch != keep:
                data[e + ehsize:e + ehsize + psize] = bytes(psize)
            e += ehsize + psize
        pos = fend
    return fatbins


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__.split("\n\n")[1])
    src, dst, keep = sys.argv[1], sys.argv[2], int(sys.argv[3])
    secs = sections(src)
    if not secs:
        sys.exit(f"{src}: no fat binary section ({', '.join(SECTIONS)})")
    data = bytearray(open(src, "rb").read())
    kept, zeroed = {}, {}
    fatbins = sum(prune(data, off, size, keep, kept, zeroed) for off, size in secs.values())
    if not kept:
        sys.exit(f"{src}: no device code for sm_{keep}; nothing would run")
    with open(dst, "wb") as f:
        f.write(data)
    kinds = {1: "ptx", 2: "elf"}
    show = lambda t: ", ".join(f"{kinds.get(k, k)} sm_{a} {n / 2**20:.1f} MiB" for (k, a), n in sorted(t.items()))
    print(f"{dst}: {fatbins} fat binaries; kept {show(kept)}; zeroed {show(zeroed)}")


if __name__ == "__main__":
    main()
