#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# tests/bench/place.sh: direct placement (the placement handler writes each
# message into the receiver's mapped region) against an endpoint receive
# plus memcpy into a buffer, same sender, same run, on a two-node lab.  A
# benchmark, not a test: it prints a table and never fails on numbers.
#
#   node a: place send (tests/lab/place.c): a MB-MiB file as active
#           messages of 1 KiB from a kernel UDP socket (sendmmsg)
#   node b: place recv, with the handler (asleep on its completion event)
#           or --copy (xvi_endpoint__recv_batch, memcpy to the offset)
#
# The variants alternate (place, copy, place, ...) for ROUNDS rounds; the
# table shows median (min-max) of the bandwidth from GO to the last chunk
# and of the receiving process's CPU seconds (user + system) meanwhile.
#
# usage: B=build tests/bench/place.sh [-m MB] [-r ROUNDS]

set -u -o pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${B:-build}
case $B in /*) BB=$B ;; *) BB=$ROOT/$B ;; esac
MB=64 ROUNDS=3
while [ $# -ge 2 ]; do
	case $1 in -m) MB=$2 ;; -r) ROUNDS=$2 ;; *) break ;; esac
	shift 2
done
[ $# -eq 0 ] || { grep '^# usage:' "$0" | cut -c3- >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "place.sh: needs root (lab)" >&2; exit 1; }
for b in "$BB/bin/xdp-vi" "$BB/tests/place" "$BB/ext/place.bpf.o"; do
	[ -e "$b" ] || { echo "place.sh: $b missing: make B=$B" >&2; exit 1; }
done
. "$ROOT/netns-lab/lib.sh"
TMP=$(mktemp -d /tmp/xvi-bench-pl.XXXXXX)
lab_at_exit "rm -rf '$TMP'"
L=xbp$$
lab_up --name "$L" >&2 || { echo "place.sh: lab_up failed" >&2; exit 1; }
x() { local n=$1; shift; lab_exec --name "$L" -T 120 "$n" -- "$@"; }
die() { echo "place.sh: $*" >&2; exit 1; }
FS=$TMP/bpffs
mkdir -p "$FS" && mount -t bpf bpf "$FS" || die "cannot mount a bpffs on $FS"
lab_at_exit "umount '$FS'"
x b "$BB/bin/xdp-vi" --bpffs "$FS" attach xv0 >/dev/null || die "attach on b"
head -c $((MB << 20)) /dev/urandom >"$TMP/in" || die "no input file"

run_one() {	# VARIANT: one transfer, one line "variant MBps cpu_s"
	local v=$1 w extra=
	[ "$v" = copy ] && extra=--copy
	rm -f "$TMP/out" "$TMP/recv.json"
	x b "$BB/tests/place" recv -i xv0 -a 198.18.0.2 -p 7600 -c 7601 -o "$TMP/out" \
		-b "$FS" $extra >"$TMP/recv.json" 2>"$TMP/recv.err" &
	w=$!
	for _ in $(seq 100); do grep -q '^ready' "$TMP/recv.json" 2>/dev/null && break; sleep 0.1; done
	x a "$BB/tests/place" send -a 198.18.0.2 -p 7600 -c 7601 -f "$TMP/in" ||
		die "sender failed: $(tail -c 300 "$TMP/recv.err")"
	wait "$w" || die "receiver failed: $(tail -c 300 "$TMP/recv.err")"
	cmp -s "$TMP/in" "$TMP/out" || die "$v: the received file differs"
	python3 -c 'import json,sys
j = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")][0]
print(sys.argv[2], j["MBps"], j["cpu_user_s"] + j["cpu_sys_s"], j["rounds"])' \
		"$TMP/recv.json" "$v"
}

for _ in $(seq "$ROUNDS"); do
	for v in place copy; do
		run_one "$v" | tee -a "$TMP/rows" >&2
	done
done

python3 - "$TMP/rows" "$MB" "$ROUNDS" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
def col(v, i):
    return [float(r[i]) for r in rows if r[0] == v]
def fmt(xs, f):
    return "%s (%s-%s)" % (f % statistics.median(xs), f % min(xs), f % max(xs)) if xs else "-"
print("A %s MiB file from a to b in 1 KiB active messages, %s rounds, byte-exact each time"
      % (sys.argv[2], sys.argv[3]))
print("| receiver | MB/s | receiver CPU s (user + sys) | sender rounds |")
print("|---|---|---|---|")
for v, name in (("place", "placement handler, asleep"), ("copy", "endpoint receive + memcpy")):
    print("| %s | %s | %s | %s |" % (name, fmt(col(v, 1), "%.1f"), fmt(col(v, 2), "%.4f"),
          fmt(col(v, 3), "%.0f")))
PY
