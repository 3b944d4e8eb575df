#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# tests/bench/router.sh: the datapath's IP router against the kernel's
# forwarding of the same traffic, on one routed three-node lab
# (a 198.18.1.1 -- m -- 198.18.2.2 b, as tests/lab/router.sh builds it).
# A benchmark, not a test: it prints a table and never fails on numbers.
#
#   node a: xvi-perf throughput --kernel (sendmmsg), MSG-byte datagrams
#   node m: routing in XDP (xdp-vi router enable) or in the kernel (disable)
#   node b: xvi-perf server --kernel, counts what arrives
#
# The variants alternate (xdp, kernel, xdp, ...) for ROUNDS rounds; the
# table shows median (min-max) of the rate counted at b and of the whole
# machine's busy CPUs during the run (/proc/stat: a, m and b share it, and
# m's forwarding runs in softirq context, owned by no process of m).  The
# frames m forwarded in XDP (rt_forwarded) and in its kernel (ForwDatagrams)
# are shown too, so that each row says who did the forwarding.
#
# usage: B=build tests/bench/router.sh [-t SEC] [-m BYTES] [-r ROUNDS]

set -u -o pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${B:-build}
case $B in /*) BIN=$B/bin ;; *) BIN=$ROOT/$B/bin ;; esac
SEC=3 MSG=64 ROUNDS=3
while [ $# -ge 2 ]; do
	case $1 in -t) SEC=$2 ;; -m) MSG=$2 ;; -r) ROUNDS=$2 ;; *) break ;; esac
	shift 2
done
[ $# -eq 0 ] || { grep '^# usage:' "$0" | cut -c3- >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "router.sh: needs root (lab)" >&2; exit 1; }
for b in "$BIN/xdp-vi" "$BIN/xvi-perf" "$BIN/xvi-relay"; do
	[ -x "$b" ] || { echo "router.sh: $b missing: make B=$B" >&2; exit 1; }
done
. "$ROOT/netns-lab/lib.sh"
export XVI_RELAY=$BIN/xvi-relay
TMP=$(mktemp -d /tmp/xvi-bench-rt.XXXXXX)
lab_at_exit "rm -rf '$TMP'"
L=xbr$$
. "$ROOT/tests/bench/routed_lab.sh"
routed_lab_up "$L" || exit 1
x() { local n=$1; shift; lab_exec --name "$L" -T 30 "$n" -- "$@"; }
die() { echo "router.sh: $*" >&2; exit 1; }

# Partial checksums from a kernel sender are the kernel's to forward
# (docs/EXTENSIONS.md, rt_pass_csum_partial): the ends send complete ones.
x a ethtool -K xv0 tx off >/dev/null && x b ethtool -K xv0 tx off >/dev/null ||
	die "could not turn TX checksum offload off on a and b"
for n in a b; do x "$n" "$BIN/xdp-vi" attach xv0 >/dev/null || die "attach on $n"; done
for i in xva xvb; do x m "$BIN/xdp-vi" attach "$i" >/dev/null || die "attach $i on m"; done
# Neighbours resolved before the first measured frame.
x a ping -c 1 -W 2 198.18.2.2 >/dev/null || die "no way from a to b"

busy() {	# busy CPU seconds of the machine so far
	awk -v hz="$(getconf CLK_TCK)" '$1 == "cpu" {
		printf "%.3f\n", ($2 + $3 + $4 + $7 + $8 + $9) / hz }' /proc/stat
}
kfwd() {
	x m cat /proc/net/snmp | awk '/^Ip: [A-Za-z]/ { for (i = 2; i <= NF; i++)
		if ($i == "ForwDatagrams") c = i } /^Ip: [0-9]/ { print $c }'
}
rtfwd() {
	x m "$BIN/xdp-vi" router status xva xvb --json |
		python3 -c 'import json,sys; print(sum(i["rt_forwarded"] for i in json.load(sys.stdin)))'
}

PORT=11130
run_one() {	# VARIANT: one measured run, one line "variant rate cpu xdp kernel"
	local v=$1 b0 b1 k0 k1 r0 r1 got
	if [ "$v" = xdp ]; then
		x m "$BIN/xdp-vi" router enable xva xvb >/dev/null || die "router enable"
	else
		x m "$BIN/xdp-vi" router disable xva xvb >/dev/null || die "router disable"
	fi
	PORT=$((PORT + 1))
	rm -f "$TMP/srv.pid"
	x b sh -c 'echo $$ >"$0"; exec "$@"' "$TMP/srv.pid" taskset -c 1 "$BIN/xvi-perf" sr \
		--kernel -i 198.18.2.2 -p $PORT --json >"$TMP/srv.json" 2>"$TMP/srv.err" &
	local w=$!
	for _ in $(seq 50); do
		[ -n "$(x b ss -H -uln "sport = :$PORT" 2>/dev/null)" ] && break
		sleep 0.1
	done
	k0=$(kfwd) r0=$(rtfwd) b0=$(busy)
	x a taskset -c 0 "$BIN/xvi-perf" tp --kernel -i 198.18.2.2 -p $PORT -m "$MSG" -t "$SEC" \
		--json >"$TMP/cli.json" 2>"$TMP/cli.err"
	b1=$(busy) k1=$(kfwd) r1=$(rtfwd)
	kill -TERM "$(cat "$TMP/srv.pid")" 2>/dev/null
	wait "$w"
	got=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["received"])' \
		"$TMP/srv.json" 2>/dev/null) || got=$(grep -o '"received":[0-9]*' "$TMP/srv.json" |
		head -1 | cut -d: -f2)
	awk -v v="$v" -v g="${got:-0}" -v s="$SEC" -v b="$(echo "$b1 - $b0" | bc)" \
		-v xf=$((r1 - r0)) -v kf=$((k1 - k0)) \
		'BEGIN { printf "%s %.0f %.2f %d %d\n", v, g / s, b / s, xf, kf }'
}

for r in $(seq "$ROUNDS"); do
	for v in xdp kernel; do
		run_one "$v" | tee -a "$TMP/rows" >&2
	done
done
x m "$BIN/xdp-vi" router disable xva xvb >/dev/null

python3 - "$TMP/rows" "$MSG" "$SEC" "$ROUNDS" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
def col(v, i):
    return [float(r[i]) for r in rows if r[0] == v]
def fmt(xs, f):
    return "%s (%s-%s)" % (f % statistics.median(xs), f % min(xs), f % max(xs)) if xs else "-"
print("Router a -> m -> b, %s-byte UDP datagrams (xvi-perf --kernel), %s s a run, %s rounds"
      % (sys.argv[2], sys.argv[3], sys.argv[4]))
print("| m forwards with | datagrams/s at b | machine busy CPUs | frames by XDP | by m's kernel |")
print("|---|---|---|---|---|")
for v, name in (("xdp", "xdp-vi router (XDP)"), ("kernel", "kernel forwarding")):
    print("| %s | %s | %s | %s | %s |" % (name, fmt(col(v, 1), "%.0f"), fmt(col(v, 2), "%.2f"),
          fmt(col(v, 3), "%.0f"), fmt(col(v, 4), "%.0f")))
x, k = col("xdp", 1), col("kernel", 1)
if x and k and statistics.median(k) > 0:
    print("\nxdp / kernel rate, medians: %.2fx" % (statistics.median(x) / statistics.median(k)))
PY
