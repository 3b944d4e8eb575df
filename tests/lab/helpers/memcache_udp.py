#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""A memcached client over UDP (the 8-byte frame header, then text commands).

    memcache_udp.py HOST PORT get KEY          print the value, or exit 3 on a miss
    memcache_udp.py HOST PORT set KEY VALUE    exit 0 on STORED
    memcache_udp.py HOST PORT delete KEY       exit 0 on DELETED or NOT_FOUND
    memcache_udp.py HOST PORT consistency [--writers N] [--readers N] [--rounds N]
        Each writer owns one key and loops: set it to a new value, then (once
        STORED came back) GET it on another socket, which must return that
        value; delete it, then GET must miss.  Readers GET the writers' keys
        all the while, so that their replies race the writes.  Prints one
        line per violation and a summary; exit 1 on any violation.
    memcache_udp.py HOST PORT bench KEY --seconds S [--window W]
        GET KEY with W requests outstanding for S seconds; prints one JSON
        line: gets/s, p50 and p99 latency in microseconds, hits, misses.

A request is retried (with a new request id) after --timeout seconds without
its reply: UDP may lose datagrams on a busy veth.
"""
import argparse
import json
import os
import random
import socket
import struct
import sys
import threading
import time


class Client:
    def __init__(self, host, port, timeout):
        fam = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.s = socket.socket(fam, socket.SOCK_DGRAM)
        self.s.connect((host, port))
        self.timeout = timeout
        self.rid = random.randrange(65536)

    def call(self, cmd, tries=20):
        for _ in range(tries):
            self.rid = (self.rid + 1) & 0xFFFF
            self.s.send(struct.pack("!HHHH", self.rid, 0, 1, 0) + cmd)
            deadline = time.monotonic() + self.timeout
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.s.settimeout(left)
                try:
                    d = self.s.recv(65536)
                except socket.timeout:
                    break
                if len(d) < 8:
                    continue
                rid, seq, total, _ = struct.unpack("!HHHH", d[:8])
                if rid != self.rid:
                    continue        # a late reply to an earlier try
                if seq != 0 or total != 1:
                    raise RuntimeError("multi-datagram reply not handled")
                return d[8:]
        raise TimeoutError("no reply to %r" % cmd[:40])

    def get(self, key):
        r = self.call(b"get " + key + b"\r\n")
        if r == b"END\r\n":
            return None
        if not r.startswith(b"VALUE "):
            raise RuntimeError("bad GET reply %r" % r[:60])
        hdr, rest = r.split(b"\r\n", 1)
        n = int(hdr.split()[3])
        if rest[n:] != b"\r\nEND\r\n":
            raise RuntimeError("bad GET reply %r" % r[:60])
        return rest[:n]

    def set(self, key, val):
        r = self.call(b"set %s 0 0 %d\r\n%s\r\n" % (key, len(val), val))
        if r != b"STORED\r\n":
            raise RuntimeError("set: %r" % r)

    def delete(self, key):
        r = self.call(b"delete " + key + b"\r\n")
        if r not in (b"DELETED\r\n", b"NOT_FOUND\r\n"):
            raise RuntimeError("delete: %r" % r)


def consistency(a):
    errors = []
    stop = threading.Event()
    keys = [b"xvi-cons-%d-%d" % (os.getpid(), w) for w in range(a.writers)]
    counts = {"checks": 0, "reader_gets": 0}
    lock = threading.Lock()

    def writer(key):
        try:
            w = Client(a.host, a.port, a.timeout)
            r = Client(a.host, a.port, a.timeout)
            for i in range(a.rounds):
                val = b"%s-v%d" % (key, i)
                w.set(key, val)
                # Twice: the first may fill the cache, the second may hit.
                for _ in range(2):
                    got = r.get(key)
                    if got != val:
                        errors.append("%s round %d: set %r, then GET returned %r"
                                      % (key.decode(), i, val, got))
                w.delete(key)
                for _ in range(2):
                    got = r.get(key)
                    if got is not None:
                        errors.append("%s round %d: deleted, then GET returned %r"
                                      % (key.decode(), i, got))
                with lock:
                    counts["checks"] += 4
        except Exception as e:  # noqa: BLE001 - reported as a failure
            errors.append("%s: %s" % (key.decode(), e))

    def reader(n):
        c = Client(a.host, a.port, a.timeout)
        got = 0
        while not stop.is_set():
            try:
                c.get(keys[n % len(keys)])
                got += 1
            except TimeoutError:
                pass
            n += 1
        with lock:
            counts["reader_gets"] += got

    rs = [threading.Thread(target=reader, args=(i,)) for i in range(a.readers)]
    ws = [threading.Thread(target=writer, args=(k,)) for k in keys]
    for t in rs + ws:
        t.start()
    for t in ws:
        t.join()
    stop.set()
    for t in rs:
        t.join()
    for e in errors:
        print("VIOLATION " + e)
    print("consistency: %d writers x %d rounds, %d checks, %d reader GETs, %d violations"
          % (a.writers, a.rounds, counts["checks"], counts["reader_gets"], len(errors)))
    return 1 if errors else 0


def bench(a):
    fam = socket.AF_INET6 if ":" in a.host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.connect((a.host, a.port))
    s.settimeout(0.2)
    req = b"get " + a.key.encode() + b"\r\n"
    sent = {}
    lat = []
    hits = misses = lost = 0
    rid = 0
    end = time.monotonic() + a.seconds

    def send():
        nonlocal rid
        rid = (rid + 1) & 0xFFFF
        sent[rid] = time.perf_counter()
        s.send(struct.pack("!HHHH", rid, 0, 1, 0) + req)

    for _ in range(a.window):
        send()
    t0 = time.monotonic()
    while time.monotonic() < end:
        try:
            d = s.recv(65536)
        except socket.timeout:
            lost += len(sent)
            sent.clear()
            for _ in range(a.window):
                send()
            continue
        r = struct.unpack("!H", d[:2])[0]
        t = sent.pop(r, None)
        if t is None:
            continue
        lat.append(time.perf_counter() - t)
        if d[8:14] == b"VALUE ":
            hits += 1
        else:
            misses += 1
        send()
    dt = time.monotonic() - t0
    lat.sort()
    n = len(lat)
    print(json.dumps({
        "gets_per_s": round(n / dt), "p50_us": round(lat[n // 2] * 1e6, 1) if n else None,
        "p99_us": round(lat[min(n - 1, n * 99 // 100)] * 1e6, 1) if n else None,
        "hits": hits, "misses": misses, "lost": lost, "window": a.window}))
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("host")
    p.add_argument("port", type=int)
    p.add_argument("op", choices=["get", "set", "delete", "consistency", "bench"])
    p.add_argument("args", nargs="*")
    p.add_argument("--timeout", type=float, default=0.5)
    p.add_argument("--writers", type=int, default=4)
    p.add_argument("--readers", type=int, default=4)
    p.add_argument("--rounds", type=int, default=200)
    p.add_argument("--seconds", type=float, default=3)
    p.add_argument("--window", type=int, default=1)
    a = p.parse_args()
    if a.op == "consistency":
        return consistency(a)
    if a.op == "bench":
        if len(a.args) != 1:
            p.error("bench KEY")
        a.key = a.args[0]
        return bench(a)
    c = Client(a.host, a.port, a.timeout)
    if a.op == "get":
        v = c.get(a.args[0].encode())
        if v is None:
            return 3
        sys.stdout.buffer.write(v + b"\n")
    elif a.op == "set":
        c.set(a.args[0].encode(), a.args[1].encode())
    else:
        c.delete(a.args[0].encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
