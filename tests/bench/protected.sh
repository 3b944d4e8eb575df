#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# tests/bench/protected.sh: protected (xdp-vid, veth pair, TX guard) against
# direct endpoints, side by side in one two-node lab.  A benchmark, not a
# test: it prints a table and never fails on numbers.
#
#   node a: xvi-perf client (direct endpoint, root)
#   node b: xvi-perf server, direct (root) or protected (plain uid, through
#           xdp-vid); the server echoes ping-pong and counts throughput.
#
# usage: B=build tests/bench/protected.sh [-t SEC] [-m BYTES]
# Targets (issue #3): protected >= 70 % of the direct message rate, ping-pong
# latency <= 1.3x direct.

set -u -o pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${B:-build}
case $B in /*) BIN=$B/bin ;; *) BIN=$ROOT/$B/bin ;; esac
SEC=3 MSG=64
while getopts "t:m:h" o; do
	case $o in
	t) SEC=$OPTARG ;;
	m) MSG=$OPTARG ;;
	*) sed -n '/^# usage:/,/^# latency/p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
	esac
done
. "$ROOT/netns-lab/lib.sh"
[ "$(id -u)" = 0 ] || { echo "protected.sh: needs root (lab)" >&2; exit 1; }
for b in xdp-vi xdp-vid xvi-perf; do
	[ -x "$BIN/$b" ] || { echo "protected.sh: $BIN/$b missing: make B=$B" >&2; exit 1; }
done

LAB=xbp$$
LAB=${LAB:0:12}
TMP=$(mktemp -d /tmp/xvi-bench-prot.XXXXXX)
chmod 0755 "$TMP"
mkdir -p "$TMP/run" "$TMP/bin" && chmod 0755 "$TMP/run" "$TMP/bin"
cp "$BIN/xvi-perf" "$TMP/bin/" && chmod 0755 "$TMP/bin/xvi-perf"
VIDPID=
lab_at_exit '[ -n "$VIDPID" ] && kill "$VIDPID"; rm -rf "$TMP"'
lab_up --name "$LAB" >/dev/null || exit 1
lab_exec --name "$LAB" b -- "$BIN/xdp-vi" attach xv0 >/dev/null 2>&1 || exit 1
lab_exec --name "$LAB" a -- "$BIN/xdp-vi" attach xv0 >/dev/null 2>&1 || exit 1
lab_exec --name "$LAB" -T 600 b -- sh -c 'echo $$ >"$0"; exec "$@"' "$TMP/vid.pid" \
	env XVI_RUN_DIR="$TMP/run" "$BIN/xdp-vid" xv0 >"$TMP/vid.log" 2>&1 &
for _ in $(seq 50); do [ -s "$TMP/vid.pid" ] && ls "$TMP"/run/*.sock >/dev/null 2>&1 && break; sleep 0.1; done
VIDPID=$(cat "$TMP/vid.pid" 2>/dev/null)
UIDP=$((20000 + $$ % 20000))
# The same segment for both servers: the library's direct default (4096
# frames, rings of 2048; protected endpoints default to a quarter of that
# to fit RLIMIT_MEMLOCK, which 8 MiB for this uid alone still allows).
SIZES=(--ring 2048 --frames 4096)

# server MODE TAG: start the server on b for one measurement
server() {
	local mode=$1 tag=$2 pre=()
	[ "$mode" = protected ] && pre=(setpriv --reuid="$UIDP" --regid=65534 --clear-groups --inh-caps=-all)
	lab_exec --name "$LAB" -T $((SEC + 20)) b -- env XVI_RUN_DIR="$TMP/run" "${pre[@]}" \
		"$TMP/bin/xvi-perf" server -i 198.18.0.2 -p 11111 --iface xv0 -t $((SEC + 4)) \
		"${SIZES[@]}" --json >"$TMP/srv-$tag.json" 2>"$TMP/srv-$tag.err" &
	SPID=$!
	sleep 1
}

client() {
	lab_exec --name "$LAB" -T $((SEC + 20)) a -- "$BIN/xvi-perf" "$1" -i 198.18.0.2 -p 11111 \
		--iface xv0 -m "$MSG" -t "$SEC" --json >"$TMP/cli-$2.json" 2>"$TMP/cli-$2.err"
}

# val FILE KEY: latency_usec.KEY of a ping-pong result
val() {
	python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["latency_usec"][sys.argv[2]])' \
		"$1" "$2" 2>/dev/null || echo 0
}

declare -A P50 AVG RATE
for mode in direct protected; do
	server "$mode" "pp-$mode"
	client ping-pong "pp-$mode" || echo "ping-pong $mode failed: $(head -c 300 "$TMP/cli-pp-$mode.err")" >&2
	wait "$SPID"
	P50[$mode]=$(val "$TMP/cli-pp-$mode.json" p50)
	AVG[$mode]=$(val "$TMP/cli-pp-$mode.json" avg)
	server "$mode" "tp-$mode"
	client throughput "tp-$mode" || echo "throughput $mode failed: $(head -c 300 "$TMP/cli-tp-$mode.err")" >&2
	wait "$SPID"
	[ -n "${KEEP:-}" ] && cp "$TMP/srv-tp-$mode.json" "$TMP/cli-tp-$mode.json" "$KEEP/" 2>/dev/null
	RATE[$mode]=$(python3 -c 'import json,sys
s = json.load(open(sys.argv[1])); c = json.load(open(sys.argv[2]))
print(int(s.get("received", 0) / max(c.get("seconds", 1), 1e-9)))' \
		"$TMP/srv-tp-$mode.json" "$TMP/cli-tp-$mode.json" 2>/dev/null || echo 0)
done

python3 - "${RATE[direct]}" "${RATE[protected]}" "${P50[direct]}" "${P50[protected]}" \
	"${AVG[direct]}" "${AVG[protected]}" "$MSG" "$SEC" <<'PY'
import sys
rd, rp, pd, pp, ad, ap = map(float, sys.argv[1:7])
msg, sec = sys.argv[7], sys.argv[8]
def ratio(a, b):
    return "%.2f" % (a / b) if b else "n/a"
print("protected vs direct endpoints, %s-byte messages, %s s per run" % (msg, sec))
print("%-28s %12s %12s %8s  %s" % ("metric", "direct", "protected", "ratio", "target"))
print("%-28s %12.0f %12.0f %8s  %s" % ("server receive rate, msg/s", rd, rp, ratio(rp, rd), ">= 0.70"))
print("%-28s %12.1f %12.1f %8s  %s" % ("ping-pong one-way p50, us", pd, pp, ratio(pp, pd), "<= 1.30"))
print("%-28s %12.1f %12.1f %8s  %s" % ("ping-pong one-way avg, us", ad, ap, ratio(ap, ad), ""))
PY
