#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Build one Ethernet/IPv4/UDP frame by hand, checksums computed here (no
kernel help), and send it on an interface or write it to a file.

usage: udp4_frame.py --src IP --dst IP --dport N --dst-mac MAC
                     [--sport N] [--src-mac MAC] [--df] [--bad-checksum]
                     [--tos N] [--ip-options HEX] [--fill-to BYTES]
                     [--am HANDLER] (--payload TEXT | --zeros N)
                     (--send IFACE | --out FILE | --hex)

--send IFACE sends it with AF_PACKET (the source MAC, unless given, is
IFACE's); --out FILE writes it, e.g. for BPF_PROG_RUN; --hex prints it in
hex on one line, e.g. for mbtool's frames command.  --bad-checksum makes
the UDP checksum deliberately wrong; --df sets Don't Fragment; --tos sets
the IPv4 TOS byte (DSCP << 2 | ECN); --ip-options appends these bytes to
the IPv4 header (a multiple of 4); --fill-to pads the payload with '.' to
a frame of BYTES bytes; --am puts an active-message header naming handler
HANDLER (include/xvi_ext.h) in front of the payload.
"""

import argparse
import socket
import struct
import sys

from inet_csum import checksum, pseudo_header4, udp_checksum


def udp4_frame(dst_mac, src_mac, src, dst, sport, dport, payload, df=False,
               bad_checksum=False, tos=0, options=b""):
    """The frame's bytes; MACs and addresses packed."""
    hlen = 20 + len(options)
    ulen = 8 + len(payload)
    udp = struct.pack("!HHHH", sport, dport, ulen, 0) + payload
    c = udp_checksum(pseudo_header4(src, dst, 17, ulen) + udp)
    if bad_checksum:
        c ^= 0x0101
    udp = udp[:6] + struct.pack("!H", c) + udp[8:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x40 | hlen // 4, tos, hlen + ulen, 1,
                     0x4000 if df else 0, 64, 17, 0, src, dst) + options
    ip = ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:]
    return dst_mac + src_mac + b"\x08\x00" + ip + udp


def mac(text):
    return bytes.fromhex(text.replace(":", ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--src", required=True, type=socket.inet_aton, metavar="IP")
    ap.add_argument("--dst", required=True, type=socket.inet_aton, metavar="IP")
    ap.add_argument("--sport", type=int, default=40000)
    ap.add_argument("--dport", type=int, required=True)
    ap.add_argument("--dst-mac", required=True, type=mac, metavar="MAC")
    ap.add_argument("--src-mac", type=mac, metavar="MAC")
    ap.add_argument("--df", action="store_true")
    ap.add_argument("--bad-checksum", action="store_true")
    ap.add_argument("--tos", type=int, default=0, metavar="N")
    ap.add_argument("--ip-options", type=bytes.fromhex, default=b"", metavar="HEX")
    ap.add_argument("--fill-to", type=int, metavar="BYTES")
    ap.add_argument("--am", type=int, metavar="HANDLER")
    body = ap.add_mutually_exclusive_group(required=True)
    body.add_argument("--payload", type=str.encode, metavar="TEXT")
    body.add_argument("--zeros", type=int, metavar="N")
    to = ap.add_mutually_exclusive_group(required=True)
    to.add_argument("--send", metavar="IFACE")
    to.add_argument("--out", metavar="FILE")
    to.add_argument("--hex", action="store_true")
    a = ap.parse_args()
    if len(a.ip_options) % 4:
        ap.error("--ip-options: IPv4 options fill whole 32-bit words")
    src_mac = a.src_mac
    if src_mac is None:
        if not a.send:
            ap.error("--out and --hex need --src-mac")
        with open("/sys/class/net/%s/address" % a.send) as f:
            src_mac = mac(f.read().strip())
    payload = a.payload if a.payload is not None else bytes(a.zeros)
    if a.am is not None:
        # magic "XVAM", version 1, flags 0, handler, arg[2]
        payload = struct.pack("!IBBHII", 0x5856414D, 1, 0, a.am, 0, 0) + payload
    if a.fill_to:
        payload = payload.ljust(a.fill_to - 14 - 20 - len(a.ip_options) - 8, b".")
    frame = udp4_frame(a.dst_mac, src_mac, a.src, a.dst, a.sport, a.dport, payload, a.df,
                       a.bad_checksum, a.tos, a.ip_options)
    if a.hex:
        print(frame.hex())
    elif a.out:
        with open(a.out, "wb") as f:
            f.write(frame)
    else:
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        s.bind((a.send, 0))
        s.send(frame)
    return 0


if __name__ == "__main__":
    sys.exit(main())
