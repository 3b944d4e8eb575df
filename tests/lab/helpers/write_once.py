#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Write TEXT and a newline to FILE with one write(2), e.g. a user
namespace's /proc/PID/uid_map or gid_map, which take all their lines in a
single write (a shell's echo or printf does not promise one).

usage: write_once.py FILE TEXT
"""

import argparse
import os
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file")
    ap.add_argument("text")
    a = ap.parse_args()
    data = a.text.encode() + b"\n"
    fd = os.open(a.file, os.O_WRONLY)
    try:
        n = os.write(fd, data)
    finally:
        os.close(fd)
    if n != len(data):
        print("write_once.py: %s took %d of %d bytes" % (a.file, n, len(data)), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
