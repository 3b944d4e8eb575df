#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Connect to ADDR PORT over TCP, send BYTES random bytes (default 4 MiB),
close, and print "<bytes> <sha256 hex>" of what was sent, to compare with
tcp_recv.py's line.

usage: tcp_send.py ADDR PORT [--bytes N]
"""

import argparse
import hashlib
import os
import socket
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("addr")
    ap.add_argument("port", type=int)
    ap.add_argument("--bytes", type=int, default=4 << 20)
    a = ap.parse_args()
    data = os.urandom(a.bytes)
    s = socket.create_connection((a.addr, a.port), timeout=10)
    s.sendall(data)
    s.close()
    print(len(data), hashlib.sha256(data).hexdigest())
    return 0


if __name__ == "__main__":
    sys.exit(main())
