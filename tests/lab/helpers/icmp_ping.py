#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Ping without iputils: 3 ICMP echo requests, 1 s each, to an IPv4 or IPv6
address; exit 0 at the first reply, 1 if none came.

usage: icmp_ping.py DST
"""

import argparse
import os
import select
import socket
import struct
import sys
import time

from inet_csum import checksum


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dst", help="IPv4 or IPv6 address")
    dst = ap.parse_args().dst
    v6 = ":" in dst
    if v6:
        s = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
        req, rep = 128, 129
    else:
        s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
        req, rep = 8, 0
    ident = os.getpid() & 0xffff
    for seq in range(3):
        body = b"xvi-ping"
        hdr = struct.pack("!BBHHH", req, 0, 0, ident, seq)
        if not v6:  # the kernel fills the ICMPv6 checksum, not the ICMPv4 one
            hdr = struct.pack("!BBHHH", req, 0, checksum(hdr + body), ident, seq)
        s.sendto(hdr + body, (dst, 0))
        end = time.time() + 1
        while time.time() < end:
            r, _, _ = select.select([s], [], [], max(0, end - time.time()))
            if not r:
                break
            d = s.recv(2048)
            if not v6:
                d = d[(d[0] & 15) * 4:]
            if len(d) >= 8 and d[0] == rep and struct.unpack("!H", d[4:6])[0] == ident:
                print("reply from", dst, "seq", seq)
                return 0
    return 1


if __name__ == "__main__":
    sys.exit(main())
