#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# tests/bench/preload_tcp.sh: unmodified TCP programs under `xvi-run
# --streams` at both ends against the same programs on kernel TCP, on one
# two-node lab (datapath attached on both nodes throughout).  A benchmark,
# not a test: it prints markdown tables and never fails on numbers.
#
#   node a (client, CPU 0)                      node b (server, CPU 1)
#   sockperf ping-pong|throughput --tcp  --->   sockperf server --tcp
#   iperf3 -c -t SEC                     --->   iperf3 -s -1
#
# Variants, alternating in every round (kernel, xvi, ..., kernel, xvi, ...):
#   kernel   both ends plain
#   xvi      both ends under xvi-run --streams
#   nospin   both under xvi-run --streams --spin-us 0 (poll/select/epoll
#            sleep at once: the spin before a sleep, off)
#   w32      both under xvi-run --streams, XVI_RUN_STREAM_WINDOW=32 (the
#            library's and SOVIA's window; the preload's default is 128)
# sockperf with -i/-p waits in a blocking recv (the library's own wait);
# with a feed file and -F epoll it waits in epoll_wait on non-blocking
# sockets.  Throughput sets TCP_NODELAY only where the row says so
# (sockperf's default there is Nagle; ping-pong's is NODELAY).  Ping-pong: sockperf's p50 and p99 one-way latency (usec).
# Throughput: the message rate the client sent and the rate the server
# counted as received (its "Total N messages received" at SIGINT), both
# over the run's nominal seconds.  iperf3: sum_received bits/s.  Every xvi
# run's --stats must show the connects over xvi streams; a run that fell
# back to kernel TCP is not counted (reported below the table).
#
# usage: B=build tests/bench/preload_tcp.sh [-t SEC] [-r ROUNDS]

set -u -o pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${B:-build}
case $B in /*) BB=$B ;; *) BB=$ROOT/$B ;; esac
SEC=2 ROUNDS=3
while [ $# -ge 2 ]; do
	case $1 in -t) SEC=$2 ;; -r) ROUNDS=$2 ;; *) break ;; esac
	shift 2
done
[ $# -eq 0 ] || { grep '^# usage:' "$0" | cut -c3- >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "preload_tcp.sh: needs root (lab)" >&2; exit 1; }
XVIRUN=$BB/bin/xvi-run
for b in "$BB/bin/xdp-vi" "$XVIRUN" "$BB/lib/libxvi-preload.so"; do
	[ -e "$b" ] || { echo "preload_tcp.sh: $b missing: make B=$B" >&2; exit 1; }
done
for p in sockperf iperf3; do
	command -v $p >/dev/null || { echo "preload_tcp.sh: $p missing: make deps" >&2; exit 1; }
done
. "$ROOT/netns-lab/lib.sh"
TMP=$(mktemp -d /tmp/xvi-bench-pt.XXXXXX)
lab_at_exit "rm -rf '$TMP'"
L=xbt$$
lab_up --name "$L" >&2 || { echo "preload_tcp.sh: lab_up failed" >&2; exit 1; }
x() { local n=$1; shift; lab_exec --name "$L" -T 60 "$n" -- "$@"; }
die() { echo "preload_tcp.sh: $*" >&2; exit 1; }
for n in a b; do x "$n" "$BB/bin/xdp-vi" attach xv0 >/dev/null || die "attach on $n"; done
x a ping -c 1 -W 2 198.18.0.2 >/dev/null || die "no way from a to b"
strip() { sed -e 's/\x1b\[[0-9;]*m//g' "$1"; }

# pre VARIANT STATS: the command prefix of VARIANT (stats into STATS).
pre() {
	case $1 in
	kernel) ;;
	xvi) echo "$XVIRUN --streams --stats $2" ;;
	nospin) echo "$XVIRUN --streams --spin-us 0 --stats $2" ;;
	w32) echo "env XVI_RUN_STREAM_WINDOW=32 $XVIRUN --streams --stats $2" ;;
	esac
}

# Ready: the kernel listener, and for xvi the stream listener's endpoint.
listening() {
	local v=$1 port=$2
	for _ in $(seq 100); do
		if x b ss -Htln "sport = :$port" | grep -q . &&
			{ [ "$v" = kernel ] ||
				{ x b "$BB/bin/xdp-vi" status --json >"$TMP/st.json" 2>/dev/null &&
					python3 "$ROOT/tests/lab/helpers/xvi_status.py" "$TMP/st.json" \
						live "$port"; }; }; then
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# over_xvi VARIANT STATS N: the client's connects (N) all went over xvi.
over_xvi() {
	[ "$1" = kernel ] && return 0
	grep -q "^streams .* connect_xvi=$3 connect_tcp=0 " "$2" 2>/dev/null && return 0
	echo "$1: $(head -1 "$2" 2>/dev/null)" >>"$TMP/fell"
	return 1
}

# sp VARIANT MODE SIZE MUX PORT: one sockperf run; prints "p50 p99"
# (ping-pong) or "sent/s recv/s" (throughput), "- -" if not measured.
sp() {
	local v=$1 mode=$2 size=$3 mux=$4 port=$5 out=$TMP/sp-$5 spid addr sent recv
	addr=(--tcp -i 198.18.0.2 -p "$port")
	if [ "$mux" = epoll ]; then
		echo "T:198.18.0.2:$port" >"$TMP/feed-$port"
		addr=(-f "$TMP/feed-$port" -F epoll --nonblocked)
	fi
	copt=()
	# In throughput mode this sets TCP_NODELAY (sockperf's default there is Nagle).
	[ "$mux" = nodelay ] && copt=(--tcp-avoid-nodelay)
	# shellcheck disable=SC2046 # pre's words
	x b sh -c 'echo $$ >"$0"; exec "$@"' "$out.pid" taskset -c 1 \
		$(pre "$v" "$out.sst") sockperf server "${addr[@]}" >"$out.srv" 2>&1 &
	spid=$!
	if listening "$v" "$port"; then
		# shellcheck disable=SC2046
		x a taskset -c 0 $(pre "$v" "$out.cst") sockperf "$mode" "${addr[@]}" \
			"${copt[@]}" -t "$SEC" -m "$size" >"$out.cli" 2>&1
	fi
	kill -INT "$(cat "$out.pid" 2>/dev/null)" 2>/dev/null
	wait "$spid" 2>/dev/null
	if ! over_xvi "$v" "$out.cst" 1; then
		echo "- -"
	elif [ "$mode" = ping-pong ]; then
		echo "$(strip "$out.cli" | sed -n 's/.*percentile 50.000 = *\([0-9.]*\).*/\1/p' |
			grep . || echo -) $(strip "$out.cli" |
			sed -n 's/.*percentile 99.000 = *\([0-9.]*\).*/\1/p' | grep . || echo -)"
	else
		sent=$(strip "$out.cli" | sed -n 's/.*Summary: Message Rate is \([0-9]*\).*/\1/p')
		recv=$(strip "$out.srv" | sed -n 's/.*Total \([0-9]*\) messages received.*/\1/p')
		echo "${sent:--} $(awk -v n="$recv" -v t="$SEC" 'BEGIN {
			if (n == "") print "-"; else printf "%d", n / t }')"
	fi
}

# iperf VARIANT PORT: one iperf3 run; prints Mbit/s received, or "-".
iperf() {
	local v=$1 port=$2 out=$TMP/ip-$2 spid
	# shellcheck disable=SC2046
	x b taskset -c 1 $(pre "$v" "$out.sst") iperf3 -s -1 -p "$port" -B 198.18.0.2 \
		>"$out.srv" 2>&1 &
	spid=$!
	if listening "$v" "$port"; then
		# shellcheck disable=SC2046
		x a taskset -c 0 $(pre "$v" "$out.cst") iperf3 -c 198.18.0.2 -p "$port" \
			-t "$SEC" -J >"$out.json" 2>"$out.err"
	fi
	wait "$spid" 2>/dev/null
	if ! over_xvi "$v" "$out.cst" 2; then
		echo -
		return
	fi
	python3 -c 'import json, sys
print("%.0f" % (json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"] / 1e6))' \
		"$out.json" 2>/dev/null || echo -
}

# Rows: key, variants, what.  Each cell collects one value per round.
declare -A R
ROWS=(
	"pp16 kernel,xvi ping-pong 16 B, blocking recv"
	"pp1472 kernel,xvi ping-pong 1472 B, blocking recv"
	"ppe16 kernel,xvi,nospin ping-pong 16 B, epoll, non-blocking"
	"tp16 kernel,xvi throughput 16 B"
	"tp1472 kernel,xvi throughput 1472 B"
	"tpn1472 kernel,xvi throughput 1472 B, TCP_NODELAY"
	"iperf3 kernel,xvi,w32 iperf3"
)
PORT=14000
for ((i = 0; i < ROUNDS; i++)); do
	for row in "${ROWS[@]}"; do
		read -r key vs _ <<<"$row"
		for v in ${vs//,/ }; do
			# The port is counted here: sp's output is read through
			# $(...), a subshell, where an increment is lost.
			PORT=$((PORT + 1))
			case $key in
			pp16) val=$(sp "$v" ping-pong 16 recv "$PORT") ;;
			pp1472) val=$(sp "$v" ping-pong 1472 recv "$PORT") ;;
			ppe16) val=$(sp "$v" ping-pong 16 epoll "$PORT") ;;
			tp16) val=$(sp "$v" throughput 16 recv "$PORT") ;;
			tp1472) val=$(sp "$v" throughput 1472 recv "$PORT") ;;
			tpn1472) val=$(sp "$v" throughput 1472 nodelay "$PORT") ;;
			iperf3) val=$(iperf "$v" "$PORT") ;;
			esac
			read -r a b <<<"$val"
			R[$key,$v,0]+="$a "
			R[$key,$v,1]+="${b:-} "
		done
	done
done

# The tables: median (min-max) per cell, and the ratio of medians to kernel.
for key in "${!R[@]}"; do echo "$key=${R[$key]}"; done | python3 -c '
import sys
rows = [r.split(" ", 2) for r in sys.argv[1].split("\n")]
cells = {}
for line in sys.stdin:
    k, vals = line.rstrip("\n").split("=", 1)
    cells[k] = [float(v) for v in vals.split() if v != "-"]
def med(xs):
    xs = sorted(xs)
    return xs[(len(xs) - 1) // 2] if xs else None
def fmt(xs):
    if not xs:
        return "-"
    g = lambda v: "%.2f" % v if v < 100 else "%d" % v
    return "%s (%s-%s)" % (g(med(xs)), g(min(xs)), g(max(xs)))
names = {"kernel": "kernel TCP", "xvi": "xvi-run --streams", "nospin": "xvi, --spin-us 0",
         "w32": "xvi, window 32"}
units = {"pp": ("p50 usec", "p99 usec"), "tp": ("sent msg/s", "received msg/s"),
         "ip": ("Mbit/s received", None)}
print("| test | kernel TCP | xvi-run --streams | xvi/kernel | other xvi variant | other/kernel |")
print("|---|---|---|---|---|---|")
for key, vs, what in rows:
    vs = vs.split(",")
    for j, unit in enumerate(units[key[:2]]):
        if unit is None:
            continue
        c = [cells.get("%s,%s,%d" % (key, v, j), []) for v in vs]
        r = lambda a, b: "%.2f" % (med(a) / med(b)) if a and b and med(b) else "-"
        other = ("%s: %s" % (names[vs[2]], fmt(c[2])), r(c[2], c[0])) if len(vs) > 2 else ("", "")
        print("| %s, %s | %s | %s | %s | %s | %s |" % (what, unit, fmt(c[0]), fmt(c[1]),
              r(c[1], c[0]), other[0], other[1]))
' "$(printf '%s\n' "${ROWS[@]}")"
echo
echo "$ROUNDS rounds x $SEC s a run, variants alternating, median (min-max); client on CPU 0," \
	"server on CPU 1.  Runs that fell back to kernel TCP (not counted):" \
	"$(cat "$TMP/fell" 2>/dev/null | wc -l)."
if [ -s "$TMP/fell" ]; then sed 's/^/    /' "$TMP/fell"; fi
