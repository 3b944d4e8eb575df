#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""GET http://ADDR:PORT/PATH (HTTP/1.0) into OUT the way an event loop
nested in another one waits: the socket is in an epoll set, the outer
loop sleeps in poll() on the epoll set's fd alone, and once that fd is
readable it takes the events with a non-blocking epoll wait (timeout 0),
as GLib sources and sd-event loops embedded in another loop do.  Exits 0
with the body written, 1 on an error, 2 if the outer poll slept 10 s
with the transfer not done (the set's fd never became readable again).

usage: nested_epoll_get.py ADDR PORT PATH OUT
"""

import select
import socket
import sys

STALL_MS = 10000


def main():
    addr, port, path, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    s = socket.create_connection((addr, port), timeout=10)
    s.sendall(("GET %s HTTP/1.0\r\nHost: %s\r\n\r\n" % (path, addr)).encode())
    s.setblocking(False)
    ep = select.epoll()
    ep.register(s.fileno(), select.EPOLLIN)
    outer = select.poll()
    outer.register(ep.fileno(), select.POLLIN)
    data = bytearray()
    eof = False
    while not eof:
        if not outer.poll(STALL_MS):
            print("nested_epoll_get.py: the outer poll slept %d ms with %d bytes in"
                  % (STALL_MS, len(data)), file=sys.stderr)
            return 2
        for _fd, _events in ep.poll(0):
            while True:
                try:
                    chunk = s.recv(1 << 16)
                except BlockingIOError:
                    break
                if not chunk:
                    eof = True
                    break
                data += chunk
    s.close()
    head, sep, body = bytes(data).partition(b"\r\n\r\n")
    if not sep or not head.startswith(b"HTTP/1.0 200"):
        print("nested_epoll_get.py: bad reply: %r" % head[:200], file=sys.stderr)
        return 1
    with open(out, "wb") as f:
        f.write(body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
