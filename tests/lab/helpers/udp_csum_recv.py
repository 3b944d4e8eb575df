#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Receive UDP datagrams and check the UDP checksum of every frame that
carried one, independently of the kernel.

usage: udp_csum_recv.py ADDR PORT COUNT READY [--iface IFACE]

A UDP socket bound to ADDR PORT plus an AF_PACKET tap on IFACE (default
xv0) that checks the UDP checksum of every incoming frame for PORT.
Prints "DGRAM <hex>" per datagram the socket received, "FRAME ok|bad
<csum>", "FRAME partial <csum>" (the field holds only the folded
pseudo-header sum: a CHECKSUM_PARTIAL skb that a veth passed on as it
was) or "FRAME zero 0" per captured frame, then "CSUMERR <n>": how
much the kernel's count of UDP checksum errors grew meanwhile.  Writes
"ready" to READY once both sockets are open; stops after COUNT datagrams
or 60 s of silence (a bound for broken runs only).
"""

import argparse
import select
import socket
import struct
import sys

from inet_csum import fold, pseudo_header4, pseudo_header6

ETH_P_ALL = 3


def csum_errors(v6):
    """The kernel's count of UDP datagrams dropped for a bad checksum."""
    if v6:
        with open("/proc/net/snmp6") as f:
            for line in f:
                k, v = line.split()
                if k == "Udp6InCsumErrors":
                    return int(v)
    else:
        with open("/proc/net/snmp") as f:
            rows = [line.split() for line in f if line.startswith("Udp:")]
        return int(rows[1][rows[0].index("InCsumErrors")])
    return 0


def check(frame, port, v6):
    """'ok <csum>', 'partial <csum>', 'bad <csum>' or 'zero 0' for a UDP
    frame to port, None for any other frame."""
    et = struct.unpack("!H", frame[12:14])[0]
    if et == 0x0800 and not v6:
        ip = frame[14:]
        ihl = (ip[0] & 15) * 4
        if ip[9] != 17:
            return None
        tot = struct.unpack("!H", ip[2:4])[0]
        udp = ip[ihl:tot]
        ph = pseudo_header4(ip[12:16], ip[16:20], 17, len(udp))
    elif et == 0x86DD and v6:
        ip = frame[14:]
        if ip[6] != 17:
            return None
        plen = struct.unpack("!H", ip[4:6])[0]
        udp = ip[40:40 + plen]
        ph = pseudo_header6(ip[8:24], ip[24:40], 17, len(udp))
    else:
        return None
    if len(udp) < 8 or struct.unpack("!H", udp[2:4])[0] != port:
        return None
    c = struct.unpack("!H", udp[6:8])[0]
    if c == 0:
        return "zero 0"
    if fold(ph + udp) == 0xffff:
        return "ok %04x" % c
    return ("partial " if c == fold(ph) else "bad ") + "%04x" % c


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("addr")
    ap.add_argument("port", type=int)
    ap.add_argument("count", type=int)
    ap.add_argument("ready")
    ap.add_argument("--iface", default="xv0")
    a = ap.parse_args()
    v6 = ":" in a.addr
    u = socket.socket(socket.AF_INET6 if v6 else socket.AF_INET, socket.SOCK_DGRAM)
    u.bind((a.addr, a.port))
    p = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    p.bind((a.iface, 0))
    base = csum_errors(v6)
    with open(a.ready, "w") as f:
        f.write("ready\n")

    def captured():
        f, addr = p.recvfrom(65535)
        if addr[2] != socket.PACKET_OUTGOING:
            res = check(f, a.port, v6)
            if res:
                print("FRAME", res, flush=True)

    got = 0
    while got < a.count:
        r, _, _ = select.select([u, p], [], [], 60)
        if not r:
            break
        if p in r:
            captured()
        if u in r:
            d, _ = u.recvfrom(65535)
            print("DGRAM", d.hex(), flush=True)
            got += 1
    # Frames the tap holds still: the last datagrams' own.
    p.setblocking(False)
    try:
        while True:
            captured()
    except BlockingIOError:
        pass
    print("CSUMERR", csum_errors(v6) - base, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
