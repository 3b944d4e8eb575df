#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# tests/bench/ceiling.sh: the lab's ceiling.  A bare AF_XDP sender and
# receiver ($B/tests/xsk_bare: libxdp's xsk API and its default XDP program,
# no xdp-vi code) against xvi-perf datagrams (and xvi streams at 1472 B),
# on one two-node lab, in one run.  A benchmark, not a test: it prints a
# table and never fails on numbers.
#
#   node a (CPU 0)                              node b (CPU 1)
#   xv0: xvi-perf throughput        -------->   xv0: xvi-perf server (xdp-vi attached)
#   xc0: xsk_bare tx                -------->   xc0: xsk_bare rx (libxdp's XSKMAP program)
#
# One XDP program per interface: the bare pair gets a second veth pair of
# its own (xc0, created like the lab's, 2 queues a side), so xdp-vi stays
# attached to xv0 throughout and the variants alternate in every round
# (bare, xvi datagrams, xvi datagrams with XVI_TX_CSUM=sw, xvi stream at
# 1472 B, bare, ...).  Placement as in make
# bench's datagram rows: every sender on CPU 0, every receiver on CPU 1, one
# socket a side, queue 0 (the stream on queue 1, as in make bench).
#
# The rate is what the receiver counted divided by the sender's time, for
# both (xvi-perf: server_received / seconds).  The table shows medians
# (min-max) over the rounds, and xvi as a fraction of the bare ceiling.
#
# usage: B=build tests/bench/ceiling.sh [-t SEC] [-r ROUNDS] [-s "SIZES"]

set -u -o pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${B:-build}
case $B in /*) ;; *) B=$ROOT/$B ;; esac
BIN=$B/bin BARE=$B/tests/xsk_bare
SEC=2 ROUNDS=3 SIZES="64 1472"
usage() { grep '^# usage:' "$0" | cut -c3- >&2; exit 2; }
while getopts t:r:s: o; do
	case $o in t) SEC=$OPTARG ;; r) ROUNDS=$OPTARG ;; s) SIZES=$OPTARG ;; *) usage ;; esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || usage
die() { echo "ceiling.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (a lab)"
for b in "$BIN/xdp-vi" "$BIN/xvi-perf" "$BARE"; do
	[ -x "$b" ] || die "$b missing: make B=$B"
done
. "$ROOT/netns-lab/lib.sh"
TMP=$(mktemp -d /tmp/xvi-bench-ceil.XXXXXX)
lab_at_exit "rm -rf '$TMP'"
L=xbc$$
lab_up --name "$L" --queues 2 >&2 || die "lab_up failed"
x() { local n=$1; shift; lab_exec --name "$L" -T 60 "$n" -- "$@"; }
PIN_A= PIN_B=
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
	PIN_A="taskset -c 0" PIN_B="taskset -c 1"
fi

# The bare pair's veth: both ends created inside the namespaces, as lab_up
# does; its XDP programs go when the lab's teardown deletes the namespaces.
lab_at_exit "ip -n '$L-a' link set dev xc0 xdp off 2>/dev/null; ip -n '$L-b' link set dev xc0 xdp off 2>/dev/null"
ip link add "${L}c" netns "$L-a" numtxqueues 2 numrxqueues 2 type veth \
	peer name "${L}d" netns "$L-b" numtxqueues 2 numrxqueues 2 || die "second veth pair"
i=1
for n in a b; do
	ip -n "$L-$n" link set "${L}$([ $n = a ] && echo c || echo d)" name xc0 || die "rename on $n"
	ip -n "$L-$n" addr add "198.18.1.$i/24" dev xc0 || die "address on $n"
	ip -n "$L-$n" link set xc0 up || die "xc0 up on $n"
	i=$((i + 1))
done
MAC_B=$(ip -n "$L-b" -br link show dev xc0 | awk '{print $3}')
[ -n "$MAC_B" ] || die "no MAC on b's xc0"
for n in a b; do x "$n" "$BIN/xdp-vi" attach xv0 >/dev/null || die "xdp-vi attach on $n"; done
x a ping -c 1 -W 2 198.18.0.2 >/dev/null || die "no way from a to b"

busy() {	# "busy-CPU-seconds wall-seconds" of the machine so far (both nodes share it)
	awk -v hz="$(getconf CLK_TCK)" -v now="$(date +%s.%N)" '$1 == "cpu" {
		printf "%.3f %.3f\n", ($2 + $3 + $4 + $7 + $8 + $9) / hz, now }' /proc/stat
}
# BEFORE AFTER: busy CPUs (machine CPU seconds per wall second) between them
cpus() { echo "$1 $2" | awk '{ printf "%.3f\n", ($4 > $2 ? ($3 - $1) / ($4 - $2) : 0) }'; }
waitfor() {	# FILE PATTERN: until FILE holds PATTERN (<= 5 s)
	for _ in $(seq 50); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
srv() {	# NAME CMD...: a receiver on b, CPU 1; its pid in $TMP/NAME.pid
	local name=$1
	shift
	rm -f "$TMP/$name.pid" "$TMP/$name.err"
	# shellcheck disable=SC2016 # expanded by the inner shell
	lab_exec --name "$L" -T 600 b -- sh -c 'echo $$ >"$0"; exec "$@"' "$TMP/$name.pid" \
		$PIN_B "$@" \
		>"$TMP/$name.json" 2>"$TMP/$name.err" &
	eval "W_$name=$!"
}
srv_stop() {	# NAME
	local w
	kill -TERM "$(cat "$TMP/$1.pid" 2>/dev/null)" 2>/dev/null
	w=W_$1
	wait "${!w}" 2>/dev/null
}

# Long-lived xvi receivers, as make bench has them: datagrams on queue 0,
# the stream (window 128) on queue 1.
srv xd "$BIN/xvi-perf" server -i 198.18.0.2 -p 11151 -t 580 --iface xv0 --json
srv xs "$BIN/xvi-perf" server --stream -i 198.18.0.2 -p 11152 -t 580 --iface xv0 \
	--queue 1 --window 128 --json
waitfor "$TMP/xd.err" listening || die "xvi datagram server: $(head -c 300 "$TMP/xd.err")"
waitfor "$TMP/xs.err" listening || die "xvi stream server: $(head -c 300 "$TMP/xs.err")"

# Every row: "variant size rep delivered_msgs payload_bps busy_cpus sent_msgs"
row() {
	python3 - "$@" <<-'PY'
	import json, sys
	v, size, rep, kind, busy = sys.argv[1:6]
	try:
	    lines = [json.loads(l) for f in sys.argv[6:] for l in open(f) if l.startswith("{")]
	except (OSError, ValueError):
	    lines = []
	rate = bps = sent = 0.0
	if lines and lines[0].get("seconds"):
	    sent = lines[0].get("sent", 0) / lines[0]["seconds"]
	if kind == "bare" and len(lines) == 2:
	    tx, rx = lines
	    rate = rx["frames"] / tx["seconds"]
	    bps = rx["payload_bytes"] * 8 / tx["seconds"]
	elif kind == "dgram" and lines and lines[-1].get("server_received") is not None:
	    c = lines[-1]
	    rate = c["server_received"] / c["seconds"]
	    bps = rate * c["msg_size"] * 8
	elif kind == "stream" and lines and lines[-1].get("server_received_bytes"):
	    c = lines[-1]
	    bps = c["server_received_bytes"] * 8 / c["delivery_seconds"]
	print(v, size, rep, "%.0f" % rate, "%.0f" % bps, busy, "%.0f" % sent)
	PY
}

PORT=11160
for rep in $(seq "$ROUNDS"); do
	for size in $SIZES; do
		# bare: a fresh receiver for every round (its count is the round's)
		PORT=$((PORT + 1))
		srv bare "$BARE" rx -i xc0 -q 0 -p $PORT
		if waitfor "$TMP/bare.err" receiving; then
			b0=$(busy)
			x a $PIN_A "$BARE" tx -i xc0 -q 0 -m "$size" -t "$SEC" -d "$MAC_B" \
				-s 198.18.1.1 -a 198.18.1.2 -p $PORT >"$TMP/tx.json" 2>"$TMP/tx.err"
			b1=$(busy)
			sleep 0.05	# the last frames reach the receiver's ring
			srv_stop bare
			row bare "$size" "$rep" bare "$(cpus "$b0" "$b1")" \
				"$TMP/tx.json" "$TMP/bare.json" | tee -a "$TMP/rows" >&2
			grep -q '"frames":[1-9]' "$TMP/bare.json" ||
				echo "bare round counted nothing: $(cat "$TMP/tx.err" "$TMP/bare.err" \
					"$TMP/tx.json" "$TMP/bare.json" | tr '\n' ' ' | head -c 600)" >&2
		else
			srv_stop bare
			echo "bare receiver did not start: $(head -c 300 "$TMP/bare.err")" >&2
		fi
		b0=$(busy)
		x a $PIN_A "$BIN/xvi-perf" throughput -i 198.18.0.2 -p 11151 -m "$size" -t "$SEC" \
			--iface xv0 --json >"$TMP/cli.json" 2>"$TMP/cli.err"
		b1=$(busy)
		row xvi "$size" "$rep" dgram "$(cpus "$b0" "$b1")" "$TMP/cli.json" |
			tee -a "$TMP/rows" >&2
		# The same with the sender's UDP checksums in software, the
		# receiving datapath verifying them (the default elsewhere than
		# on a local link): the checksum request on and off.
		b0=$(busy)
		x a env XVI_TX_CSUM=sw $PIN_A "$BIN/xvi-perf" throughput -i 198.18.0.2 -p 11151 \
			-m "$size" -t "$SEC" --iface xv0 --json >"$TMP/cli.json" 2>"$TMP/cli.err"
		b1=$(busy)
		row xvi-swcsum "$size" "$rep" dgram "$(cpus "$b0" "$b1")" "$TMP/cli.json" |
			tee -a "$TMP/rows" >&2
		[ "$size" = 1472 ] || continue
		b0=$(busy)
		x a $PIN_A "$BIN/xvi-perf" throughput --stream -i 198.18.0.2 -p 11152 -m "$size" \
			-t "$SEC" --iface xv0 --queue 1 --window 128 --json \
			>"$TMP/cli.json" 2>"$TMP/cli.err"
		b1=$(busy)
		row xvi-stream "$size" "$rep" stream "$(cpus "$b0" "$b1")" "$TMP/cli.json" |
			tee -a "$TMP/rows" >&2
	done
done
srv_stop xd
srv_stop xs

python3 - "$TMP/rows" "$SEC" "$ROUNDS" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
sec, rounds = sys.argv[2], sys.argv[3]
def col(v, size, i):
    return [float(r[i]) for r in rows if r[0] == v and r[1] == size and float(r[4]) > 0]
def med(xs):
    return statistics.median(xs) if xs else 0.0
def fmt(xs, f):
    return "%s (%s-%s)" % (f % med(xs), f % min(xs), f % max(xs)) if xs else "-"
sizes = sorted({r[1] for r in rows}, key=int)
names = {"bare": "bare AF_XDP (xsk_bare)", "xvi": "xvi datagrams (xvi-perf)",
         "xvi-swcsum": "xvi datagrams, checksums in software (XVI_TX_CSUM=sw)",
         "xvi-stream": "xvi stream, window 128 (xvi-perf --stream)"}
print("The ceiling: one bare AF_XDP socket a side against xvi, sender on CPU 0, receiver "
      "on CPU 1, %s s a run, %s rounds alternating" % (sec, rounds))
print()
print("| size B | sender | sent msg/s | delivered msg/s | payload Mbit/s | machine busy CPUs | "
      "fraction of the ceiling |")
print("|---|---|---|---|---|---|---|")
for s in sizes:
    ceil = med(col("bare", s, 4))
    for v in ("bare", "xvi", "xvi-swcsum", "xvi-stream"):
        bps = col(v, s, 4)
        if not bps:
            continue
        rate = "-" if v == "xvi-stream" else fmt(col(v, s, 3), "%.0f")
        sent = "-" if v == "xvi-stream" else fmt(col(v, s, 6), "%.0f")
        frac = "%.2fx" % (med(bps) / ceil) if ceil else "-"
        print("| %s | %s | %s | %s | %s | %s | %s |" % (s, names[v], sent, rate,
              fmt([b / 1e6 for b in bps], "%.0f"), fmt(col(v, s, 5), "%.2f"), frac))
print()
print("fraction: median payload bits/s over the bare sender's median at the same size "
      "(for datagrams the same as the message rate's fraction).")
PY
