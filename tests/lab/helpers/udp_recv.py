#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Receive UDP datagrams on a kernel socket and print one line per datagram.

usage: udp_recv.py ADDR PORT [--ready FILE] [--count N] [--idle SEC]
                   [--max SEC] [--last SEQ] [--rcvbuf BYTES]
                   [--payloads FILE] [--format FMT]

Binds ADDR PORT (IPv4 or IPv6, by ADDR's form), then writes "ready" to the
--ready file, so a sender can start once the file exists.  Stops after
--count datagrams, after --idle seconds of silence (default 60: a bound
for broken runs), after --max seconds in all (the wait for the first
datagram may then take all of them), or right after the datagram whose
sequence number (second word) is --last.  --payloads appends every
payload to FILE.

--format is a Python format string over these fields (default
"{src} {hex}"):
  src    source address        sport  source port
  len    payload length        hex    payload in hex
  text   payload as text, stripped
  seq    the payload's second word (as "seq 12 ..." has it), or "?"
  time   seconds since the socket was bound, e.g. {time:.4f}
"""

import argparse
import socket
import sys
import time


class Fields(dict):
    """The --format fields of one datagram, each computed when asked for:
    a fast sender is not slowed down by fields no one prints."""

    def __init__(self, data, src, t):
        super().__init__()
        self.data, self.src, self.t = data, src, t

    def seq_word(self):
        w = self.data.split()
        return w[1] if len(w) > 1 else None

    def __missing__(self, key):
        d = self.data
        if key == "src":
            return self.src[0]
        if key == "sport":
            return self.src[1]
        if key == "len":
            return len(d)
        if key == "hex":
            return d.hex()
        if key == "text":
            return d.decode(errors="replace").strip()
        if key == "seq":
            w = self.seq_word()
            return w.decode() if w is not None else "?"
        if key == "time":
            return self.t
        raise KeyError(key)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("addr")
    ap.add_argument("port", type=int)
    ap.add_argument("--ready", metavar="FILE")
    ap.add_argument("--count", type=int)
    ap.add_argument("--idle", type=float, default=60, metavar="SEC")
    ap.add_argument("--max", type=float, metavar="SEC")
    ap.add_argument("--last", metavar="SEQ")
    ap.add_argument("--rcvbuf", type=int, metavar="BYTES")
    ap.add_argument("--payloads", metavar="FILE")
    ap.add_argument("--format", default="{src} {hex}", metavar="FMT")
    a = ap.parse_args()
    last = a.last.encode() if a.last is not None else None
    fam = socket.AF_INET6 if ":" in a.addr else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM)
    if a.rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, a.rcvbuf)
    s.bind((a.addr, a.port))
    t0 = time.monotonic()
    if a.ready:
        with open(a.ready, "w") as f:
            f.write("ready\n")
    out = open(a.payloads, "wb") if a.payloads else None
    n = 0
    while a.count is None or n < a.count:
        if a.max is None:
            wait = a.idle
        else:
            left = a.max - (time.monotonic() - t0)
            if left <= 0:
                break
            wait = a.idle if n else max(0.01, left)
        s.settimeout(wait)
        try:
            d, src = s.recvfrom(65535)
        except socket.timeout:
            break
        n += 1
        if out:
            out.write(d)
            out.flush()
        f = Fields(d, src, time.monotonic() - t0)
        print(a.format.format_map(f), flush=True)
        if last is not None and f.seq_word() == last:
            break
    return 0


if __name__ == "__main__":
    sys.exit(main())
