#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Time an attached XDP program on one frame by BPF_PROG_RUN, one
repetition per run, RUNS runs: each run starts from the frame as built
(the kernel copies data_in for every BPF_PROG_TEST_RUN), so a program that
rewrites its frame (a reply made in place) is timed on the request every
time.  `bpftool prog run ... repeat N` and live frames would time the
rewritten frame from the second repetition on (docs/KERNEL.md, fact 33).
A run's duration includes the kernel's clock reads around one program
run: compare the rows of one script with each other, not with
`repeat N` averages.

usage: prog_run_each.py PROG_ID FRAME_FILE RUNS

Prints "ns_median <N> verdict <XDP action>" (the median of the kernel's
per-run durations; the verdict of the last run) and exits 0, or prints
the error and exits 1.
"""

import ctypes
import statistics
import struct
import sys

# The bpf(2) wrapper of its neighbour in this directory.
from xdp_live_run import BPF_PROG_GET_FD_BY_ID, bpf

BPF_PROG_TEST_RUN = 10


def main():
    if len(sys.argv) != 4:
        print(__doc__.strip())
        return 1
    prog_id, path, runs = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    frame = open(path, "rb").read()
    data = ctypes.create_string_buffer(frame, len(frame))
    out = ctypes.create_string_buffer(4096)
    ns = []
    try:
        fd, _ = bpf(BPF_PROG_GET_FD_BY_ID, struct.pack("=III", prog_id, 0, 0))
        # prog_fd, retval, data_size_in, data_size_out, data_in, data_out,
        # repeat, duration, ctx_size_in, ctx_size_out, ctx_in, ctx_out,
        # flags, cpu, batch_size
        attr = struct.pack("=IIIIQQIIIIQQIII4x", fd, 0, len(frame), len(out),
                           ctypes.addressof(data), ctypes.addressof(out), 1, 0, 0, 0,
                           0, 0, 0, 0, 0)
        for _ in range(runs):
            _, res = bpf(BPF_PROG_TEST_RUN, attr)
            retval, = struct.unpack_from("=I", res, 4)
            ns.append(struct.unpack_from("=I", res, 36)[0])
    except OSError as e:
        print("BPF_PROG_RUN: %s" % e)
        return 1
    print("ns_median %d verdict %d" % (statistics.median(ns), retval))
    return 0


if __name__ == "__main__":
    sys.exit(main())
