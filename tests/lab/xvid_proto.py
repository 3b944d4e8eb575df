# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The xdp-vid broker protocol by hand (user/broker.h), for the lab suites'
clients that send what libxvi never would.  path() is the broker's socket in
the run directory given as the script's first argument."""
import glob
import os
import socket
import struct
import sys

REQ, RESP, MAGIC = 112, 304, 0x78766962
TIMEOUT = 5


def path():
    return glob.glob(sys.argv[1] + "/*.sock")[0]


def req(op, frame_size=0, num_frames=0, family=0, addr=b"", tag=b"", ifname=b""):
    return (struct.pack("<IHHIIII16s", MAGIC, 1, op, REQ, frame_size, num_frames, family,
                        addr.ljust(16, b"\0")) + tag.ljust(24, b"\0") +
            ifname.ljust(16, b"\0") + b"\0" * 32)


def open_req(port, ip="198.18.0.2"):
    tag = struct.pack("!BBHI16s", 1, 0, port, 0, socket.inet_aton(ip))
    return req(1, 2048, 1024, tag=tag, ifname=b"xv0")


def resolve_req(ip):
    return req(3, family=socket.AF_INET, addr=socket.inet_aton(ip))


def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(TIMEOUT)
    s.connect(path())
    return s


def answer(s):
    """One reply: (error, message), (None, "") if it is not a reply."""
    msg, anc, flags, addr = s.recvmsg(RESP, socket.CMSG_SPACE(4))
    for level, typ, d in anc:   # the AF_XDP socket of an OPEN: not used here
        if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
            os.close(struct.unpack("i", d[:4])[0])
    if len(msg) != RESP:
        return None, ""
    return struct.unpack_from("<i", msg, 12)[0], msg[48:].split(b"\0")[0].decode()


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
    import time
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
