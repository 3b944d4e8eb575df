#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# tests/bench/trace.sh: what tracing (xdp-vi trace, docs/EXTENSIONS.md
# "Tracing") costs the datapath per active message, on and off side by
# side, on one two-node lab.  A benchmark, not a test: it prints a table
# and never fails on numbers.
#
# Node b runs the datapath with a bpffs, an xvi-perf server's endpoint on
# 198.18.0.2:11111 with the count handler at index 2 and the tests' ext_act
# handler at index 3.  xvi_demux runs one frame REPEAT times by
# BPF_PROG_RUN in live-frames mode (tests/bench/xdp_live_run.py; verdicts
# are carried out): an active message for count (then delivered to the
# socket) and one telling ext_act to drop it (arg0 = XVI_EXT_RET_DROP).
# Neither changes the frame's bytes, which matters: live-frames mode copies
# the frame into a page once and recycles the page with whatever the last
# run left in it (a reply's swapped addresses make every later run a frame
# for another host; docs/KERNEL.md).
# Each with tracing off, and on with `xdp-vi trace xv0 >/dev/null` reading
# the ring buffer (every event formatted and written), alternated for
# ROUNDS rounds; the table shows the kernel's average ns per frame, median
# (min-max), and the events the trace took and lost in the "on" runs.
#
# usage: B=build tests/bench/trace.sh [-n REPEAT] [-r ROUNDS]

set -u -o pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${B:-build}
case $B in /*) ;; *) B=$ROOT/$B ;; esac
REPEAT=1000000 ROUNDS=5
while [ $# -ge 2 ]; do
	case $1 in -n) REPEAT=$2 ;; -r) ROUNDS=$2 ;; *) break ;; esac
	shift 2
done
[ $# -eq 0 ] || { grep '^# usage:' "$0" | cut -c3- >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "trace.sh: needs root (lab)" >&2; exit 1; }
XDPVI=$B/bin/xdp-vi XVIPERF=$B/bin/xvi-perf
for f in "$XDPVI" "$XVIPERF" "$B/ext/count.bpf.o" "$B/tests/ext_act.bpf.o"; do
	[ -e "$f" ] || { echo "trace.sh: $f missing: make B=$B" >&2; exit 1; }
done
. "$ROOT/netns-lab/lib.sh"
TMP=$(mktemp -d /tmp/xvi-bench-tr.XXXXXX)
lab_at_exit "rm -rf '$TMP'"
L=xbt$$
lab_up --name "$L" --nodes 2 >&2 || { echo "trace.sh: lab_up failed" >&2; exit 1; }
x() { local n=$1 t=$2; shift 2; lab_exec --name "$L" -T "$t" "$n" -- "$@"; }
die() { echo "trace.sh: $*" >&2; exit 1; }

FS=$LAB_STATE/$L/trace-bpffs
mkdir -p "$FS" && mount -t bpf bpf "$FS" || die "cannot mount a bpffs on $FS"
lab_at_exit "umount '$FS' 2>/dev/null"
xb() { x b 30 "$XDPVI" --bpffs "$FS" "$@"; }
xb attach xv0 >/dev/null || die "attach on b"
x b 600 "$XVIPERF" server -i 198.18.0.2 -p 11111 -t 590 --iface xv0 >/dev/null 2>&1 &
SERVER=$!
lab_at_exit "pkill -TERM -P $SERVER 2>/dev/null"
for _ in $(seq 50); do
	xb status --json 2>/dev/null | grep -q ':11111"' && break
	sleep 0.1
done
xb ext load xv0 "$B/ext/count.bpf.o" --endpoint 198.18.0.2:11111 --handler 2 >/dev/null &&
xb ext load xv0 "$B/tests/ext_act.bpf.o" --endpoint 198.18.0.2:11111 --handler 3 >/dev/null ||
	die "ext load on b failed"
prog=$(x b 10 ip -d link show dev xv0 | grep -oE 'prog/xdp id [0-9]+' | awk '{ print $3 }')
mac=$(x b 10 cat /sys/class/net/xv0/address)
ifindex=$(x b 10 cat /sys/class/net/xv0/ifindex)
for k in "2 count" "3 drop"; do
	set -- $k
	python3 "$ROOT/tests/lab/helpers/udp4_frame.py" --src 198.18.0.1 --dst 198.18.0.2 \
		--sport 40000 --dport 11111 --dst-mac "$mac" --src-mac 02:00:00:00:00:01 \
		--zeros 64 --am "$1" --out "$TMP/frame-$2.bin" || die "frame $2"
done
# ext_act's arg0 (after Ethernet, IPv4, UDP and 8 header bytes): drop, 4.
# The UDP checksum covers it: 0 (none, IPv4) rather than recomputed.
python3 - "$TMP/frame-drop.bin" <<'PY' || die "frame drop"
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
struct.pack_into("!I", b, 14 + 20 + 8 + 8, 4)
struct.pack_into("!H", b, 14 + 20 + 6, 0)
open(sys.argv[1], "wb").write(b)
PY

: >"$TMP/results"
for round in $(seq "$ROUNDS"); do
	for kind in count drop; do
		for v in off on; do
			tpid= events=- lost=-
			if [ $v = on ]; then
				x b 300 "$XDPVI" --bpffs "$FS" trace xv0 >/dev/null 2>"$TMP/trace.err" &
				tpid=$!
				for _ in $(seq 100); do
					grep -q "tracing xv0" "$TMP/trace.err" && break
					sleep 0.1
				done
				grep -q "tracing xv0" "$TMP/trace.err" ||
					die "trace did not start: $(head -c 200 "$TMP/trace.err")"
			fi
			out=$(x b 120 python3 "$ROOT/tests/bench/xdp_live_run.py" "$prog" \
				"$TMP/frame-$kind.bin" "$ifindex" "$REPEAT" 2>&1)
			ns=$(sed -n 's/^ns_per_frame \([0-9]*\)$/\1/p' <<<"$out")
			[ -n "$ns" ] || die "BPF_PROG_RUN: $out"
			if [ -n "$tpid" ]; then
				pkill -TERM -P "$tpid"
				wait "$tpid"
				read -r events lost < <(sed -n \
					's/.*: \([0-9]*\) events, \([0-9]*\) lost.*/\1 \2/p' "$TMP/trace.err")
			fi
			echo "$kind $v $ns ${events:--} ${lost:--}" >>"$TMP/results"
		done
	done
done

python3 - "$TMP/results" "$REPEAT" "$ROUNDS" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
print("xvi_demux by BPF_PROG_RUN (live frames), %s frames a run, %s rounds, "
      "off and on alternated; ns per frame, median (min-max)" % (sys.argv[2], sys.argv[3]))
print()
print("| message | tracing off | tracing on | on - off | events taken / lost (median) |")
print("|---|---|---|---|---|")
for kind, what in (("count", "count handler, then delivered"), ("drop", "ext_act, drop")):
    off = [int(r[2]) for r in rows if r[0] == kind and r[1] == "off"]
    on = [int(r[2]) for r in rows if r[0] == kind and r[1] == "on"]
    ev = [int(r[3]) for r in rows if r[0] == kind and r[1] == "on" and r[3] != "-"]
    lo = [int(r[4]) for r in rows if r[0] == kind and r[1] == "on" and r[4] != "-"]
    fm = lambda v: "%d (%d-%d)" % (statistics.median(v), min(v), max(v))
    print("| %s | %s | %s | %+d | %s / %s |" % (
        what, fm(off), fm(on), statistics.median(on) - statistics.median(off),
        "%d" % statistics.median(ev) if ev else "-", "%d" % statistics.median(lo) if lo else "-"))
PY
