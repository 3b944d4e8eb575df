#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Send raw Ethernet frames of EtherType 0x88B5 (IEEE local experimental:
no stack in between takes them) carrying TOKEN, padded to the minimum
frame size.

usage: raw_frame_send.py IFACE DST_MAC TOKEN [--count N]
"""

import argparse
import socket
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("iface")
    ap.add_argument("dst_mac")
    ap.add_argument("token")
    ap.add_argument("--count", type=int, default=3)
    a = ap.parse_args()
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((a.iface, 0))
    dst = bytes.fromhex(a.dst_mac.replace(":", ""))
    src = s.getsockname()[4]
    for _ in range(a.count):
        s.send(dst + src + b"\x88\xb5" + a.token.encode().ljust(46, b"."))
    return 0


if __name__ == "__main__":
    sys.exit(main())
