#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Check many UDP echo endpoints at once from kernel sockets: each must
receive exactly its own datagrams and answer every one.

usage: udp_echo_client.py DST FIRST_PORT NPORTS COUNT WINDOW JUMBO

One connected socket per port FIRST_PORT .. FIRST_PORT+NPORTS-1.  In
rounds of WINDOW datagrams per port it sends "port=P seq=S " and filler
(30-1030 bytes, or 2000-8000 with JUMBO=1), COUNT in all per port; every
reply must come back within 5 s of its round, be exactly "R" and the
datagram, and come from (DST, P).  Prints "ok <replies>" and exits 0, or
prints what went wrong and exits 1.
"""

import argparse
import select
import socket
import sys
import time


def payload(port, seq, jumbo):
    head = ("port=%d seq=%d " % (port, seq)).encode()
    size = 2000 + (seq * 997 + port * 13) % 6000 if jumbo else 30 + (seq * 37 + port) % 1000
    return head + bytes((port + seq + j) % 251 for j in range(size - len(head)))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dst")
    ap.add_argument("first_port", type=int)
    ap.add_argument("nports", type=int)
    ap.add_argument("count", type=int)
    ap.add_argument("window", type=int)
    ap.add_argument("jumbo", choices=["0", "1"])
    a = ap.parse_args()
    jumbo = a.jumbo == "1"
    fam = socket.AF_INET6 if ":" in a.dst else socket.AF_INET
    socks = {}
    for p in range(a.first_port, a.first_port + a.nports):
        s = socket.socket(fam, socket.SOCK_DGRAM)
        s.connect((a.dst, p))
        socks[s.fileno()] = (s, p)
    total = 0
    for base in range(0, a.count, a.window):
        pending = {}
        for s, p in socks.values():
            for q in range(base, min(base + a.window, a.count)):
                d = payload(p, q, jumbo)
                s.send(d)
                pending[(p, q)] = d
        end = time.time() + 5
        while pending and time.time() < end:
            r, _, _ = select.select([s for s, _ in socks.values()], [], [],
                                    max(0, end - time.time()))
            for s in r:
                p = socks[s.fileno()][1]
                try:
                    d = s.recv(65535)
                except ConnectionRefusedError:
                    print("port %d refused (ICMP unreachable)" % p)
                    return 1
                try:
                    q = int(d[1:].split(b" ")[1].split(b"=")[1])
                except (IndexError, ValueError):
                    print("port %d: malformed reply %r" % (p, d[:40]))
                    return 1
                want = pending.pop((p, q), None)
                if want is None or d != b"R" + want:
                    print("port %d seq %d: unexpected or wrong reply %r" % (p, q, d[:40]))
                    return 1
                total += 1
        if pending:
            print("%d replies missing, e.g. port %d seq %d" % ((len(pending),) + min(pending)))
            return 1
    print("ok", total)
    return 0


if __name__ == "__main__":
    sys.exit(main())
