#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Talk to xdp-vid in its own protocol (xvid_proto.py) by hand, with the
requests libxvi never sends: malformed ones, floods and bursts that the
daemon's limits must stop, requests from where no client should be.  Run
as an unprivileged uid, like any client.

usage: broker_requests.py [--timeout SEC] RUN_DIR WHAT ARGS...

  garbage               short, long, random, truncated OPEN, unknown op,
                        reserved bits set: "<what> <error>", one line each
  open PORT...          an OPEN of udp 198.18.0.2:PORT on a connection of
                        its own, for each PORT: "open <error> <message>"
                        ("open oserror <why>" if the connection failed)
  userns PIDFILE GO PORT...
                        enters a new user namespace, writes its pid to
                        PIDFILE, waits (at most 30 s) for the file GO, the
                        sign that root has mapped the namespace, then as
                        uid and gid 1 in it does what open does
  opens PORT [--count N]
                        N (30) OPENs of udp 198.18.0.2:PORT, each on a new
                        connection: "opens <error>...", "secs <s>" they took
  conns N READY HOLD_SEC LIMIT [--wait SEC]
                        opens N connections and keeps them, waits (at most
                        SEC, 30 s) until the daemon has answered all it
                        refuses, i.e. until no more than LIMIT are held;
                        prints "held H refused R", writes "ready" to READY,
                        then holds the connections for HOLD_SEC seconds
  openmany N PORT HOLD  N OPENs at once (ports PORT, PORT + 1, ...), never
                        READY, so each pending set-up holds the daemon's fds:
                        "results <error>...", "why | <message>..."; writes
                        "ready" to HOLD, then keeps the connections until
                        someone removes HOLD (at most 30 s)
  resolve PORT          an OPEN of udp 198.18.0.2:PORT, then on that
                        connection RESOLVE of an off-link address, of one
                        on-link address twice (first, repoll) and of 40 more
                        at once (burst), and "secs <s>" the RESOLVEs took
  flood SECS PORT       an OPEN of PORT, then RESOLVEs on that connection
                        for SECS seconds: "open <error> replies N secs <s>"
  garbage-flood SECS    random requests on new connections for SECS
                        seconds: "garbage N" answered

RUN_DIR holds the daemon's socket.  <error> is a reply's error field
(negative errno, 0 for success), None for no reply of the right size.
--timeout bounds every socket operation (default 5 s).
"""

import argparse
import ctypes
import os
import socket
import struct
import sys
import time

import xvid_proto
from xvid_proto import (MAGIC, OP_OPEN, REQ, RESP, VERSION, answer, ask, conn, error_of, hold_conns,
                        open_req, resolve_req, talk)

CLONE_NEWUSER = 0x10000000


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

    hdr = struct.pack("<IHHI", MAGIC, VERSION, OP_OPEN, REQ)
    res = [
        ("short", once(b"\x01" * 10)),
        ("long", once(os.urandom(1000))),
        ("random", once(os.urandom(REQ))),
        ("truncated_open", once(hdr + b"\0" * 20)),
        ("bad_op", once(struct.pack("<IHHI", MAGIC, VERSION, 99, REQ) + b"\0" * (REQ - 12))),
        ("reserved", once(hdr + b"\0" * (REQ - 13) + b"\x01")),
    ]
    for name, e in res:
        print(name, e)


def open_each(ports):
    for port in ports:
        try:
            s = conn()
            e, m = ask(s, open_req(port))
            s.close()
        except OSError as x:
            e, m = "oserror", str(x)
        print("open", e, m, flush=True)


def userns(pidfile, go, ports):
    # A user namespace of our own, mapped by root as newuidmap would map
    # /etc/subuid ranges; then uid 1 in it, a subordinate uid outside.
    if ctypes.CDLL(None, use_errno=True).unshare(CLONE_NEWUSER):
        print("unshare failed errno", ctypes.get_errno())
        return 1
    with open(pidfile, "w") as f:
        f.write("%d\n" % os.getpid())
    for _ in range(300):
        if os.path.exists(go):
            break
        time.sleep(0.1)
    os.setgroups([])
    os.setresgid(1, 1, 1)
    os.setresuid(1, 1, 1)
    open_each(ports)
    return 0


def opens(port, count):
    errs = []
    t0 = time.monotonic()
    for _ in range(count):
        s = conn()
        errs.append(talk(s, open_req(port)))
        s.close()
    print("opens", *errs)
    print("secs %.3f" % (time.monotonic() - t0))


def conns(n, ready, hold, limit, wait):
    socks, held, refused = hold_conns(n, limit, wait)
    print("held", held, "refused", refused, flush=True)
    with open(ready, "w") as f:
        f.write("ready\n")
    time.sleep(hold)


def openmany(n, port, hold):
    socks = [conn() for _ in range(n)]
    for i, s in enumerate(socks):
        s.send(open_req(port + i))
    res = []
    for s in socks:
        try:
            res.append(answer(s))
        except OSError as x:
            res.append(("oserror", str(x)))
    print("results", *[e for e, m in res])
    print("why", *[m for e, m in res if e], sep=" | ", flush=True)
    with open(hold, "w") as f:
        f.write("ready\n")
    for _ in range(300):
        if not os.path.exists(hold):
            break
        time.sleep(0.1)


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


def flood(secs, port):
    s = conn()
    e = talk(s, open_req(port))
    n, t0 = 0, time.monotonic()
    while time.monotonic() - t0 < secs:
        talk(s, resolve_req("198.18.0.1"))
        n += 1
    print("open", e, "replies", n, "secs %.3f" % (time.monotonic() - t0), flush=True)


def garbage_flood(secs):
    n, t0 = 0, time.monotonic()
    while time.monotonic() - t0 < secs:
        try:
            s = conn()
            s.send(os.urandom(REQ))
            s.recv(RESP)
            s.close()
            n += 1
        except OSError:
            pass
    print("garbage", n, flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--timeout", type=float, default=xvid_proto.TIMEOUT, metavar="SEC")
    ap.add_argument("run_dir")
    what = ap.add_subparsers(dest="what", required=True)
    w = what.add_parser("garbage")
    w.set_defaults(run=lambda a: garbage())
    w = what.add_parser("open")
    w.add_argument("ports", type=int, nargs="+", metavar="PORT")
    w.set_defaults(run=lambda a: open_each(a.ports))
    w = what.add_parser("userns")
    w.add_argument("pidfile")
    w.add_argument("go")
    w.add_argument("ports", type=int, nargs="+", metavar="PORT")
    w.set_defaults(run=lambda a: userns(a.pidfile, a.go, a.ports))
    w = what.add_parser("opens")
    w.add_argument("port", type=int)
    w.add_argument("--count", type=int, default=30)
    w.set_defaults(run=lambda a: opens(a.port, a.count))
    w = what.add_parser("conns")
    w.add_argument("n", type=int)
    w.add_argument("ready")
    w.add_argument("hold_sec", type=float)
    w.add_argument("limit", type=int)
    w.add_argument("--wait", type=float, default=30, metavar="SEC")
    w.set_defaults(run=lambda a: conns(a.n, a.ready, a.hold_sec, a.limit, a.wait))
    w = what.add_parser("openmany")
    w.add_argument("n", type=int)
    w.add_argument("port", type=int)
    w.add_argument("hold")
    w.set_defaults(run=lambda a: openmany(a.n, a.port, a.hold))
    w = what.add_parser("resolve")
    w.add_argument("port", type=int)
    w.set_defaults(run=lambda a: resolve(a.port))
    w = what.add_parser("flood")
    w.add_argument("secs", type=float)
    w.add_argument("port", type=int)
    w.set_defaults(run=lambda a: flood(a.secs, a.port))
    w = what.add_parser("garbage-flood")
    w.add_argument("secs", type=float)
    w.set_defaults(run=lambda a: garbage_flood(a.secs))
    a = ap.parse_args()
    xvid_proto.RUN_DIR = a.run_dir
    xvid_proto.TIMEOUT = a.timeout
    return a.run(a) or 0


if __name__ == "__main__":
    sys.exit(main())
