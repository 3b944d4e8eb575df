#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Many concurrent HTTP clients for the TCP Server suite.

usage:
  http_many.py HOST PORT DIR N CALLS FILE...
      N connections at once to HOST:PORT.  Each sends CALLS GET requests
      for the FILEs in turn (HTTP/1.1, pipelined in bursts of three, the
      last one with "Connection: close"; CALLS = 1: one HTTP/1.0 request),
      reads every response, checks its status (200) and body against
      DIR/FILE byte for byte, and then must see the server close.  Bounded
      by 120 s.  Prints "ok N connections, R responses, B body bytes", or
      what went wrong (how many connections completed, the first bad
      response) and exits 1.
"""

import selectors
import sys

from tcp_peer import drive_many


def request(path, last, v11):
    if not v11:
        return b"GET /%s HTTP/1.0\r\n\r\n" % path.encode()
    return b"GET /%s HTTP/1.1\r\nHost: lab\r\n%s\r\n" % (
        path.encode(), b"Connection: close\r\n" if last else b"")


def take_response(buf):
    """(status, body, rest) of one complete response at buf's start, or None."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return None
    head = buf[:end].decode("latin-1").split("\r\n")
    length = None
    for h in head[1:]:
        k, _, v = h.partition(":")
        if k.strip().lower() == "content-length":
            length = int(v.strip())
    if length is None:
        raise ValueError("response without Content-Length: %r" % head[0])
    if len(buf) < end + 4 + length:
        return None
    status = head[0].split(" ")[1]
    return status, buf[end + 4:end + 4 + length], buf[end + 4 + length:]


def main():
    if len(sys.argv) < 7:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    host, port, d, n, calls = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), \
        int(sys.argv[5])
    names = sys.argv[6:]
    bodies = {f: open("%s/%s" % (d, f), "rb").read() for f in names}
    v11 = calls > 1
    count = {"responses": 0, "bytes": 0}

    def state(i):
        return {"want": [names[(i + k) % len(names)] for k in range(calls)], "sent": 0,
                "out": b"", "in": b"", "got": 0}

    def step(sel, s, c, ev):
        if ev & selectors.EVENT_WRITE:
            # A burst of (at most) three once the last one was answered.
            if not c["out"] and c["sent"] < calls and c["got"] == c["sent"]:
                for _ in range(min(3, calls - c["sent"])):
                    c["out"] += request(c["want"][c["sent"]], c["sent"] == calls - 1, v11)
                    c["sent"] += 1
            if c["out"]:
                k = s.send(c["out"])
                c["out"] = c["out"][k:]
            if not c["out"] and c["sent"] == calls:
                sel.modify(s, selectors.EVENT_READ)
        if not ev & selectors.EVENT_READ:
            return None
        b = s.recv(1 << 20)
        if not b:
            if c["got"] != calls or c["in"]:
                return "server closed a connection after %d of %d responses (%d bytes left over)" \
                    % (c["got"], calls, len(c["in"]))
            return True
        c["in"] += b
        while True:
            r = take_response(c["in"])
            if not r:
                return None
            status, body, c["in"] = r
            f = c["want"][c["got"]] if c["got"] < calls else None
            if status != "200" or f is None or body != bodies[f]:
                return "bad response %d on a connection: status %s, %d bytes%s" % (
                    c["got"] + 1, status, len(body),
                    "" if f is None else " for %s (%d bytes)" % (f, len(bodies[f])))
            c["got"] += 1
            count["responses"] += 1
            count["bytes"] += len(body)

    done, conns, err = drive_many(host, port, n, state, step)
    if err:
        print("connection failed: %s" % err)
        return 1
    if done != n:
        stuck = sorted(c["got"] for c in conns.values() if c["got"] < calls)
        print("only %d of %d connections completed in 120 s; responses on the others: %s"
              % (done, n, stuck[:20]))
        return 1
    print("ok %d connections, %d responses, %d body bytes" % (n, count["responses"], count["bytes"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
