#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Run an attached XDP program on one frame by BPF_PROG_RUN in live-frames
mode (BPF_F_TEST_XDP_LIVE_FRAMES): every repetition starts from a fresh
copy of the frame, and the verdict is carried out (XDP_TX leaves through
IFINDEX, XDP_REDIRECT is done), as for a frame received on IFINDEX's
queue 0.  Unlike `bpftool prog run ... repeat N`, where the repetitions
share one buffer and see what the previous ones changed (metadata,
swapped addresses).

usage: xdp_live_run.py PROG_ID FRAME_FILE IFINDEX REPEAT

Prints "ns_per_frame <N>" (the kernel's average duration) and exits 0, or
prints the error and exits 1.
"""

import ctypes
import os
import struct
import sys

SYS_BPF = 321                   # x86_64
BPF_PROG_TEST_RUN = 10
BPF_PROG_GET_FD_BY_ID = 13
BPF_F_TEST_XDP_LIVE_FRAMES = 1 << 1

libc = ctypes.CDLL(None, use_errno=True)


def bpf(cmd, attr):
    buf = ctypes.create_string_buffer(attr, len(attr))
    ret = libc.syscall(SYS_BPF, cmd, buf, len(attr))
    if ret < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return ret, buf.raw


def main():
    if len(sys.argv) != 5:
        print(__doc__.strip())
        return 1
    prog_id, path, ifindex, repeat = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), \
        int(sys.argv[4])
    frame = open(path, "rb").read()
    try:
        fd, _ = bpf(BPF_PROG_GET_FD_BY_ID, struct.pack("=III", prog_id, 0, 0))
        data = ctypes.create_string_buffer(frame, len(frame))
        # struct xdp_md: data, data_end, data_meta, ingress_ifindex, rx_queue_index, egress
        ctx = ctypes.create_string_buffer(struct.pack("=6I", 0, len(frame), 0, ifindex, 0, 0),
                                          24)
        attr = struct.pack("=IIIIQQIIIIQQIII4x", fd, 0, len(frame), 0,
                           ctypes.addressof(data), 0, repeat, 0, 24, 0,
                           ctypes.addressof(ctx), 0, BPF_F_TEST_XDP_LIVE_FRAMES, 0, 0)
        _, out = bpf(BPF_PROG_TEST_RUN, attr)
    except OSError as e:
        print("BPF_PROG_RUN (live frames): %s" % e)
        return 1
    print("ns_per_frame %d" % struct.unpack_from("=I", out, 36)[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
