# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The xdp-vid broker protocol by hand (libxvi/broker/broker.h), the one
copy of its wire format in the lab, for clients that send what libxvi never
would (broker_requests.py).  Set RUN_DIR, the run directory that holds the
broker's socket, before connecting; TIMEOUT bounds every socket operation.

    req(op, ...)        a request of REQ bytes
    open_req(port, ip)  OPEN of udp IP:PORT on xv0, 2048-byte frames
    resolve_req(ip)     RESOLVE of an IPv4 next hop
    conn([timeout])     a connection to the broker (TIMEOUT s by default)
    error_of(reply)     a reply's error field, None if it is not a reply
    answer(s)           (error, message) of the next reply on s
    ask(s, data)        send a request, then answer(s)
    talk(s, data)       ask(s, data)'s error only
    hold_conns(n, limit, tmo)  n connections, once the broker has refused
                        what it will
"""
import glob
import os
import socket
import struct
import time

REQ, RESP, MAGIC = 184, 316, 0x78766962   # request and reply sizes, "xvib"
VERSION = 3
OP_OPEN, OP_RESOLVE = 1, 3
RUN_DIR = "."
TIMEOUT = 5


def path():
    return glob.glob(RUN_DIR + "/*.sock")[0]


def req(op, frame_size=0, num_frames=0, family=0, addr=b"", tag=b"", ifname=b""):
    # ext_handler, ext_flags, ext_prog (EXT_* requests only) and reserved: zero
    return (struct.pack("<IHHIIII16s", MAGIC, VERSION, op, REQ, frame_size, num_frames,
                        family, addr.ljust(16, b"\0")) + tag.ljust(24, b"\0") +
            ifname.ljust(16, b"\0") + b"\0" * (4 + 4 + 64) + b"\0" * 32)


def open_req(port, ip="198.18.0.2"):
    tag = struct.pack("!BBHI16s", 1, 0, port, 0, socket.inet_aton(ip))
    return req(OP_OPEN, 2048, 1024, tag=tag, ifname=b"xv0")


def resolve_req(ip):
    return req(OP_RESOLVE, family=socket.AF_INET, addr=socket.inet_aton(ip))


def conn(timeout=None):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    # TIMEOUT read now: a program sets it after importing this module
    s.settimeout(timeout or TIMEOUT)
    s.connect(path())
    return s


def error_of(reply):
    return struct.unpack_from("<i", reply, 12)[0] if len(reply) == RESP else None


def answer(s):
    """One reply: (error, message), (None, "") if it is not a reply."""
    msg, anc, flags, addr = s.recvmsg(RESP, socket.CMSG_SPACE(4))
    for level, typ, d in anc:   # the AF_XDP socket of an OPEN: not used here
        if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
            os.close(struct.unpack("i", d[:4])[0])
    if len(msg) != RESP:
        return None, ""
    return error_of(msg), msg[60:].split(b"\0")[0].decode()


def ask(s, data):
    try:
        s.send(data)
    except OSError:
        pass    # refused at connect: the answer is already queued
    return answer(s)


def talk(s, data):
    return ask(s, data)[0]


def hold_conns(n, limit, tmo):
    """Open @n connections; once the daemon has answered (refused) all it
    will, which leaves at most @limit waiting, or after @tmo seconds:
    (sockets, how many wait, how many were refused)."""
    socks, refused = [], 0
    for i in range(n):
        try:
            socks.append(conn())
        except OSError:
            refused += 1
    # A refused connection gets its answer at once: poll until the daemon
    # has dealt with every connection (bounded), not for a fixed time.
    t0 = time.monotonic()
    for s in socks:
        s.setblocking(False)
    while True:
        held = 0
        for s in socks:
            try:
                s.recv(RESP, socket.MSG_PEEK)
            except BlockingIOError:
                held += 1
            except OSError:
                pass
        if held <= limit or time.monotonic() - t0 > tmo:
            break
        time.sleep(0.1)
    return socks, held, len(socks) - held + refused
