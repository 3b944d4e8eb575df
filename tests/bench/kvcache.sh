#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# tests/bench/kvcache.sh: memcached GETs answered by the key-value cache
# extension (xvi-kvcache) against memcached alone, same client, same run,
# on a two-node lab.  A benchmark, not a test: it prints a table and never
# fails on numbers.
#
#   node a: kvget (tests/bench/kvget.c): one kernel UDP socket, WINDOW GETs
#           of one hot key in flight
#   node b: memcached -U PORT -p 0 -t 2, the datapath attached, the cache
#           attached (hits) or detached (memcached alone)
#
# The variants alternate (cache, memcached, cache, ...) for ROUNDS rounds;
# the table shows median (min-max) of GET rate, p50 and p99 latency.
#
# The last column is the cache's own count of the GETs it answered
# (xvi-kvcache stats), so that each row says who answered.
#
# usage: B=build tests/bench/kvcache.sh [-t SEC] [-w WINDOW] [-r ROUNDS]

set -u -o pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${B:-build}
case $B in /*) BB=$B ;; *) BB=$ROOT/$B ;; esac
SEC=3 WIN=8 ROUNDS=3
while [ $# -ge 2 ]; do
	case $1 in -t) SEC=$2 ;; -w) WIN=$2 ;; -r) ROUNDS=$2 ;; *) break ;; esac
	shift 2
done
[ $# -eq 0 ] || { grep '^# usage:' "$0" | cut -c3- >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "kvcache.sh: needs root (lab)" >&2; exit 1; }
for b in "$BB/bin/xdp-vi" "$BB/bin/xvi-kvcache" "$BB/tests/kvget" "$BB/ext/kvcache.bpf.o"; do
	[ -e "$b" ] || { echo "kvcache.sh: $b missing: make B=$B" >&2; exit 1; }
done
command -v memcached >/dev/null ||
	{ echo "kvcache.sh: memcached missing: bash scripts/install-deps.sh" >&2; exit 1; }
. "$ROOT/netns-lab/lib.sh"
TMP=$(mktemp -d /tmp/xvi-bench-kv.XXXXXX)
lab_at_exit "rm -rf '$TMP'"
L=xbk$$
lab_up --name "$L" >&2 || { echo "kvcache.sh: lab_up failed" >&2; exit 1; }
x() { local n=$1; shift; lab_exec --name "$L" -T 60 "$n" -- "$@"; }
die() { echo "kvcache.sh: $*" >&2; exit 1; }
PORT=11411
x b "$BB/bin/xdp-vi" attach xv0 >/dev/null || die "attach on b"
# shellcheck disable=SC2016 # expanded by the inner shell
x b sh -c 'echo $$ >"$0"; exec memcached -u nobody -U "$1" -p 0 -l 198.18.0.2 -t 2 -m 64' \
	"$TMP/mc.pid" "$PORT" >"$TMP/mc.err" 2>&1 &
MCW=$!
lab_at_exit "kill \$(cat '$TMP/mc.pid' 2>/dev/null) 2>/dev/null; wait $MCW 2>/dev/null"
for _ in $(seq 50); do
	[ -n "$(x b ss -H -uln "sport = :$PORT" 2>/dev/null)" ] && break
	sleep 0.1
done
# A 100-byte value, as small objects are what such caches serve.
x a python3 "$ROOT/tests/lab/helpers/memcache_udp.py" 198.18.0.2 "$PORT" set hot \
	"$(head -c 100 /dev/zero | tr '\0' v)" || die "set failed: $(cat "$TMP/mc.err")"

run_one() {	# VARIANT: one measured run, one line "variant gets p50 p99 hits misses"
	local v=$1
	if [ "$v" = cache ]; then
		x b "$BB/bin/xvi-kvcache" attach xv0 --port "$PORT" >/dev/null || die "attach"
		# One GET fills the cache before the measured ones.
		x a python3 "$ROOT/tests/lab/helpers/memcache_udp.py" 198.18.0.2 "$PORT" get hot \
			>/dev/null || die "warm-up GET"
	fi
	x a "$BB/tests/kvget" 198.18.0.2 "$PORT" hot "$SEC" "$WIN" >"$TMP/cli.json" ||
		die "kvget failed"
	echo '{"hits":0}' >"$TMP/kv.json"
	if [ "$v" = cache ]; then
		x b "$BB/bin/xvi-kvcache" stats xv0 --json >"$TMP/kv.json" || die "stats"
		x b "$BB/bin/xvi-kvcache" detach xv0 >/dev/null || die "detach"
	fi
	python3 -c 'import json,sys
j = json.load(open(sys.argv[1]))
k = json.load(open(sys.argv[3]))
print(sys.argv[2], j["gets_per_s"], j["p50_us"], j["p99_us"], j["hits"] + j["misses"],
      k["hits"])' "$TMP/cli.json" "$v" "$TMP/kv.json"
}

for _ in $(seq "$ROUNDS"); do
	for v in cache memcached; do
		run_one "$v" | tee -a "$TMP/rows" >&2
	done
done

python3 - "$TMP/rows" "$SEC" "$ROUNDS" "$WIN" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
def col(v, i):
    return [float(r[i]) for r in rows if r[0] == v]
def fmt(xs, f="%.0f"):
    return "%s (%s-%s)" % (f % statistics.median(xs), f % min(xs), f % max(xs)) if xs else "-"
print("memcached GETs of one 100-byte value from a (kvget, %s in flight), %s s a run, %s rounds"
      % (sys.argv[4], sys.argv[2], sys.argv[3]))
print("| answered by | GETs/s | p50 us | p99 us | replies (all runs) | answered by the cache |")
print("|---|---|---|---|---|---|")
for v, name in (("cache", "the cache extension (tc, b)"), ("memcached", "memcached alone")):
    print("| %s | %s | %s | %s | %d | %d |" % (name, fmt(col(v, 1)), fmt(col(v, 2)),
          fmt(col(v, 3)), sum(col(v, 4)), sum(col(v, 5))))
c, m = col("cache", 1), col("memcached", 1)
if c and m:
    print("\nGET rate with the cache: %.2fx memcached alone (medians)"
          % (statistics.median(c) / statistics.median(m)))
PY
