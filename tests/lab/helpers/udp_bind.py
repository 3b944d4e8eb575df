#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Bind a kernel UDP socket to ADDR PORT and hold the port: does the kernel
let this port be taken?  (IPv6 sockets are V6ONLY: they never touch the
IPv4 port space.)

usage: udp_bind.py ADDR PORT [--hold SEC] [--ready FILE]

Prints "bound", or "errno N" (and the error on stderr) and exits 98 when
the port is in use (EADDRINUSE), 1 on any other error.  Once bound, writes
"ready" to the --ready file and holds the port for --hold seconds (default
0), or, with --ready, until someone removes that file, whichever comes
first.
"""

import argparse
import errno
import os
import socket
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("addr")
    ap.add_argument("port", type=int)
    ap.add_argument("--hold", type=float, default=0, metavar="SEC")
    ap.add_argument("--ready", metavar="FILE")
    a = ap.parse_args()
    fam = socket.AF_INET6 if ":" in a.addr else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM)
    if fam == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    try:
        s.bind((a.addr, a.port))
    except OSError as e:
        print("errno", e.errno, flush=True)
        print("bind", a.addr, a.port, e, file=sys.stderr)
        return 98 if e.errno == errno.EADDRINUSE else 1
    print("bound", flush=True)
    if a.ready:
        with open(a.ready, "w") as f:
            f.write("ready\n")
        end = time.monotonic() + a.hold
        while os.path.exists(a.ready) and time.monotonic() < end:
            time.sleep(0.05)
    else:
        time.sleep(a.hold)
    return 0


if __name__ == "__main__":
    sys.exit(main())
