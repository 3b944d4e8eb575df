#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Read what `bpftool -j` prints on stdin and print one item a line.

usage: bpftool -j prog show id ID | bpftool_json.py map-ids
       bpftool -j map show id ID  | bpftool_json.py map-name
       bpftool -j net show        | bpftool_json.py tc-prog-ids
       bpftool -j map dump id ID  | bpftool_json.py key-has-ip4 A.B.C.D

  map-ids      the IDs of the maps the program uses
  map-name     the map's name (an empty line if it has none)
  tc-prog-ids  the IDs of the programs at TC hooks
  key-has-ip4  prints nothing; exit 0 if the key of an entry holds the
               IPv4 address's 4 bytes, 1 if none does
"""

import argparse
import json
import socket
import sys


def map_ids(prog):
    print(*prog.get("map_ids", []), sep="\n")


def map_name(m):
    print(m.get("name", ""))


def tc_prog_ids(net):
    for ns in net:
        for t in ns.get("tc", []):
            print(t.get("id", t.get("prog_id", "")))


def key_has_ip4(entries, addr):
    want = socket.inet_aton(addr)
    # a key is a list of its bytes in hex ("0xc6")
    return 0 if [e for e in entries if want in bytes(int(b, 16) for b in e["key"])] else 1


# query: (function, its arguments' names)
QUERIES = {
    "map-ids": (map_ids, []),
    "map-name": (map_name, []),
    "tc-prog-ids": (tc_prog_ids, []),
    "key-has-ip4": (key_has_ip4, ["A.B.C.D"]),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("query", choices=QUERIES)
    ap.add_argument("args", nargs="*")
    a = ap.parse_args()
    fn, names = QUERIES[a.query]
    if len(a.args) != len(names):
        ap.error("%s takes %s" % (a.query, " ".join(names) or "no argument"))
    return fn(json.load(sys.stdin), *a.args) or 0


if __name__ == "__main__":
    sys.exit(main())
