#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""A kernel TCP peer for the TCP Server suite: the far end of remote sockets.

usage:
  tcp_peer.py connect HOST PORT [--send FILE] [--out FILE] [--rst] [--hold FILE]
  tcp_peer.py listen PORT [--send FILE] [--out FILE] [--rst]
      One connection (connect to HOST:PORT, or accept one on PORT).  A
      thread sends FILE and then shuts the write side (FIN), or with --rst
      closes with RST after sending it (SO_LINGER 0).  The main thread
      reads until EOF into --out; with --hold it reads nothing until FILE
      exists (a slow reader).  Prints "eof" after a clean end, or the
      errno's name (ECONNRESET, ECONNREFUSED, ...) and exits 1.
  tcp_peer.py many HOST PORT N
      N connections at once; each sends 1000 bytes of its own, shuts its
      write side and must read the same 1000 bytes back then EOF.  Prints
      "ok N".
"""

import argparse
import errno
import os
import selectors
import socket
import struct
import sys
import threading
import time


def err_name(e):
    return errno.errorcode.get(e.errno, str(e)) if isinstance(e, OSError) else str(e)


def run_one(sock, args):
    result = {}

    def sender():
        try:
            if args.send:
                with open(args.send, "rb") as f:
                    while True:
                        b = f.read(65536)
                        if not b:
                            break
                        sock.sendall(b)
            if args.rst:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                sock.close()
            else:
                sock.shutdown(socket.SHUT_WR)
        except OSError as e:
            result["send"] = err_name(e)

    t = threading.Thread(target=sender, daemon=True)
    t.start()
    if args.rst:
        t.join()
        print(result.get("send", "rst"))
        return 0 if "send" not in result else 1
    if args.hold:
        while not os.path.exists(args.hold):
            time.sleep(0.05)
    out = open(args.out, "wb") if args.out else None
    try:
        while True:
            b = sock.recv(65536)
            if not b:
                break
            if out:
                out.write(b)
    except OSError as e:
        print(err_name(e))
        return 1
    finally:
        if out:
            out.close()
    t.join()
    if "send" in result:
        print(result["send"])
        return 1
    print("eof")
    return 0


def drive_many(host, port, n, new_state, step, seconds=120):
    """n non-blocking connections to host:port at once, bounded by seconds.

    step(sel, sock, state, events) moves one connection on an event and
    returns None (more to come), True (it completed: closed here) or what
    went wrong.  Returns (completed, states by socket, what went wrong or
    None).
    """
    sel = selectors.DefaultSelector()
    conns = {}
    for i in range(n):
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex((host, port))
        conns[s] = new_state(i)
        sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE)
    done = 0
    deadline = time.time() + seconds
    while done < n and time.time() < deadline:
        for key, ev in sel.select(1.0):
            s = key.fileobj
            try:
                r = step(sel, s, conns[s], ev)
            except BlockingIOError:
                continue
            except (OSError, ValueError) as e:
                return done, conns, err_name(e)
            if r is True:
                sel.unregister(s)
                s.close()
                done += 1
            elif r:
                return done, conns, r
    return done, conns, None


def many(host, port, n):
    def state(i):
        payload = (b"%08d" % i) * 125
        return {"out": payload, "want": payload, "got": b"", "shut": False}

    def step(sel, s, c, ev):
        if ev & selectors.EVENT_WRITE and not c["shut"]:
            k = s.send(c["out"])
            c["out"] = c["out"][k:]
            if not c["out"]:
                s.shutdown(socket.SHUT_WR)
                c["shut"] = True
                sel.modify(s, selectors.EVENT_READ)
        if ev & selectors.EVENT_READ:
            b = s.recv(65536)
            if b:
                c["got"] += b
            elif c["got"] != c["want"]:
                return "connection got %d bytes, not its own 1000" % len(c["got"])
            else:
                return True
        return None

    done, _, err = drive_many(host, port, n, state, step)
    if err:
        print(err)
        return 1
    if done != n:
        print("only %d of %d connections completed" % (done, n))
        return 1
    print("ok %d" % n)
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["connect", "listen", "many"])
    ap.add_argument("rest", nargs="+")
    ap.add_argument("--send")
    ap.add_argument("--out")
    ap.add_argument("--rst", action="store_true")
    ap.add_argument("--hold")
    args = ap.parse_args()
    try:
        if args.mode == "many":
            return many(args.rest[0], int(args.rest[1]), int(args.rest[2]))
        if args.mode == "connect":
            sock = socket.create_connection((args.rest[0], int(args.rest[1])), timeout=None)
        else:
            ls = socket.socket()
            ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            ls.bind(("0.0.0.0", int(args.rest[0])))
            ls.listen(8)
            sock, _ = ls.accept()
            ls.close()
    except OSError as e:
        print(err_name(e))
        return 1
    return run_one(sock, args)


if __name__ == "__main__":
    sys.exit(main())
