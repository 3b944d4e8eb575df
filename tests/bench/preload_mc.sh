#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# tests/bench/preload_mc.sh: unmodified memcached -U under xvi-run against
# the same memcached on kernel sockets, on one two-node lab (datapath
# attached on both nodes throughout, so kernel sockets pay for the XDP
# program too).  A benchmark, not a test: it prints a table and never fails
# on numbers.
#
#   node b: memcached -U PORT -p 0 -t 1 (port per run), one 100-byte value
#   node a: kvget (tests/bench/kvget.c): one UDP socket, WINDOW GETs of
#           that key in flight, SEC seconds
#   variants: kernel (both plain), xvi (memcached under xvi-run, kvget on
#   kernel sockets) and xvi2 (xvi-run on both ends)
#
# The variants alternate (kernel, xvi, xvi2, kernel, ...) for ROUNDS
# rounds; the table shows median (min-max) of the GET rate kvget saw and
# its p50 and p99 latency, and the datagrams b's server took in: kernel
# Udp InDatagrams of b's namespace (kernel) or the endpoint's rx_frames
# (xvi variants).  An xvi run whose memcached did not come up on an
# endpoint, or whose kernel UDP counter moved by more than the set's one
# datagram, is left out ("-") and counted as a fallback, never measured
# as if it were accelerated.
#
# usage: B=build tests/bench/preload_mc.sh [-t SEC] [-r ROUNDS] [-w WINDOW]

set -u -o pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${B:-build}
case $B in /*) BB=$B ;; *) BB=$ROOT/$B ;; esac
SEC=2 ROUNDS=3 WIN=16
while [ $# -ge 2 ]; do
	case $1 in -t) SEC=$2 ;; -r) ROUNDS=$2 ;; -w) WIN=$2 ;; *) break ;; esac
	shift 2
done
[ $# -eq 0 ] || { grep '^# usage:' "$0" | cut -c3- >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "preload_mc.sh: needs root (lab)" >&2; exit 1; }
XVIRUN=$BB/bin/xvi-run
for b in "$BB/bin/xdp-vi" "$XVIRUN" "$BB/lib/libxvi-preload.so" "$BB/tests/kvget"; do
	[ -e "$b" ] || { echo "preload_mc.sh: $b missing: make B=$B" >&2; exit 1; }
done
command -v memcached >/dev/null ||
	{ echo "preload_mc.sh: memcached missing: bash scripts/install-deps.sh" >&2; exit 1; }
. "$ROOT/netns-lab/lib.sh"
TMP=$(mktemp -d /tmp/xvi-bench-plmc.XXXXXX)
lab_at_exit "rm -rf '$TMP'"
L=xbm$$
lab_up --name "$L" >&2 || { echo "preload_mc.sh: lab_up failed" >&2; exit 1; }
x() { local n=$1; shift; lab_exec --name "$L" -T 60 "$n" -- "$@"; }
die() { echo "preload_mc.sh: $*" >&2; exit 1; }
for n in a b; do x "$n" "$BB/bin/xdp-vi" attach xv0 >/dev/null || die "attach on $n"; done
x a ping -c 1 -W 2 198.18.0.2 >/dev/null || die "no way from a to b"

udp_in() { x b cat /proc/net/snmp | awk '$1 == "Udp:" && $2 ~ /^[0-9]+$/ { print $2 }'; }
status_b() { x b "$BB/bin/xdp-vi" status --json >"$TMP/st.json" 2>/dev/null; }
# live PORT: an endpoint on b's PORT is published
live() { status_b && python3 "$ROOT/tests/lab/helpers/xvi_status.py" "$TMP/st.json" live "$1"; }
VALUE=$(head -c 100 /dev/zero | tr '\0' v)
PORT=12400

# mcrun VARIANT PORT: one measured run; prints one line "variant gets p50 p99
# server_rx" or "variant - - - -" when it could not be measured (reason on
# stderr).
mcrun() {
	local v=$1 port=$2 spre=() cpre=() in0 in1 rx='' ok=1
	[ "$v" != kernel ] && spre=("$XVIRUN")
	[ "$v" = xvi2 ] && cpre=("$XVIRUN")
	# The server's pid from inside the namespace, so that the stop below
	# reaches memcached itself and not only the lab_exec wrapper.
	# shellcheck disable=SC2016 # expanded by the inner shell
	x b sh -c 'echo $$ >"$0"; exec "$@"' "$TMP/mc.pid" "${spre[@]}" \
		memcached -u root -U "$port" -p 0 -l 198.18.0.2 -t 1 -m 64 \
		</dev/null >"$TMP/mc-$port.err" 2>&1 &
	local w=$!
	# Ready: the endpoint is published (xvi) or the kernel socket bound.
	for _ in $(seq 100); do
		if [ "$v" != kernel ]; then
			live "$port" && break
		else
			x b ss -H -uln "sport = :$port" | grep -q . && break
		fi
		sleep 0.1
	done
	if [ "$v" != kernel ] && ! live "$port"; then
		echo "preload_mc.sh: $v: memcached not on an endpoint: $(tail -c 200 "$TMP/mc-$port.err")" >&2
		ok=0
	fi
	in0=$(udp_in)
	if [ "$ok" = 1 ] && ! x a python3 "$ROOT/tests/lab/helpers/memcache_udp.py" \
		198.18.0.2 "$port" set hot "$VALUE" >/dev/null 2>"$TMP/set.err"; then
		echo "preload_mc.sh: $v: set failed: $(tail -c 200 "$TMP/set.err")" >&2
		ok=0
	fi
	if [ "$ok" = 1 ] && ! x a "${cpre[@]}" "$BB/tests/kvget" 198.18.0.2 "$port" hot "$SEC" "$WIN" \
		</dev/null >"$TMP/kv.json" 2>"$TMP/kv.err"; then
		echo "preload_mc.sh: $v: kvget failed: $(tail -c 200 "$TMP/kv.err")" >&2
		ok=0
	fi
	in1=$(udp_in)
	if [ "$v" != kernel ]; then
		status_b && rx=$(python3 "$ROOT/tests/lab/helpers/xvi_status.py" "$TMP/st.json" \
			counters "$port" rx_frames)
		# The kernel saw this run's GETs: memcached fell back silently.
		if [ "$ok" = 1 ] && [ $((in1 - in0)) -gt 1 ]; then
			echo "preload_mc.sh: $v: b's kernel UDP took $((in1 - in0)) datagrams" >&2
			ok=0
		fi
	else
		rx=$((in1 - in0))
	fi
	kill -TERM "$(cat "$TMP/mc.pid" 2>/dev/null)" 2>/dev/null
	wait "$w" 2>/dev/null
	# The next memcached under xvi-run takes the queue directly only once
	# this one's endpoint is gone.
	for _ in $(seq 100); do
		live "$port" || break
		sleep 0.1
	done
	if [ "$ok" = 1 ]; then
		python3 -c 'import json, sys
j = json.load(open(sys.argv[1]))
if j["hits"]:
    print(sys.argv[2], j["gets_per_s"], j["p50_us"], j["p99_us"], sys.argv[3] or "-")
else:
    print(sys.argv[2], "- - - -")
    print("preload_mc.sh: %s: no hits: %s" % (sys.argv[2], json.dumps(j)), file=sys.stderr)' \
			"$TMP/kv.json" "$v" "$rx"
	else
		echo "$v - - - -"
	fi
}

ts_rows() { tee -a "$TMP/rows" | sed "s/^/[$(date -u +%T)] /" >&2; }
for ((i = 0; i < ROUNDS; i++)); do
	for v in kernel xvi xvi2; do
		# A port per run, counted here: a pipeline's commands run in subshells.
		port=$((PORT++))
		mcrun "$v" "$port" | ts_rows
	done
done

python3 - "$TMP/rows" "$SEC" "$ROUNDS" "$WIN" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
def col(v, i):
    return [float(r[i]) for r in rows if r[0] == v and r[i] != "-"]
def fmt(xs):
    return "%.0f (%.0f-%.0f)" % (statistics.median(xs), min(xs), max(xs)) if xs else "-"
def ratio(v, i):
    a, k = col(v, i), col("kernel", i)
    return "%.2f" % (statistics.median(a) / statistics.median(k)) if a and k and \
        statistics.median(k) else "-"
print("memcached -U -t 1 on b under xvi-run vs kernel sockets; kvget on a, %s GETs of one "
      "100-byte value in flight (%s rounds x %s s, median (min-max))"
      % (sys.argv[4], sys.argv[3], sys.argv[2]))
print("server rx: b's kernel Udp InDatagrams (kernel) or the endpoint's rx_frames (xvi-run)")
names = (("kernel", "kernel"), ("xvi", "xvi-run server"), ("xvi2", "xvi-run both"))
print("%-22s %-24s %-24s %-24s %-10s %s" % ("test", *(n for _, n in names), "srv/k", "both/k"))
for i, t in ((1, "GET rate /s"), (2, "GET p50 usec"), (3, "GET p99 usec"), (4, "server rx datagrams")):
    print("%-22s %-24s %-24s %-24s %-10s %s" % (t, *(fmt(col(v, i)) for v, _ in names),
                                               ratio("xvi", i), ratio("xvi2", i)))
miss = {v: sum(1 for r in rows if r[0] == v and r[1] == "-") for v, _ in names}
if any(miss.values()):
    print("not measured (fallback or failure, see stderr): " +
          ", ".join("%s %d" % (v, n) for v, n in miss.items() if n))
PY
