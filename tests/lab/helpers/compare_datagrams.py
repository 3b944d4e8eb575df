#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Compare the datagrams a receiver printed with the lines that were sent.

usage: compare_datagrams.py SENT RECEIVED [--tag WORD] [--source ADDR]

SENT has one datagram a line.  RECEIVED has one line per datagram with
its payload in hex last: "<source> <hex>" with --source (which every
datagram must come from), "<hex>" without; with --tag only the lines
starting with WORD count ("DGRAM <hex>"), WORD dropped.  A payload matches
its line with or without the line's newline; anything else differs.
Exit 0 if every datagram matches, in order; else print the first
difference and exit 1.
"""

import argparse
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sent")
    ap.add_argument("received")
    ap.add_argument("--tag", metavar="WORD")
    ap.add_argument("--source", metavar="ADDR")
    a = ap.parse_args()
    with open(a.sent, "rb") as f:
        want = f.read().splitlines()
    with open(a.received) as f:
        got = [line.split() for line in f.read().splitlines()]
    if a.tag:
        got = [g[1:] for g in got if g[:1] == [a.tag]]
    if len(got) != len(want):
        print("kernel socket got %d datagrams, expected %d" % (len(got), len(want)))
        return 1
    for i, (w, g) in enumerate(zip(want, got)):
        if a.source is not None:
            if len(g) != 2 or g[0] != a.source:
                print("datagram %d from %r, expected source %s" % (i, g, a.source))
                return 1
            g = g[1:]
        p = bytes.fromhex(g[0]) if g else b""
        if p not in (w, w + b"\n"):
            print("datagram %d payload %r, expected %r" % (i, p[:60], w[:60]))
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
