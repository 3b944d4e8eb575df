#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Check a stream listener spread over queues against its connections.
SERVER holds `xvi-perf server --stream --threads N --json` output (one
object per listener, with "thread_queue"); CLIENT holds `xvi-perf tp
--stream --threads N --json` output (one object per connection, with
"thread_queue", then the sum).

Passes (exit 0) when every connection's messages and bytes all arrived
(the server's count for it equals what it sent, with nothing broken in
the framing), every listener accepted a connection and none failed, and
each listener received exactly the bytes of the connections sent from its
queue (connection i leaves a's queue i and so reaches b's queue i), so no
connection was carried by another queue's context.  Prints one line per
listener; on failure the reason on stderr.

usage: spread_stream_check.py SERVER CLIENT
"""

import json
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    srv = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
    cli = [json.loads(l) for l in open(sys.argv[2]) if l.startswith("{")]
    conns = [c for c in cli if c.get("mode") == "throughput"]
    bad = []
    want = {}
    for c in conns:
        q = c["thread_queue"]
        if c.get("server_received") is None:
            bad.append("connection from queue %d: no count from the server" % q)
            continue
        if c["server_received"] != c["sent"] or c["server_received_bytes"] != c["bytes"]:
            bad.append("connection from queue %d: sent %d messages (%d bytes), the server "
                       "counted %d (%d bytes)" % (q, c["sent"], c["bytes"], c["server_received"],
                                                  c["server_received_bytes"]))
        want[q] = want.get(q, 0) + c["bytes"]
    if len(srv) < 2:
        bad.append("%d listener summaries, want one per queue" % len(srv))
    for s in srv:
        q = s["thread_queue"]
        ctx = s.get("context", {})
        print("queue %d: %d connections, %d bytes, %d segments" %
              (q, s["connections"], s["received_bytes"], ctx.get("rx_segs", 0)))
        if s["connections"] == 0:
            bad.append("the listener of queue %d accepted no connection" % q)
        if s["connection_errors"] or s["bad_frames"]:
            bad.append("queue %d: %d failed connections, %d broken frames" %
                       (q, s["connection_errors"], s["bad_frames"]))
        if s["received_bytes"] != want.get(q, 0):
            bad.append("the listener of queue %d received %d bytes, the connections from "
                       "that queue sent %d" % (q, s["received_bytes"], want.get(q, 0)))
    if not conns:
        bad.append("no connection reports")
    for b in bad:
        print(b, file=sys.stderr)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
