#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# tests/bench/multiq.sh: one UDP port served by 1 and by 2 threads, over
# xdp-vi (a port spread over the queues, XVI_EP_SPREAD, one endpoint per
# queue and thread) against kernel UDP (SO_REUSEPORT, one socket per
# thread), on one two-node lab whose veths have 2 queues.  A benchmark, not
# a test: it prints a table and never fails on numbers.
#
#   node a: xvi-perf throughput --threads N   ---->  node b: xvi-perf server --threads N
#           (xvi: flow i leaves by queue i,             (xvi: endpoint i on queue i;
#            kernel: N sockets, sendmmsg)                kernel: N sockets, SO_REUSEPORT)
#
# The variants alternate (xvi 1, kernel 1, xvi 2, kernel 2, ...) for ROUNDS
# rounds.  The table shows, median (min-max) over the rounds: the rate the
# server counted, the machine's busy CPUs during the run (/proc/stat: a
# and b share the machine, and veth's receive work runs in softirq, owned
# by no process), and the machine's CPU time per delivered message.  Then
# the scaling efficiency, rate(2) / (2 rate(1)), and a model for more
# cores fitted to the CPU per message measured here (its assumptions are
# printed with it).  Then the same for byte streams (--stream, SMSG-byte
# messages): a stream listener per queue over the spread port against
# kernel TCP listeners with SO_REUSEPORT, one connection per client
# thread, in delivered Mbit/s.
#
# usage: B=build tests/bench/multiq.sh [-t SEC] [-m BYTES] [-r ROUNDS] [-s STREAM_BYTES]

set -u -o pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${B:-build}
case $B in /*) BIN=$B/bin ;; *) BIN=$ROOT/$B/bin ;; esac
SEC=2 MSG=64 ROUNDS=3 SMSG=16384
usage() { grep '^# usage:' "$0" | cut -c3- >&2; exit 2; }
while getopts t:m:r:s: o; do
	case $o in t) SEC=$OPTARG ;; m) MSG=$OPTARG ;; r) ROUNDS=$OPTARG ;; s) SMSG=$OPTARG ;;
	*) usage ;; esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || usage
[ "$(id -u)" = 0 ] || { echo "multiq.sh: needs root (a lab)" >&2; exit 1; }
if [ ! -x "$BIN/xdp-vi" ] || [ ! -x "$BIN/xvi-perf" ]; then
	echo "multiq.sh: xdp-vi or xvi-perf missing in $BIN: make B=$B" >&2
	exit 1
fi
. "$ROOT/netns-lab/lib.sh"
TMP=$(mktemp -d /tmp/xvi-bench-mq.XXXXXX)
lab_at_exit "rm -rf '$TMP'"
L=xbq$$
lab_up --name "$L" --queues 2 >&2 || { echo "multiq.sh: lab_up failed" >&2; exit 1; }
x() { local n=$1; shift; lab_exec --name "$L" -T 60 "$n" -- "$@"; }
die() { echo "multiq.sh: $*" >&2; exit 1; }
for n in a b; do x "$n" "$BIN/xdp-vi" attach xv0 >/dev/null || die "attach on $n"; done
x a ping -c 1 -W 2 198.18.0.2 >/dev/null || die "no way from a to b"

busy() {	# busy CPU seconds of the machine so far
	awk -v hz="$(getconf CLK_TCK)" '$1 == "cpu" {
		printf "%.3f\n", ($2 + $3 + $4 + $7 + $8 + $9) / hz }' /proc/stat
}

PORT=11140
run_one() {	# VARIANT THREADS: one run, a line "variant threads rate busy_cpus"
	local v=$1 n=$2 b0 b1 t=() pin_a=() pin_b=() m=$MSG
	case $v in
	xvi) t=(--iface xv0) ;;
	kernel) t=(--kernel) ;;
	# rate: delivered Mbit/s, from the count the server answers
	xvi-stream) t=(--iface xv0 --stream) m=$SMSG ;;
	kernel-tcp) t=(--kernel --stream) m=$SMSG ;;
	esac
	# One thread each: client and server on CPUs of their own, as the
	# threads of a 2-thread run are spread over both (xvi-perf pins them).
	[ "$n" = 1 ] && pin_a=(taskset -c 0) pin_b=(taskset -c 1)
	PORT=$((PORT + 1))
	rm -f "$TMP/srv.pid" "$TMP/srv.err"
	# shellcheck disable=SC2016 # expanded by the inner shell
	x b sh -c 'echo $$ >"$0"; exec "$@"' "$TMP/srv.pid" "${pin_b[@]}" "$BIN/xvi-perf" sr \
		"${t[@]}" --threads "$n" -p $PORT -t 50 --json >"$TMP/srv.json" 2>"$TMP/srv.err" &
	local w=$!
	for _ in $(seq 100); do
		grep -q listening "$TMP/srv.err" 2>/dev/null && break
		sleep 0.1
	done
	b0=$(busy)
	x a "${pin_a[@]}" "$BIN/xvi-perf" tp "${t[@]}" --threads "$n" -i 198.18.0.2 -p $PORT \
		-m "$m" -t "$SEC" --json >"$TMP/cli.json" 2>"$TMP/cli.err"
	b1=$(busy)
	kill -TERM "$(cat "$TMP/srv.pid")" 2>/dev/null
	wait "$w"
	python3 - "$TMP/cli.json" "$v" "$n" "$(echo "$b1 - $b0" | bc)" <<'PY' || echo "$v $n 0 0"
import json, sys
c = json.loads(open(sys.argv[1]).read().splitlines()[-1])
if sys.argv[2] in ("xvi-stream", "kernel-tcp"):
    # the last line: one connection's report, or the sum of N
    secs = c["delivery_seconds"]
    rate = "%.1f" % (c["server_received_bytes"] * 8 / secs / 1e6)
else:
    secs = c["seconds"]
    rate = "%.0f" % ((c.get("server_received") or 0) / secs)
print(sys.argv[2], sys.argv[3], rate, "%.2f" % (float(sys.argv[4]) / secs))
PY
}

for _ in $(seq "$ROUNDS"); do
	for n in 1 2; do
		for v in xvi kernel xvi-stream kernel-tcp; do
			run_one "$v" "$n" | tee -a "$TMP/rows" >&2
		done
	done
done

python3 - "$TMP/rows" "$MSG" "$SEC" "$ROUNDS" "$(nproc)" "$SMSG" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
msg, sec, rounds, ncpu = sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
def col(v, n, i):
    return [float(r[i]) for r in rows if r[0] == v and r[1] == str(n)]
def med(xs):
    return statistics.median(xs) if xs else 0.0
def fmt(xs, f):
    return "%s (%s-%s)" % (f % med(xs), f % min(xs), f % max(xs)) if xs else "-"
def ns_per_msg(v, n):	# machine CPU per delivered message, per round
    return [b * 1e9 / r for r, b in zip(col(v, n, 2), col(v, n, 3)) if r > 0]
print("One UDP port, %s-byte messages, 1 and 2 threads a side (xvi-perf --threads), "
      "%s s a run, %s rounds, %d CPUs" % (msg, sec, rounds, ncpu))
print("| transport | threads | delivered msg/s | machine busy CPUs | machine CPU ns per msg |")
print("|---|---|---|---|---|")
names = {"xvi": "xvi, port spread over 2 queues", "kernel": "kernel UDP, SO_REUSEPORT"}
for v in ("xvi", "kernel"):
    for n in (1, 2):
        print("| %s | %d | %s | %s | %s |" % (names[v], n, fmt(col(v, n, 2), "%.0f"),
              fmt(col(v, n, 3), "%.2f"), fmt(ns_per_msg(v, n), "%.0f")))
print()
for v in ("xvi", "kernel"):
    r1, r2 = med(col(v, 1, 2)), med(col(v, 2, 2))
    if r1 > 0:
        print("%s: scaling efficiency rate(2) / (2 rate(1)) = %.2f" % (v, r2 / (2 * r1)))
x1, k1 = med(col("xvi", 1, 2)), med(col("kernel", 1, 2))
x2, k2 = med(col("xvi", 2, 2)), med(col("kernel", 2, 2))
if k1 > 0 and k2 > 0:
    print("xvi / kernel rate: %.2fx at 1 thread, %.2fx at 2" % (x1 / k1, x2 / k2))
print()
print("Model for N threads a side (fitted to the CPU per message above):")
print("  R(N) = N * k * 1e9 / (c1 + (N - 1) * d) messages/s on N * k cores, where c1 is")
print("  the machine's CPU ns per message at 1 thread, k the busy CPUs that run used")
print("  (so R(1) is the rate measured), d the growth of the CPU per message from 1")
print("  to 2 threads (0 if it fell).  Assumes each thread pair (the sender and the")
print("  receiver of one queue) gets k cores of its own, the queues share nothing but")
print("  what grew d from 1 to 2 threads, that share grows linearly with N, and the")
print("  NIC, memory and the sender are not the limit.  Past N = 2 this machine")
print("  cannot check it.")
print("| transport | c1 ns | k CPUs | d ns | N=1 | N=2 | N=4 | N=8 | N=16 |")
print("|---|---|---|---|---|---|---|---|---|")
for v in ("xvi", "kernel"):
    c1, c2, k = med(ns_per_msg(v, 1)), med(ns_per_msg(v, 2)), med(col(v, 1, 3))
    if c1 <= 0:
        continue
    d = max(c2 - c1, 0.0)
    print("| %s | %.0f | %.2f | %.0f | %s |" % (v, c1, k, d, " | ".join(
        "%.2fM" % (n * k * 1e9 / (c1 + (n - 1) * d) / 1e6) for n in (1, 2, 4, 8, 16))))
print()
print("Byte streams, %s-byte messages, one connection per client thread, delivered "
      "(counted by the server):" % sys.argv[6])
print("| transport | threads | delivered Mbit/s | machine busy CPUs |")
print("|---|---|---|---|")
snames = {"xvi-stream": "xvi streams, a listener per queue of the spread port",
          "kernel-tcp": "kernel TCP, SO_REUSEPORT"}
for v in ("xvi-stream", "kernel-tcp"):
    for n in (1, 2):
        print("| %s | %d | %s | %s |" % (snames[v], n, fmt(col(v, n, 2), "%.1f"),
              fmt(col(v, n, 3), "%.2f")))
for v in ("xvi-stream", "kernel-tcp"):
    r1, r2 = med(col(v, 1, 2)), med(col(v, 2, 2))
    if r1 > 0:
        print("%s: scaling efficiency rate(2) / (2 rate(1)) = %.2f" % (v, r2 / (2 * r1)))
PY
