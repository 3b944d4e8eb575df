#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# tests/bench/streampp.sh: stream ping-pong latency, xvi streams against
# kernel TCP, with both ends in the same wait mode (busy against busy,
# block against block), and the raw datagram ping-pong (xvi endpoint
# against a kernel UDP socket) in the same modes as the floor under it.
# A benchmark, not a test: it prints a table and never fails on numbers.
#
#   node a: xvi-perf ping-pong          node b: xvi-perf server
#           --stream --queue 1  ------>          --stream --queue 1  (xvi)
#           --stream --kernel   ------>          --stream --kernel   (TCP)
#           --queue 1           ------>          --queue 1           (xvi UDP)
#           --kernel            ------>          --kernel            (UDP)
#
# Clients on CPU 0, servers on CPU 1, as tests/bench/run.  Every server
# lives for its own run only: a busy-polling server left running would
# spin on the CPU the next one needs.  The variants alternate within each
# round, and each round records the cache line round trip between the two
# CPUs (tests/c2c) before and after it: the host moves the vCPUs between
# a near and a far placement (docs/PERFORMANCE.md), so the table pairs
# xvi and kernel rounds of the same placement.  With -o NAME=DIR (any
# number of times), the stream rows also run the xvi build in DIR (its
# bin/xvi-perf) as variant NAME, alternated with this one: old/new
# comparisons in one run.
#
# usage: B=build tests/bench/streampp.sh [-t SECS] [-r ROUNDS] [-m SIZE]
#        [-w "busy block"] [-o NAME=BUILD-DIR]... [-n] (-n: no datagram rows)

set -u -o pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${B:-build}
case $B in /*) ;; *) B=$ROOT/$B ;; esac
SEC=1.5 ROUNDS=3 SIZE=16 WAITS="busy block" OLD=() DGRAM=1
declare -A OLD_DIR=()
usage() { grep '^# usage:' -A1 "$0" | cut -c3- >&2; exit 2; }
while getopts t:r:m:w:o:n o; do
	case $o in
	t) SEC=$OPTARG ;; r) ROUNDS=$OPTARG ;; m) SIZE=$OPTARG ;; w) WAITS=$OPTARG ;;
	o) OLD+=("${OPTARG%%=*}") OLD_DIR[${OPTARG%%=*}]=${OPTARG#*=} ;;
	n) DGRAM=0 ;; *) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || usage
die() { echo "streampp.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (a lab)"
[ -x "$B/bin/xdp-vi" ] && [ -x "$B/bin/xvi-perf" ] || die "xdp-vi or xvi-perf missing in $B/bin: make"
for v in "${OLD[@]}"; do
	case $v in xvi-* | kernel-* | "") die "-o $v: take a name that is not xvi-* or kernel-*" ;; esac
	[ -x "${OLD_DIR[$v]}/bin/xvi-perf" ] ||
		die "-o $v=${OLD_DIR[$v]}: no ${OLD_DIR[$v]}/bin/xvi-perf (build it there first)"
done
for w in $WAITS; do
	case $w in busy | block | adaptive) ;; *) die "-w: wait modes are busy, block, adaptive" ;; esac
done
. "$ROOT/netns-lab/lib.sh"
L=xbp$$ TMP=$(mktemp -d /tmp/xvi-bench-pp.XXXXXX)
lab_at_exit "rm -rf '$TMP'"
lab_up --name "$L" --queues 2 >&2 || die "lab_up failed"
x() { local n=$1; shift; lab_exec --name "$L" -T 60 "$n" -- "$@"; }
# As tests/bench/run: kernel sockets transmit on queue 0 (XPS), endpoints
# on the queue they are bound to (1).
for n in a b; do
	x "$n" sh -c 'echo 3 >/sys/class/net/xv0/queues/tx-0/xps_cpus &&
		echo 0 >/sys/class/net/xv0/queues/tx-1/xps_cpus' || die "XPS on node $n failed"
	x "$n" "$B/bin/xdp-vi" attach xv0 >/dev/null || die "xdp-vi attach on node $n failed"
done
PIN_A=() PIN_B=()
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
	PIN_A=(taskset -c 0) PIN_B=(taskset -c 1)
fi
c2c() { [ -n "${PIN_A[*]}" ] && [ -x "$B/tests/c2c" ] && "$B/tests/c2c" 0 1 2>/dev/null || echo 0; }

# one VARIANT WAIT ROUND: a server for this run, the client, a result line
# "variant wait round p50 p99 c2c-before c2c-after"
one() {
	local v=$1 w=$2 r=$3 bin=$B/bin/xvi-perf o=() c0 c1 spid try
	case $v in
	xvi-stream) o=(--stream --iface xv0 --queue 1 --window 128) ;;
	kernel-tcp) o=(--stream --kernel) ;;
	xvi-udp) o=(--iface xv0 --queue 1) ;;
	kernel-udp) o=(--kernel) ;;
	*) o=(--stream --iface xv0 --queue 1 --window 128) bin=${OLD_DIR[$v]}/bin/xvi-perf ;;
	esac
	c0=$(c2c)
	# The previous server's segment is freed by a kernel work item: a
	# bind that finds the queue busy fails, so start again (bounded).
	for try in 1 2 3 4 5; do
		: >"$TMP/srv.err"
		x b sh -c 'echo $$ >"$0"; exec "$@"' "$TMP/srv.pid" "${PIN_B[@]}" "$bin" server \
			-i 198.18.0.2 -p 11161 -t 30 --wait "$w" "${o[@]}" >/dev/null 2>"$TMP/srv.err" &
		for _ in $(seq 50); do
			grep -q listening "$TMP/srv.err" 2>/dev/null && break
			kill -0 $! 2>/dev/null || break
			sleep 0.05
		done
		grep -q listening "$TMP/srv.err" && break
		wait $! 2>/dev/null
		sleep 0.3
	done
	x a "${PIN_A[@]}" "$bin" ping-pong -i 198.18.0.2 -p 11161 -m "$SIZE" -t "$SEC" \
		--wait "$w" --json "${o[@]}" >"$TMP/cli.json" 2>"$TMP/cli.err"
	spid=$(cat "$TMP/srv.pid" 2>/dev/null)
	[ -n "$spid" ] && kill -TERM "$spid" 2>/dev/null
	wait 2>/dev/null
	c1=$(c2c)
	python3 - "$TMP/cli.json" "$v" "$w" "$r" "$c0" "$c1" <<'PY' ||
import json, sys
j = json.loads(open(sys.argv[1]).readline())
l = j["latency_usec"]
print(*sys.argv[2:5], l["p50"], l["p99"], *sys.argv[5:7])
PY
		echo "streampp.sh: $v $w round $r failed: $(head -c 300 "$TMP/cli.err" "$TMP/srv.err" | tr '\n' ' ')" >&2
}

VARS="xvi-stream kernel-tcp"
[ ${#OLD[@]} = 0 ] || VARS="${OLD[*]} $VARS"
[ "$DGRAM" = 0 ] || VARS="$VARS xvi-udp kernel-udp"
for r in $(seq "$ROUNDS"); do
	for w in $WAITS; do
		for v in $VARS; do
			one "$v" "$w" "$r" >>"$TMP/rows"
		done
	done
	echo "streampp.sh: round $r of $ROUNDS done" >&2
done

OLD_ARGS=()
for v in "${OLD[@]}"; do OLD_ARGS+=("$v=${OLD_DIR[$v]}"); done
python3 - "$TMP/rows" "$ROUNDS" "$SEC" "$SIZE" "${OLD_ARGS[@]}" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
SPLIT = 250	# ns: c2c below is near (sibling threads), above far
def place(r):
    a, b = float(r[5]), float(r[6])
    if not a or not b:
        return "?"
    pa, pb = a < SPLIT, b < SPLIT
    return ("near" if pa else "far") if pa == pb else "mixed"
def cell(xs, f="%.2f"):
    if not xs:
        return "-"
    return (f + " (" + f + "-" + f + ")") % (statistics.median(xs), min(xs), max(xs))
print("Ping-pong one-way latency, %s B messages, %s rounds of %s s, median (min-max) us"
      % (sys.argv[4], sys.argv[2], sys.argv[3]))
olds = [a.split("=", 1) for a in sys.argv[5:]]
for name, d in olds:
    print("%s: the xvi build in %s, alternated with this one (xvi-stream)" % (name, d))
print()
print("| wait | variant | p50 | p99 | rounds near / far / mixed |")
print("|---|---|---|---|---|")
waits = sorted({r[1] for r in rows}, key=lambda w: ["busy", "block", "adaptive"].index(w))
vars_ = []
for r in rows:
    if r[0] not in vars_:
        vars_.append(r[0])
for w in waits:
    for v in vars_:
        rs = [r for r in rows if r[0] == v and r[1] == w]
        pl = [place(r) for r in rs]
        print("| %s | %s | %s | %s | %d / %d / %d |" % (w, v, cell([float(r[3]) for r in rs]),
              cell([float(r[4]) for r in rs], "%.1f"), pl.count("near"), pl.count("far"),
              pl.count("mixed")))
print()
print("Ratios of p50 against the kernel, from rounds whose two runs saw the same placement"
      " (median of the per-round ratios, number of pairs):")
print()
print("| wait | ratio | near | far | all rounds |")
print("|---|---|---|---|---|")
pairs = [(a, "kernel-tcp") for a in ["xvi-stream"] + [n for n, _ in olds]] + \
    [("xvi-udp", "kernel-udp")]
for w in waits:
    for a, k in pairs:
        if a not in vars_ or k not in vars_:
            continue
        cells = {"near": [], "far": [], "all": []}
        for rnd in sorted({r[2] for r in rows}):
            ra = [r for r in rows if r[0] == a and r[1] == w and r[2] == rnd]
            rk = [r for r in rows if r[0] == k and r[1] == w and r[2] == rnd]
            if not ra or not rk:
                continue
            q = float(ra[0][3]) / float(rk[0][3])
            cells["all"].append(q)
            if place(ra[0]) == place(rk[0]) and place(ra[0]) in cells:
                cells[place(ra[0])].append(q)
        f = lambda xs: "%.2fx (%d)" % (statistics.median(xs), len(xs)) if xs else "-"
        print("| %s | %s / %s | %s | %s | %s |" % (w, a, k, f(cells["near"]), f(cells["far"]),
              f(cells["all"])))
PY
