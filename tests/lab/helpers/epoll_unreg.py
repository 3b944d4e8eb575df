#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Listen on TCP ADDR PORT, register the listener in an epoll set and take
it out again, then wait on that set with stdin alone registered.  Prints
"ready" once waiting; exits 0 when a line comes on stdin and the set
reported no other event, 1 (with the event on stderr) at the first event
for an fd it did not register, 2 if nothing came within 60 s.  Never
accepts: a client's SYN waits.

usage: epoll_unreg.py ADDR PORT
"""

import select
import socket
import sys


def main():
    addr, port = sys.argv[1], int(sys.argv[2])
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, port))
    ls.listen(8)
    ep = select.epoll()
    ep.register(ls, select.EPOLLIN)
    ep.unregister(ls)
    ep.register(sys.stdin.fileno(), select.EPOLLIN)
    print("ready", flush=True)
    for _ in range(60):
        for fd, events in ep.poll(1.0):
            if fd != sys.stdin.fileno():
                print(f"an event for fd {fd} (0x{fd & 0xffffffff:08x}), events 0x{events:x}, "
                      "that was never registered", file=sys.stderr)
                return 1
            sys.stdin.readline()
            return 0
    print("no line on stdin within 60 s", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
