#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Sum up what udp_recv.py --format '{time:.4f} {seq} {len}' printed.

usage: udp_recv_stats.py longest-gap FILE
       udp_recv_stats.py rate FILE

  longest-gap  "RECEIVED MISSING BEFORE AFTER SECONDS": how many datagrams
               with a sequence number came, the longest run of missing
               sequence numbers, the numbers on either side of it, and how
               long the receiver waited across it
  rate         "BITS_PER_SECOND RECEIVED": the receive rate from the first
               datagram to the last, each counted with 42 bytes of
               Ethernet, IPv4 and UDP headers, and how many came
"""

import argparse
import sys


def longest_gap(rows):
    rows = sorted((int(r[1]), float(r[0])) for r in rows if r[1].isdigit())
    best = (0, -1, -1, 0.0)
    for (a, ta), (b, tb) in zip(rows, rows[1:]):
        best = max(best, (b - a - 1, a, b, tb - ta))
    print(len(rows), best[0], best[1], best[2], "%.2f" % best[3])


def rate(rows):
    t = float(rows[-1][0]) - float(rows[0][0]) if len(rows) > 1 else 0
    b = sum(int(x[2]) + 42 for x in rows[1:])
    print(int(b * 8 / t) if t > 0 else 0, len(rows))


QUERIES = {"longest-gap": longest_gap, "rate": rate}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("query", choices=QUERIES)
    ap.add_argument("file")
    a = ap.parse_args()
    with open(a.file) as f:
        QUERIES[a.query]([line.split() for line in f])
    return 0


if __name__ == "__main__":
    sys.exit(main())
