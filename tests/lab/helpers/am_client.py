#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Send active messages (include/xvi_ext.h) from a kernel UDP socket.

usage:
  am_client.py DST PORT HANDLER --count N --expect-echo
      N messages naming HANDLER, one at a time; each must come back
      within 5 s byte for byte from (DST, PORT).  Prints "ok N replies".
  am_client.py DST PORT HANDLER --count N
      N messages, no reply expected.  Prints "sent N".
  am_client.py DST PORT HANDLER --expect-echo --until FILE [--progress FILE]
      messages one at a time, each echoed as above, until FILE exists;
      the number sent so far is written to --progress after each reply.
      Prints "ok N replies".

--arg1 ADDR puts the IPv4 address ADDR (its four bytes, in network order)
in arg1 instead of 0; --sent FILE writes every message sent, in hex, one
a line (udp_recv.py --format "{hex}" prints what arrived the same way).

Each message is the 16-byte header (magic "XVAM", version 1, flags 0,
HANDLER, arg0 = the message's number, arg1 = 0 or --arg1) and the text
"xvi-am <number> <token>" padded to 64 bytes; --token TEXT sets the
token (default: random), so that no stale datagram can match.
"""

import argparse
import os
import socket
import struct
import sys

AM_MAGIC = 0x5856414D
AM_VERSION = 1


def message(handler, i, token, arg1=b"\0\0\0\0"):
    body = ("xvi-am %d %s " % (i, token)).encode().ljust(64, b".")
    return struct.pack("!IBBHI", AM_MAGIC, AM_VERSION, 0, handler, i) + arg1 + body


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dst")
    ap.add_argument("port", type=int)
    ap.add_argument("handler", type=int)
    ap.add_argument("--count", type=int, default=1)
    ap.add_argument("--expect-echo", action="store_true")
    ap.add_argument("--token", default=os.urandom(6).hex())
    ap.add_argument("--until")
    ap.add_argument("--progress")
    ap.add_argument("--arg1", type=socket.inet_aton, default=b"\0\0\0\0")
    ap.add_argument("--sent")
    a = ap.parse_args()
    log = open(a.sent, "w") if a.sent else None

    fam = socket.AF_INET6 if ":" in a.dst else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.connect((a.dst, a.port))
    s.settimeout(5.0)
    i = 0
    while (os.path.exists(a.until) is False) if a.until else i < a.count:
        m = message(a.handler, i, a.token, a.arg1)
        i += 1
        s.send(m)
        if log:
            log.write(m.hex() + "\n")
            log.flush()
        if not a.expect_echo:
            continue
        try:
            r, src = s.recvfrom(65536)
        except socket.timeout:
            print("message %d: no reply within 5 s" % (i - 1))
            return 1
        if r != m:
            print("message %d: reply differs: %r, sent %r" % (i - 1, r[:40], m[:40]))
            return 1
        if src[0] != a.dst or src[1] != a.port:
            print("message %d: reply from %s:%d" % (i - 1, src[0], src[1]))
            return 1
        if a.progress:
            with open(a.progress + ".tmp", "w") as f:
                f.write("%d\n" % i)
            os.replace(a.progress + ".tmp", a.progress)
    print("ok %d replies" % i if a.expect_echo else "sent %d" % i)
    return 0


if __name__ == "__main__":
    sys.exit(main())
