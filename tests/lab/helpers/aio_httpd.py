#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""aio_httpd.py DIR ADDR PORT: a minimal HTTP/1.0 file server on asyncio.

asyncio waits with epoll on non-blocking sockets and sends files with
os.sendfile: under xvi-run --streams it exercises the preload's epoll and
sendfile paths.  Each request gets DIR/<path> and the connection closes."""
import asyncio
import os
import sys


async def handle(reader, writer):
    head = await reader.readuntil(b"\r\n\r\n")
    path = head.split(b" ")[1].decode().lstrip("/")
    with open(os.path.join(sys.argv[1], os.path.basename(path)), "rb") as f:
        size = os.fstat(f.fileno()).st_size
        writer.write(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n" % size)
        await writer.drain()
        await asyncio.get_running_loop().sendfile(writer.transport, f, fallback=False)
    writer.close()
    await writer.wait_closed()


async def main():
    srv = await asyncio.start_server(handle, sys.argv[2], int(sys.argv[3]))
    async with srv:
        await srv.serve_forever()


asyncio.run(main())
