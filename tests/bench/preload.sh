#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# tests/bench/preload.sh: unmodified sockperf under xvi-run against the same
# sockperf on kernel sockets, both ends, on one two-node lab (datapath
# attached on both nodes throughout, so kernel sockets pay for the XDP
# program too).  A benchmark, not a test: it prints a table and never fails
# on numbers.
#
#   node a: sockperf ping-pong / throughput -m SIZE   (client)
#   node b: sockperf server                             (port per run)
#   variants: kernel (both plain), xvi (xvi-run on both) and xvib (xvi-run
#   --tx-batch 32 on both: one send doorbell per 32 datagrams)
#
# The variants alternate (kernel, xvi, kernel, ...) for ROUNDS rounds; the
# table shows median (min-max): ping-pong p50 latency (sockperf's
# percentile 50), and throughput as the message rate the client sent and
# the rate the server side received (kernel: Udp InDatagrams of b's
# namespace; xvi: the endpoint's rx_frames in xdp-vi status), both over
# the run's nominal seconds (sockperf's warm-up included).
#
# usage: B=build tests/bench/preload.sh [-t SEC] [-r ROUNDS] [-s "SIZES"]

set -u -o pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${B:-build}
case $B in /*) BB=$B ;; *) BB=$ROOT/$B ;; esac
SEC=2 ROUNDS=3 SIZES="16 1472"
while [ $# -ge 2 ]; do
	case $1 in -t) SEC=$2 ;; -r) ROUNDS=$2 ;; -s) SIZES=$2 ;; *) break ;; esac
	shift 2
done
[ $# -eq 0 ] || { grep '^# usage:' "$0" | cut -c3- >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "preload.sh: needs root (lab)" >&2; exit 1; }
XVIRUN=$BB/bin/xvi-run
for b in "$BB/bin/xdp-vi" "$XVIRUN" "$BB/lib/libxvi-preload.so"; do
	[ -e "$b" ] || { echo "preload.sh: $b missing: make B=$B" >&2; exit 1; }
done
command -v sockperf >/dev/null || { echo "preload.sh: sockperf missing: make deps" >&2; exit 1; }
. "$ROOT/netns-lab/lib.sh"
TMP=$(mktemp -d /tmp/xvi-bench-pl.XXXXXX)
lab_at_exit "rm -rf '$TMP'"
L=xbp$$
lab_up --name "$L" >&2 || { echo "preload.sh: lab_up failed" >&2; exit 1; }
x() { local n=$1; shift; lab_exec --name "$L" -T 60 "$n" -- "$@"; }
die() { echo "preload.sh: $*" >&2; exit 1; }
for n in a b; do x "$n" "$BB/bin/xdp-vi" attach xv0 >/dev/null || die "attach on $n"; done
x a ping -c 1 -W 2 198.18.0.2 >/dev/null || die "no way from a to b"

udp_in() { x b cat /proc/net/snmp | awk '$1 == "Udp:" && $2 ~ /^[0-9]+$/ { print $2 }'; }
strip() { sed -e 's/\x1b\[[0-9;]*m//g' "$1"; }
PORT=12000

# run VARIANT MODE SIZE PORT: one sockperf run; prints "p50_usec" (ping-pong) or
# "sent_rate recv_rate" (throughput), or "-" when it could not be measured.
run() {
	local v=$1 mode=$2 size=$3 port=$4 pre=() spid in0 in1 rx
	local out=$TMP/$v-$mode-$size-$port.out
	[ "$v" = xvi ] && pre=("$XVIRUN")
	[ "$v" = xvib ] && pre=("$XVIRUN" --tx-batch 32)
	x b "${pre[@]}" sockperf server -i 198.18.0.2 -p "$port" >"$out.srv" 2>&1 &
	spid=$!
	# Ready: the endpoint is published (xvi) or the kernel socket bound.
	for _ in $(seq 100); do
		if [ "$v" != kernel ]; then
			x b "$BB/bin/xdp-vi" status --json >"$TMP/st.json" 2>/dev/null &&
				python3 "$ROOT/tests/lab/helpers/xvi_status.py" "$TMP/st.json" live \
					"$port" && break
		else
			x b ss -H -uln "sport = :$port" | grep -q . && break
		fi
		sleep 0.1
	done
	in0=$(udp_in)
	x a "${pre[@]}" sockperf "$mode" -i 198.18.0.2 -p "$port" -t "$SEC" -m "$size" \
		>"$out" 2>&1
	in1=$(udp_in)
	# The server endpoint's datapath counter, read while it lives.
	rx=
	if [ "$v" != kernel ]; then
		x b "$BB/bin/xdp-vi" status --json >"$TMP/st.json" 2>/dev/null &&
			rx=$(python3 "$ROOT/tests/lab/helpers/xvi_status.py" "$TMP/st.json" counters \
				"$port" rx_frames)
	fi
	pkill -TERM -P "$spid" 2>/dev/null; kill -TERM "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
	if [ "$mode" = ping-pong ]; then
		strip "$out" | sed -n 's/.*percentile 50.000 = *\([0-9.]*\).*/\1/p' | head -1 | grep . || echo -
		return
	fi
	local sent
	sent=$(strip "$out" | sed -n 's/.*Summary: Message Rate is \([0-9]*\).*/\1/p' | head -1)
	[ "$v" != kernel ] || rx=$((in1 - in0))
	echo "${sent:--} $(awk -v n="$rx" -v t="$SEC" 'BEGIN { printf "%d", n / t }')"
}

med() { tr ' ' '\n' | grep -v '^-*$' | sort -g | awk '{ a[NR] = $1 } END {
	if (!NR) { print "-"; exit } printf "%s (%s-%s)", a[int((NR + 1) / 2)], a[1], a[NR] }'; }
medv() { tr ' ' '\n' | grep -v '^-*$' | sort -g | awk '{ a[NR] = $1 } END { print NR ? a[int((NR + 1) / 2)] : "" }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }

declare -A R
for size in $SIZES; do
	for ((i = 0; i < ROUNDS; i++)); do
		for v in kernel xvi xvib; do
			# A port per run, counted here: run's output is read
			# through $(...), a subshell, where an increment is lost.
			PORT=$((PORT + 2))
			R[$v,pp,$size]+="$(run "$v" ping-pong "$size" "$PORT") "
			read -r s r <<<"$(run "$v" throughput "$size" $((PORT + 1)))"
			R[$v,tps,$size]+="$s "
			R[$v,tpr,$size]+="$r "
		done
	done
done

echo "sockperf under xvi-run vs kernel sockets, both ends ($ROUNDS rounds x ${SEC} s, median (min-max))"
echo "xvi-run b32: --tx-batch 32"
row() {
	local k v b
	k=$(medv <<<"${R[kernel,$2,$3]}") v=$(medv <<<"${R[xvi,$2,$3]}") b=$(medv <<<"${R[xvib,$2,$3]}")
	printf '%-26s %-26s %-26s %-26s %-6s %s\n' "$1" "$(med <<<"${R[kernel,$2,$3]}")" \
		"$(med <<<"${R[xvi,$2,$3]}")" "$(med <<<"${R[xvib,$2,$3]}")" "$(ratio "$v" "$k")" \
		"$(ratio "$b" "$k")"
}
printf '%-26s %-26s %-26s %-26s %-6s %s\n' "test" "kernel" "xvi-run" "xvi-run b32" "xvi/k" "b32/k"
for size in $SIZES; do
	row "ping-pong $size B p50 usec" pp "$size"
	row "throughput $size B sent/s" tps "$size"
	row "throughput $size B recv/s" tpr "$size"
done
