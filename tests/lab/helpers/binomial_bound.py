#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Is HITS out of N trials a plausible count for probability P?  Within
4 sigma of N*P (sigma = sqrt(N P (1 - P))), a false alarm once in ~16000
runs, and a bound that follows N instead of a fixed fudge.  Prints the
verdict's numbers; exit 0 within the bound, 1 outside.

usage: binomial_bound.py HITS N P
"""

import argparse
import math
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("hits", type=int)
    ap.add_argument("n", type=int)
    ap.add_argument("p", type=float)
    a = ap.parse_args()
    s = math.sqrt(a.n * a.p * (1 - a.p))
    print("dropped %d of %d, expected %.1f +- %.1f (4 sigma)" % (a.hits, a.n, a.n * a.p, 4 * s))
    return 0 if abs(a.hits - a.n * a.p) <= 4 * s else 1


if __name__ == "__main__":
    sys.exit(main())
