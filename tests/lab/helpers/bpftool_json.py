#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Read what `bpftool -j` prints on stdin and print one item a line.

usage: bpftool -j prog show id ID | bpftool_json.py map-ids
       bpftool -j map show id ID  | bpftool_json.py map-name
       bpftool -j net show        | bpftool_json.py tc-prog-ids

  map-ids      the IDs of the maps the program uses
  map-name     the map's name (an empty line if it has none)
  tc-prog-ids  the IDs of the programs at TC hooks
"""

import argparse
import json
import sys


def map_ids(prog):
    print(*prog.get("map_ids", []), sep="\n")


def map_name(m):
    print(m.get("name", ""))


def tc_prog_ids(net):
    for ns in net:
        for t in ns.get("tc", []):
            print(t.get("id", t.get("prog_id", "")))


QUERIES = {"map-ids": map_ids, "map-name": map_name, "tc-prog-ids": tc_prog_ids}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("query", choices=QUERIES)
    QUERIES[ap.parse_args().query](json.load(sys.stdin))
    return 0


if __name__ == "__main__":
    sys.exit(main())
