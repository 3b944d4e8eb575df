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
# Method as tests/bench/run: the variants alternate (direct, protected,
# direct, ...) for ROUNDS rounds and the table shows median (min-max);
# client pinned to CPU 0, server to CPU 1; both ends of a ping-pong busy
# poll, so no scheduler wake-up sits inside the measurement; the message
# rate uses the library's default adaptive wait, as in tests/bench/run.
#
# usage: B=build tests/bench/protected.sh [-t SEC] [-m BYTES] [-r ROUNDS]
# Targets: protected >= 70 % of the direct message rate, ping-pong
# latency <= 1.3x direct.

set -u -o pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${B:-build}
case $B in /*) BIN=$B/bin ;; *) BIN=$ROOT/$B/bin ;; esac
SEC=3 MSG=64 ROUNDS=3
while getopts "t:m:r:h" o; do
	case $o in
	t) SEC=$OPTARG ;;
	m) MSG=$OPTARG ;;
	r) ROUNDS=$OPTARG ;;
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
PIN_A=() PIN_B=()
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
	PIN_A=(taskset -c 0) PIN_B=(taskset -c 1)
fi

# server MODE TAG WAIT: start the server on b for one measurement
server() {
	local mode=$1 tag=$2 wait=$3 pre=()
	[ "$mode" = protected ] && pre=(setpriv --reuid="$UIDP" --regid=65534 --clear-groups --inh-caps=-all)
	lab_exec --name "$LAB" -T $((SEC + 20)) b -- env XVI_RUN_DIR="$TMP/run" "${PIN_B[@]}" \
		"${pre[@]}" "$TMP/bin/xvi-perf" server -i 198.18.0.2 -p 11111 --iface xv0 \
		-t $((SEC + 4)) --wait "$wait" "${SIZES[@]}" --json >"$TMP/srv-$tag.json" \
		2>"$TMP/srv-$tag.err" &
	SPID=$!
	sleep 1
}

# client TEST TAG WAIT
client() {
	lab_exec --name "$LAB" -T $((SEC + 20)) a -- "${PIN_A[@]}" "$BIN/xvi-perf" "$1" \
		-i 198.18.0.2 -p 11111 --iface xv0 -m "$MSG" -t "$SEC" --wait "$3" --json \
		>"$TMP/cli-$2.json" 2>"$TMP/cli-$2.err"
}

# val FILE KEY: latency_usec.KEY of a ping-pong result
val() {
	python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["latency_usec"][sys.argv[2]])' \
		"$1" "$2" 2>/dev/null || echo 0
}

# One line per measurement: "MODE METRIC VALUE", summarised at the end.
RES=$TMP/results
: >"$RES"
for round in $(seq "$ROUNDS"); do
	for mode in direct protected; do
		tag=$mode-$round
		server "$mode" "pp-$tag" busy
		client ping-pong "pp-$tag" busy ||
			echo "ping-pong $mode failed: $(head -c 300 "$TMP/cli-pp-$tag.err")" >&2
		wait "$SPID"
		echo "$mode p50 $(val "$TMP/cli-pp-$tag.json" p50)" >>"$RES"
		echo "$mode avg $(val "$TMP/cli-pp-$tag.json" avg)" >>"$RES"
		server "$mode" "tp-$tag" adaptive
		client throughput "tp-$tag" adaptive ||
			echo "throughput $mode failed: $(head -c 300 "$TMP/cli-tp-$tag.err")" >&2
		wait "$SPID"
		[ -n "${KEEP:-}" ] && cp "$TMP/srv-tp-$tag.json" "$TMP/cli-tp-$tag.json" "$KEEP/" \
			2>/dev/null
		echo "$mode rate $(python3 -c 'import json,sys
s = json.load(open(sys.argv[1])); c = json.load(open(sys.argv[2]))
print(int(s.get("received", 0) / max(c.get("seconds", 1), 1e-9)))' \
			"$TMP/srv-tp-$tag.json" "$TMP/cli-tp-$tag.json" 2>/dev/null || echo 0)" >>"$RES"
	done
done

python3 - "$RES" "$MSG" "$SEC" "$ROUNDS" <<'PY'
import statistics, sys
res, msg, sec, rounds = sys.argv[1:5]
v = {}
for line in open(res):
    mode, metric, val = line.split()
    v.setdefault((mode, metric), []).append(float(val))
def cell(mode, metric, fmt):
    xs = v.get((mode, metric), [0.0])
    return (fmt % statistics.median(xs)) + " (" + (fmt % min(xs)) + "-" + (fmt % max(xs)) + ")"
def ratio(metric):
    d = statistics.median(v.get(("direct", metric), [0.0]))
    p = statistics.median(v.get(("protected", metric), [0.0]))
    return "%.2f" % (p / d) if d else "n/a"
print("protected vs direct endpoints, %s-byte messages, %s s per run, %s rounds alternating,"
      " median (min-max)" % (msg, sec, rounds))
print("%-28s %24s %24s %7s  %s" % ("metric", "direct", "protected", "ratio", "target"))
print("%-28s %24s %24s %7s  %s" % ("server receive rate, msg/s", cell("direct", "rate", "%.0f"),
      cell("protected", "rate", "%.0f"), ratio("rate"), ">= 0.70"))
print("%-28s %24s %24s %7s  %s" % ("ping-pong one-way p50, us", cell("direct", "p50", "%.2f"),
      cell("protected", "p50", "%.2f"), ratio("p50"), "<= 1.30"))
print("%-28s %24s %24s %7s  %s" % ("ping-pong one-way avg, us", cell("direct", "avg", "%.2f"),
      cell("protected", "avg", "%.2f"), ratio("avg"), ""))
PY
