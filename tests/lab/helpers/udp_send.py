#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Send UDP datagrams from a kernel socket (IPv4 or IPv6, by DST's form).

usage:
  udp_send.py DST PORT --lines FILE [--gap SEC]
      one datagram per line of FILE, its newline included
  udp_send.py DST PORT --file FILE --sizes N[,N...] [--gap SEC]
      FILE's bytes cut into datagrams of these sizes, in order
  udp_send.py DST PORT --message TEXT [--count N] [--fill-to BYTES]
              [--no-newline] [--gap SEC]
      COUNT datagrams (default 1) of TEXT and a newline; "{i}" in TEXT
      stands for the datagram's number (0, 1, ...); --fill-to pads each
      with '.' before its newline to BYTES bytes

--gap SEC pauses after every datagram (default: none).  --device IFACE
binds the socket to an interface (SO_BINDTODEVICE), --broadcast allows a
broadcast destination (SO_BROADCAST), --no-checksum sends IPv4 datagrams
without a UDP checksum (SO_NO_CHECK).
"""

import argparse
import socket
import sys
import time

SO_NO_CHECK = 11    # <asm-generic/socket.h>; Python's socket module lacks it


def datagrams(a):
    if a.lines is not None:
        with open(a.lines, "rb") as f:
            yield from f.read().splitlines(keepends=True)
    elif a.file is not None:
        with open(a.file, "rb") as f:
            data = f.read()
        off = 0
        for n in a.sizes:
            yield data[off:off + n]
            off += n
    else:
        end = b"" if a.no_newline else b"\n"
        for i in range(a.count):
            d = a.message.replace("{i}", str(i)).encode()
            if a.fill_to:
                d = d.ljust(a.fill_to - len(end), b".")
            yield d + end


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dst")
    ap.add_argument("port", type=int)
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--lines", metavar="FILE")
    what.add_argument("--file", metavar="FILE")
    what.add_argument("--message", metavar="TEXT")
    ap.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")])
    ap.add_argument("--count", type=int, default=1)
    ap.add_argument("--fill-to", type=int, metavar="BYTES")
    ap.add_argument("--no-newline", action="store_true")
    ap.add_argument("--gap", type=float, default=0, metavar="SEC")
    ap.add_argument("--device", metavar="IFACE")
    ap.add_argument("--broadcast", action="store_true")
    ap.add_argument("--no-checksum", action="store_true")
    a = ap.parse_args()
    if (a.file is None) != (a.sizes is None):
        ap.error("--file and --sizes go together")
    fam = socket.AF_INET6 if ":" in a.dst else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM)
    if a.device:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, a.device.encode())
    if a.broadcast:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
    if a.no_checksum:
        s.setsockopt(socket.SOL_SOCKET, SO_NO_CHECK, 1)
    for d in datagrams(a):
        s.sendto(d, (a.dst, a.port))
        if a.gap:
            time.sleep(a.gap)
    return 0


if __name__ == "__main__":
    sys.exit(main())
