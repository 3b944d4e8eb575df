#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Send COUNT sockperf client messages (no reply asked) from each of
SOCKETS kernel UDP sockets, each bound to its own ephemeral port, so that
each socket is a flow of its own for the sending kernel's queue choice.
Prints "PORT SENT" per socket.

usage: sp_flows.py DST PORT SOCKETS COUNT
"""

import socket
import struct
import sys

SP_F_CLIENT = 0x0001
LEN = 64


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    dst, port, nsock, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    socks = []
    for _ in range(nsock):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("0.0.0.0", 0))
        socks.append(s)
    sent = [0] * nsock
    # Round robin: every flow is under way while the others are.
    for seq in range(1, count + 1):
        for i, s in enumerate(socks):
            msg = struct.pack(">QHI", seq, SP_F_CLIENT, LEN) + b"x" * (LEN - 14)
            s.sendto(msg, (dst, port))
            sent[i] += 1
    for i, s in enumerate(socks):
        print(s.getsockname()[1], sent[i])


if __name__ == "__main__":
    main()
