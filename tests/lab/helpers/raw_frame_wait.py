#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Wait for a raw Ethernet frame of EtherType 0x88B5 carrying TOKEN (as
raw_frame_send.py sends it): print "got" and exit 0, or exit 1 after
SECONDS (default 4).  Writes "ready" to READY once capturing.

usage: raw_frame_wait.py IFACE TOKEN READY [--seconds SEC]
"""

import argparse
import socket
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("iface")
    ap.add_argument("token")
    ap.add_argument("ready")
    ap.add_argument("--seconds", type=float, default=4)
    a = ap.parse_args()
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x88B5))
    s.bind((a.iface, 0))
    s.settimeout(a.seconds)
    with open(a.ready, "w") as f:
        f.write("ready\n")
    end = time.time() + a.seconds
    try:
        while time.time() < end:
            if a.token.encode() in s.recv(2048):
                print("got")
                return 0
    except socket.timeout:
        pass
    print("no frame with %s in %g s" % (a.token, a.seconds))
    return 1


if __name__ == "__main__":
    sys.exit(main())
