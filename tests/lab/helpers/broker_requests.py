#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Talk to xdp-vid in its own protocol (xvid_proto.py) by hand, with the
requests libxvi never sends: malformed ones, and bursts that the daemon's
limits must stop.  Run as an unprivileged uid, like any client.

usage: broker_requests.py RUN_DIR garbage
       broker_requests.py RUN_DIR resolve PORT
       broker_requests.py RUN_DIR opens PORT
       broker_requests.py RUN_DIR conns N READY HOLD_SEC LIMIT

RUN_DIR holds the daemon's socket.  Each prints "<what> <error>" lines,
<error> being the reply's error field (negative errno, 0 for success) or
None for no reply of the right size:
  garbage  short, long, random, truncated OPEN, unknown op, reserved bits
           set: one line each
  resolve  an OPEN of udp 198.18.0.2:PORT, then on that connection RESOLVE
           of an off-link address, of one on-link address twice (first,
           repoll) and of 40 more at once (burst), and "secs <s>" the
           RESOLVEs took
  opens    30 OPENs of udp 198.18.0.2:PORT, each on a new connection, and
           "secs <s>" they took
  conns    opens N connections and keeps them, waits (at most 30 s) until
           the daemon has closed all it refuses, i.e. until no more than
           LIMIT are held; prints "held H refused R", writes "ready" to
           READY, then holds the connections for HOLD_SEC seconds
"""

import argparse
import os
import socket
import struct
import sys
import time

from xvid_proto import (MAGIC, OP_OPEN, REQ, conn, error_of, hold_conns, open_req,
                        resolve_req, talk)


def garbage():
    def once(data):
        s = conn(timeout=3)
        if data is not None:
            s.send(data)
        try:
            r = s.recv(4096)
        except socket.timeout:
            r = b"timeout"
        s.close()
        return error_of(r)

    hdr = struct.pack("<IHHI", MAGIC, 1, OP_OPEN, REQ)
    res = [
        ("short", once(b"\x01" * 10)),
        ("long", once(os.urandom(1000))),
        ("random", once(os.urandom(REQ))),
        ("truncated_open", once(hdr + b"\0" * 20)),
        ("bad_op", once(struct.pack("<IHHI", MAGIC, 1, 99, REQ) + b"\0" * (REQ - 12))),
        ("reserved", once(hdr + b"\0" * (REQ - 13) + b"\x01")),
    ]
    for name, e in res:
        print(name, e)


def resolve(port):
    s = conn()
    print("open", talk(s, open_req(port)))
    print("offlink", talk(s, resolve_req("198.19.9.9")))
    t0 = time.monotonic()
    print("first", talk(s, resolve_req("198.18.0.100")))
    print("repoll", talk(s, resolve_req("198.18.0.100")))
    print("burst", *[talk(s, resolve_req("198.18.0.%d" % (101 + i))) for i in range(40)])
    print("secs %.3f" % (time.monotonic() - t0))
    s.close()


def opens(port):
    errs = []
    t0 = time.monotonic()
    for _ in range(30):
        s = conn()
        errs.append(talk(s, open_req(port)))
        s.close()
    print("opens", *errs)
    print("secs %.3f" % (time.monotonic() - t0))


def conns(n, ready, hold, limit):
    socks, held, refused = hold_conns(n, limit, 30)
    print("held", held, "refused", refused, flush=True)
    with open(ready, "w") as f:
        f.write("ready\n")
    time.sleep(hold)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    # xvid_proto.path() reads it from sys.argv[1]
    ap.add_argument("run_dir")
    what = ap.add_subparsers(dest="what", required=True)
    w = what.add_parser("garbage")
    w.set_defaults(run=lambda a: garbage())
    w = what.add_parser("resolve")
    w.add_argument("port", type=int)
    w.set_defaults(run=lambda a: resolve(a.port))
    w = what.add_parser("opens")
    w.add_argument("port", type=int)
    w.set_defaults(run=lambda a: opens(a.port))
    w = what.add_parser("conns")
    w.add_argument("n", type=int)
    w.add_argument("ready")
    w.add_argument("hold_sec", type=float)
    w.add_argument("limit", type=int)
    w.set_defaults(run=lambda a: conns(a.n, a.ready, a.hold_sec, a.limit))
    a = ap.parse_args()
    a.run(a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
