#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Accept one TCP connection, read it to the end and print
"<bytes> <sha256 hex>" of what came; tcp_send.py prints the same line for
what it sent.  Writes "ready" to READY once listening; gives up after 10 s
without a connection or without data.

usage: tcp_recv.py ADDR PORT READY
"""

import argparse
import hashlib
import socket
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("addr")
    ap.add_argument("port", type=int)
    ap.add_argument("ready")
    a = ap.parse_args()
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((a.addr, a.port))
    s.listen(1)
    s.settimeout(10)
    with open(a.ready, "w") as f:
        f.write("ready\n")
    c, _ = s.accept()
    c.settimeout(10)
    h, n = hashlib.sha256(), 0
    while True:
        d = c.recv(65536)
        if not d:
            break
        h.update(d)
        n += len(d)
    print(n, h.hexdigest())
    return 0


if __name__ == "__main__":
    sys.exit(main())
