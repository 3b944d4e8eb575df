#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Print the value of every key named KEY anywhere in a JSON file, one a
line, in document order; values that are objects or lists are skipped.

usage: json_values.py FILE KEY
"""

import argparse
import json
import sys


def walk(o, key):
    if isinstance(o, dict):
        for k, v in o.items():
            if k == key and not isinstance(v, (dict, list)):
                print(v)
            walk(v, key)
    elif isinstance(o, list):
        for v in o:
            walk(v, key)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file")
    ap.add_argument("key")
    a = ap.parse_args()
    with open(a.file) as f:
        walk(json.load(f), a.key)
    return 0


if __name__ == "__main__":
    sys.exit(main())
