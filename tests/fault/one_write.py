#!/usr/bin/env python3
"""one_write.py STATUS COUNT REGEX -- COMMAND...

Runs COMMAND with its stderr on a Unix SOCK_SEQPACKET socket, which keeps the boundaries of
write(2): each write arrives as one datagram. COMMAND must exit with STATUS, and exactly COUNT
(N+: at least N) of the datagrams must be, whole, one line that REGEX matches from its start. A
message written in pieces (prefix, text, newline) or held in a stdio buffer with other output
matches none. Exit 0 when all holds, else 1 with every datagram shown.
"""
import re
import socket
import subprocess
import sys


def main():
    args = sys.argv[1:]
    if len(args) < 5 or args[3] != "--":
        sys.exit(__doc__)
    want_status, rx = int(args[0]), re.compile(args[2])
    at_least = args[1].endswith("+")
    want_count = int(args[1].rstrip("+"))
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    proc = subprocess.Popen(args[4:], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=theirs.fileno())
    theirs.close()
    grams = []
    while True:
        g = ours.recv(1 << 16)
        if not g:  # every writer closed its end
            break
        grams.append(g.decode(errors="replace"))
    status = proc.wait()
    whole = [g for g in grams if g.endswith("\n") and g.count("\n") == 1 and rx.match(g)]
    if status == want_status and (len(whole) == want_count or
                                  (at_least and len(whole) > want_count)):
        return 0
    print(f"exit status {status} (want {want_status}); {len(whole)} datagram(s) are one whole "
          f"line matching {args[2]!r} (want {args[1]}); all {len(grams)} datagrams:")
    for g in grams:
        print(f"  {g!r}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
