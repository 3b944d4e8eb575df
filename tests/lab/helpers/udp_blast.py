#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Send UDP datagrams of about 1400 bytes, "seq <i> xxx..." to an IPv4 address as fast
as the socket takes them for SECONDS, then print how many were sent.  A
full socket buffer (ENOBUFS) only skips that datagram: the point is to
offer more than the path carries.

usage: udp_blast.py DST PORT SECONDS
"""

import argparse
import socket
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dst")
    ap.add_argument("port", type=int)
    ap.add_argument("seconds", type=float)
    a = ap.parse_args()
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    pad, end, i = b"x" * 1380, time.monotonic() + a.seconds, 0
    while time.monotonic() < end:
        try:
            s.sendto(b"seq %d " % i + pad, (a.dst, a.port))
            i += 1
        except OSError:
            pass
    print(i)
    return 0


if __name__ == "__main__":
    sys.exit(main())
