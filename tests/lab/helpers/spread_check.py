#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Check what the endpoints of a spread port received against what each
flow sent.  SERVER holds `xvi-perf server --threads N --json` output (one
object per endpoint, with "thread_queue"); FLOWS holds "PORT SENT" lines,
one per flow (a client's source port and how many it sent).

Passes (exit 0) when every endpoint received something, every flow's
messages all arrived at exactly one endpoint (nothing lost, no flow split
across endpoints), no endpoint saw a message of a flow not listed, and
with --queue-is-flow, flow i (in FLOWS order) arrived at the endpoint of
queue i.  Prints "queue Q: RECEIVED from F flows" per endpoint; on failure
the reason on stderr.

usage: spread_check.py SERVER FLOWS [--queue-is-flow]
"""

import json
import sys


def main():
    args = sys.argv[1:]
    queue_is_flow = "--queue-is-flow" in args
    args = [x for x in args if x != "--queue-is-flow"]
    if len(args) != 2:
        sys.exit(__doc__)
    server, flows_file = args
    eps = [json.loads(l) for l in open(server) if l.startswith("{")]
    flows = [tuple(int(x) for x in l.split()) for l in open(flows_file) if l.strip()]
    sent = dict(flows)
    bad = []
    seen = {}
    for e in eps:
        q = e["thread_queue"]
        print("queue %d: %d from %d flows" % (q, e["received"], len(e["peers"])))
        if e["received"] == 0:
            bad.append("the endpoint of queue %d received nothing" % q)
        for p in e["peers"]:
            port = int(p["peer"].rsplit(":", 1)[1])
            if p["received"] == 0:
                continue
            if port not in sent:
                bad.append("queue %d got %d messages of an unknown flow %d"
                           % (q, p["received"], port))
                continue
            if port in seen:
                bad.append("flow %d split: queues %d and %d" % (port, seen[port], q))
            seen[port] = q
            if p["received"] != sent[port]:
                bad.append("flow %d: sent %d, queue %d received %d"
                           % (port, sent[port], q, p["received"]))
    for port, n in flows:
        if port not in seen:
            bad.append("flow %d: sent %d, no endpoint received any" % (port, n))
    if queue_is_flow:
        for i, (port, _) in enumerate(flows):
            if seen.get(port, i) != i:
                bad.append("flow %d (client queue %d) arrived on queue %d"
                           % (port, i, seen[port]))
    if len(eps) < 2:
        bad.append("%d endpoint summaries, expected one per thread" % len(eps))
    for b in bad:
        print(b, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
