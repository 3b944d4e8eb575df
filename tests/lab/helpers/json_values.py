#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Print the value of every key named KEY anywhere in a JSON file, one a
line, in document order; values that are objects or lists are skipped.

usage: json_values.py FILE KEY

The values go out in one write, and a reader that stops early (`| grep
-q`) ends nothing in error: under `set -o pipefail` a broken pipe here
would fail a check that matched.
"""

import argparse
import json
import os
import sys


def walk(o, key, out):
    if isinstance(o, dict):
        for k, v in o.items():
            if k == key and not isinstance(v, (dict, list)):
                out.append(str(v))
            walk(v, key, out)
    elif isinstance(o, list):
        for v in o:
            walk(v, key, out)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file")
    ap.add_argument("key")
    a = ap.parse_args()
    out = []
    with open(a.file) as f:
        walk(json.load(f), a.key, out)
    try:
        sys.stdout.write("".join(v + "\n" for v in out))
        sys.stdout.flush()
    except BrokenPipeError:
        # the reader has what it wanted; exit's flush must not fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
