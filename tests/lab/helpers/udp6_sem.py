#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""IPv6 UDP socket semantics, the same on kernel sockets and under xvi-run.

udp6_sem.py IFACE LOCAL6 LOCAL4 PORT PEER6 PEER4 ECHO_PORT

Talks to a UDP echo server at PEER6/PEER4:ECHO_PORT (one dual-stack IPv6
socket that sends with traffic class and TOS 0x20) from sockets bound to
ports PORT, PORT+1, ... Prints one "ok NAME" per check and exits 1 at the
first "FAIL NAME: why".
"""
import errno
import socket
import struct
import sys

IFACE, L6, L4, PORT, P6, P4, EPORT = sys.argv[1:8]
PORT, EPORT = int(PORT), int(EPORT)
IFINDEX = socket.if_nametoindex(IFACE)
IP_PKTINFO = getattr(socket, "IP_PKTINFO", 8)


def check(name, cond, why=""):
    if not cond:
        print("FAIL %s: %s" % (name, why), flush=True)
        sys.exit(1)
    print("ok %s" % name, flush=True)


def sock6():
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s.settimeout(5)
    return s


def echo(s, data, to=(P6, EPORT)):
    s.sendto(data, to)
    return s.recvfrom(2048)


def refused(name, fn, err):
    try:
        fn()
    except OSError as e:
        check(name, e.errno == err, "errno %s, want %s" % (e.errno, err))
        return
    check(name, False, "no error, want errno %d" % err)


# A specific address: names, sendto/recvfrom with sockaddr_in6.
s = sock6()
s.bind((L6, PORT))
check("getsockname", s.getsockname() == (L6, PORT, 0, 0), repr(s.getsockname()))
d, a = echo(s, b"hello6")
check("recvfrom", d == b"hello6" and a == (P6, EPORT, 0, 0), "%r from %r" % (d, a))
refused("v6only_after_bind",
        lambda: s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1), errno.EINVAL)

# recvmsg with IPV6_PKTINFO and IPV6_TCLASS, in the kernel's order.
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_RECVPKTINFO, 1)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_RECVTCLASS, 1)
s.sendto(b"cmsg", (P6, EPORT))
d, anc, fl, a = s.recvmsg(64, socket.CMSG_SPACE(20) + socket.CMSG_SPACE(4))
got = [(lv, ty) for lv, ty, _ in anc]
check("cmsg_order", got == [(socket.IPPROTO_IPV6, socket.IPV6_PKTINFO),
                            (socket.IPPROTO_IPV6, socket.IPV6_TCLASS)], repr(anc))
addr, idx = struct.unpack("16sI", anc[0][2])
check("pktinfo6", socket.inet_ntop(socket.AF_INET6, addr) == L6 and idx == IFINDEX,
      "%s if %d, want %s if %d" % (socket.inet_ntop(socket.AF_INET6, addr), idx, L6, IFINDEX))
check("tclass", struct.unpack("i", anc[1][2])[0] == 0x20, repr(anc[1][2]))
s.sendto(b"short", (P6, EPORT))
d, anc, fl, a = s.recvmsg(64, socket.CMSG_SPACE(20))
check("ctrunc", fl & socket.MSG_CTRUNC and len(anc) == 1, "flags %#x, %r" % (fl, anc))
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_RECVPKTINFO, 0)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_RECVTCLASS, 0)

# sendmsg with IPV6_PKTINFO: the socket's own source goes, another is EINVAL.
def pkt6(src, ifindex=0):
    return [(socket.IPPROTO_IPV6, socket.IPV6_PKTINFO,
             struct.pack("16sI", socket.inet_pton(socket.AF_INET6, src), ifindex))]


s.sendmsg([b"own-src"], pkt6(L6, IFINDEX), 0, (P6, EPORT))
d, a = s.recvfrom(64)
check("sendmsg_pktinfo6", d == b"own-src", repr(d))
s.sendmsg([b"any-src"], pkt6("::"), 0, (P6, EPORT))
d, a = s.recvfrom(64)
check("sendmsg_pktinfo6_any", d == b"any-src", repr(d))
refused("sendmsg_pktinfo6_other",
        lambda: s.sendmsg([b"x"], pkt6("2001:2::99"), 0, (P6, EPORT)), errno.EINVAL)
# An IPv4-level control message on an IPv6 socket: the kernel skips it.
s.sendmsg([b"v4-level"], [(socket.IPPROTO_IP, socket.IP_TOS, struct.pack("i", 0x40))], 0,
          (P6, EPORT))
d, a = s.recvfrom(64)
check("sendmsg_other_level", d == b"v4-level", repr(d))

# connect: send/recv, getpeername; an IPv4 destination is unreachable (v6 only).
s.connect((P6, EPORT))
check("getpeername", s.getpeername() == (P6, EPORT, 0, 0), repr(s.getpeername()))
s.send(b"connected")
check("connected_recv", s.recv(64) == b"connected")
s.close()

# :: with IPV6_V6ONLY: IPv6 only, the interface's.
w = sock6()
w.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
w.bind(("::", PORT + 1))
check("wild_getsockname", w.getsockname() == ("::", PORT + 1, 0, 0), repr(w.getsockname()))
d, a = echo(w, b"wild")
check("wild_recvfrom", d == b"wild" and a == (P6, EPORT, 0, 0), "%r from %r" % (d, a))
refused("wild_sendto_v4", lambda: w.sendto(b"x", ("::ffff:" + P4, EPORT)), errno.ENETUNREACH)
w.close()

# An unbound socket gets its port on its first sendto (autobind).
u = sock6()
d, a = echo(u, b"autobind")
check("autobind", d == b"autobind" and u.getsockname()[1] > 0, repr(u.getsockname()))
u.close()

# IPv4: sendmsg with IP_PKTINFO's ipi_spec_dst, own and other.
def pkt4(src):
    return [(socket.IPPROTO_IP, IP_PKTINFO,
             struct.pack("I4s4s", 0, socket.inet_aton(src), socket.inet_aton("0.0.0.0")))]


v = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
v.settimeout(5)
v.bind((L4, PORT + 2))
v.sendmsg([b"own4"], pkt4(L4), 0, (P4, EPORT))
d, a = v.recvfrom(64)
check("sendmsg_pktinfo4", d == b"own4" and a == (P4, EPORT), "%r from %r" % (d, a))
# The kernel routes from a source the host does not hold: ENETUNREACH.
refused("sendmsg_pktinfo4_other",
        lambda: v.sendmsg([b"x"], pkt4("198.18.0.99"), 0, (P4, EPORT)), errno.ENETUNREACH)
v.close()
print("all ok", flush=True)
