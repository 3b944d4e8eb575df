#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The IDs of the kernel's BPF maps, programs or links, read without
opening any of them (BPF_*_GET_NEXT_ID walks the kernel's ID table).

usage: bpf_ids.py list map|prog|link         every ID, one a line
       bpf_ids.py alive map|prog|link ID...  those of the IDs that exist

Opening a map by ID (bpftool map show, BPF_MAP_GET_FD_BY_ID) gives it a
user reference again; doing that to a PROG_ARRAY whose last one just went
leaks it for good (docs/KERNEL.md, fact 49).  Whatever polls for objects
to go away, or lists them while others are being freed, asks here.
"""

import ctypes
import errno
import os
import sys

SYS_BPF = {"x86_64": 321, "aarch64": 280}
# enum bpf_cmd
NEXT_ID = {"prog": 11, "map": 12, "link": 31}


def sys_bpf():
    nr = SYS_BPF.get(os.uname().machine)
    if nr is None:
        sys.exit(f"bpf_ids.py: no bpf syscall number for {os.uname().machine}; "
                 "add it to SYS_BPF")
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc, nr


def all_ids(kind):
    libc, nr = sys_bpf()
    # union bpf_attr for *_GET_NEXT_ID: start_id, next_id, open_flags.
    attr = (ctypes.c_uint32 * 3)()
    ids = []
    while True:
        attr[0], attr[1], attr[2] = (ids[-1] if ids else 0), 0, 0
        if libc.syscall(ctypes.c_long(nr), ctypes.c_int(NEXT_ID[kind]),
                        ctypes.byref(attr), ctypes.c_uint(ctypes.sizeof(attr))) < 0:
            err = ctypes.get_errno()
            if err == errno.ENOENT:
                return ids
            sys.exit(f"bpf_ids.py: BPF {kind} GET_NEXT_ID: {os.strerror(err)} "
                     "(needs CAP_SYS_ADMIN)")
        ids.append(attr[1])


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("list", "alive") or sys.argv[2] not in NEXT_ID:
        sys.exit(__doc__)
    ids = all_ids(sys.argv[2])
    if sys.argv[1] == "list":
        want = ids
    else:
        have = set(ids)
        want = [int(i) for i in sys.argv[3:] if int(i) in have]
    for i in want:
        print(i)


if __name__ == "__main__":
    main()
