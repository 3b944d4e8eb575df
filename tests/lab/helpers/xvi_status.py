#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Answer a question about the endpoints in a file of
`xdp-vi status --json` (or `xdp-vi stats --json`).  PORT selects the
endpoints whose tag ("udp4 198.18.0.2:7000") ends in ":PORT".

usage: xvi_status.py FILE live PORT
       xvi_status.py FILE endpoints
       xvi_status.py FILE host-end PORT
       xvi_status.py FILE guard COUNTER
       xvi_status.py FILE counters PORT NAME...
       xvi_status.py FILE field PORT NAME...

  live      exit 0 if an endpoint on PORT is published (its bind is not
            "pending"), so traffic sent now reaches it; else exit 1
  endpoints "port pid queue mode" of every endpoint
  host-end  for a protected endpoint on PORT: "IFNAME ACCEPTS RX_DROPPED",
            its host end's name, whether that accepts redirected frames,
            and the interface's rx_dropped
  guard     the guard counter COUNTER of every protected endpoint
  counters  the sum of the endpoint counters NAME... of every endpoint on
            PORT, one line each
  field     for every endpoint on PORT, a line of its values NAME..., each
            a key of the endpoint or a dotted path into it
            ("host_end.mtu", "guard.drop_guard_ip"); "-" where there is none
"""

import argparse
import json
import sys


def endpoints(status):
    """(interface, endpoint) pairs."""
    for i in status["interfaces"]:
        for e in i.get("endpoints") or []:
            yield i, e


def on_port(status, port):
    return [(i, e) for i, e in endpoints(status) if e["tag"].endswith(":" + port)]


def live(status, port):
    return 0 if [e for _, e in on_port(status, port) if e.get("bind") != "pending"] else 1


def list_endpoints(status):
    for _, e in endpoints(status):
        print(e["tag"].rsplit(":", 1)[1], e["pid"], e["queue"], e["mode"])


def host_end(status, port):
    for i, e in on_port(status, port):
        if e.get("host_end"):
            print(e["host_end"]["ifname"], e["host_end"]["accepts_redirect"],
                  i["device"]["rx_dropped"])


def guard(status, counter):
    for _, e in endpoints(status):
        if e.get("guard"):
            print(e["guard"][counter])


def counters(status, port, *names):
    for _, e in on_port(status, port):
        print(sum(e["counters"][n] for n in names))


def field(status, port, *names):
    for _, e in on_port(status, port):
        values = []
        for name in names:
            v = e
            for k in name.split("."):
                v = v.get(k) if isinstance(v, dict) else None
            values.append("-" if v is None else v)
        print(*values)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file")
    queries = ap.add_subparsers(dest="query", required=True)
    q = queries.add_parser("live")
    q.add_argument("port")
    q.set_defaults(answer=lambda st, a: live(st, a.port))
    q = queries.add_parser("endpoints")
    q.set_defaults(answer=lambda st, a: list_endpoints(st))
    q = queries.add_parser("host-end")
    q.add_argument("port")
    q.set_defaults(answer=lambda st, a: host_end(st, a.port))
    q = queries.add_parser("guard")
    q.add_argument("counter")
    q.set_defaults(answer=lambda st, a: guard(st, a.counter))
    q = queries.add_parser("counters")
    q.add_argument("port")
    q.add_argument("names", nargs="+", metavar="NAME")
    q.set_defaults(answer=lambda st, a: counters(st, a.port, *a.names))
    q = queries.add_parser("field")
    q.add_argument("port")
    q.add_argument("names", nargs="+", metavar="NAME")
    q.set_defaults(answer=lambda st, a: field(st, a.port, *a.names))
    a = ap.parse_args()
    with open(a.file) as f:
        status = json.load(f)
    return a.answer(status, a) or 0


if __name__ == "__main__":
    sys.exit(main())
