#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# tests/bench/lossy.sh: loss recovery at the speed of the path.  A file
# copied with xvi-cat over an xvi stream and with xvi-cat --kernel over
# kernel TCP, through node m of a routed three-node lab
# (tests/bench/routed_lab.sh) whose kernel forwards and drops PCT % of
# the forwarded packets at random (nftables, numgen random).
# A benchmark, not a test: it prints a table and never fails on numbers.
#
# The variants alternate (xvi, tcp, xvi, ...) for ROUNDS rounds.  Each run
# is timed end to end, from starting the sender until both ends exited
# (the listener already up), and checked byte-exact.  m's nftables
# counters say how many packets each run had forwarded and dropped: on a
# veth, kernel TCP sends 64 KB GSO super-packets that m forwards whole, so
# the same byte loss costs it far fewer packets than a per-frame transport.
#
# usage: B=build tests/bench/lossy.sh [-s MIB] [-l PCT] [-r ROUNDS]

set -u -o pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${B:-build}
case $B in /*) BIN=$B/bin ;; *) BIN=$ROOT/$B/bin ;; esac
MIB=32 PCT=3 ROUNDS=3
while [ $# -ge 2 ]; do
	case $1 in -s) MIB=$2 ;; -l) PCT=$2 ;; -r) ROUNDS=$2 ;; *) break ;; esac
	shift 2
done
[ $# -eq 0 ] || { grep '^# usage:' "$0" | cut -c3- >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "lossy.sh: needs root (lab)" >&2; exit 1; }
for b in "$BIN/xdp-vi" "$BIN/xvi-cat" "$BIN/xvi-relay"; do
	[ -x "$b" ] || { echo "lossy.sh: $b missing: make B=$B" >&2; exit 1; }
done
command -v nft >/dev/null || { echo "lossy.sh: nft missing: install nftables (make deps)" >&2
	exit 1; }
. "$ROOT/netns-lab/lib.sh"
export XVI_RELAY=$BIN/xvi-relay
TMP=$(mktemp -d /tmp/xvi-bench-lossy.XXXXXX)
lab_at_exit "rm -rf '$TMP'"
L=xbl$$
. "$ROOT/tests/bench/routed_lab.sh"
routed_lab_up "$L" || exit 1
x() { local n=$1; shift; lab_exec --name "$L" -T 120 "$n" -- "$@"; }
die() { echo "lossy.sh: $*" >&2; exit 1; }

for n in a b; do x "$n" "$BIN/xdp-vi" attach xv0 >/dev/null || die "attach on $n"; done
x a ping -c 1 -W 2 198.18.2.2 >/dev/null || die "no way from a to b"
x m nft -f - <<NFT || die "nftables rules on m"
table inet lossy {
	chain forward {
		type filter hook forward priority 0; policy accept;
		numgen random mod 100 < $PCT counter name dropped drop
		counter name passed
	}
	counter dropped { }
	counter passed { }
}
NFT
counters() {	# "passed dropped" packets so far
	x m nft -j list counters table inet lossy | python3 -c '
import json, sys
c = {o["counter"]["name"]: o["counter"]["packets"]
     for o in json.load(sys.stdin)["nftables"] if "counter" in o}
print(c.get("passed", 0), c.get("dropped", 0))'
}
head -c $((MIB << 20)) /dev/urandom >"$TMP/in"

PORT=11190
run_one() {	# VARIANT: one run, one line "variant ms forwarded dropped retrans error"
	local v=$1 opts lp t0 t1 rs rl c0 c1 err= re
	PORT=$((PORT + 1))
	opts=(--iface xv0)
	[ "$v" = tcp ] && opts=(--kernel)
	rm -f "$TMP/out"
	x b "$BIN/xvi-cat" "${opts[@]}" -w 60 -l "$PORT" >"$TMP/out" 2>"$TMP/l.err" &
	lp=$!
	for _ in $(seq 50); do
		if [ "$v" = tcp ]; then
			x b ss -Hltn "sport = :$PORT" | grep -q . && break
		else
			x b "$BIN/xdp-vi" status --json 2>/dev/null | grep -q ":$PORT\"" && break
		fi
		sleep 0.1
	done
	c0=$(counters)
	t0=$(date +%s%N)
	x a "$BIN/xvi-cat" -v "${opts[@]}" -w 60 198.18.2.2 "$PORT" <"$TMP/in" \
		2>"$TMP/s.err" && rs=0 || rs=$?
	wait "$lp" && rl=0 || rl=$?
	t1=$(date +%s%N)
	c1=$(counters)
	[ "$rs" = 0 ] && [ "$rl" = 0 ] || err="sender-exit-$rs-listener-exit-$rl"
	cmp -s "$TMP/in" "$TMP/out" || err=${err:-copy-differs}
	re=$(grep -o '[0-9]* retrans' "$TMP/s.err" | head -1 | cut -d' ' -f1)
	set -- $c0 $c1
	echo "$v $(((t1 - t0) / 1000000)) $(($3 - $1 + $4 - $2)) $(($4 - $2)) ${re:--}" \
		"${err:--}"
}

for r in $(seq "$ROUNDS"); do
	for v in xvi tcp; do
		run_one "$v" | tee -a "$TMP/rows" >&2
	done
done

python3 - "$TMP/rows" "$MIB" "$PCT" "$ROUNDS" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
def col(v, i):
    return [float(r[i]) for r in rows if r[0] == v and r[5] == "-" and r[i] != "-"]
def fmt(xs, f):
    return "%s (%s-%s)" % (f % statistics.median(xs), f % min(xs), f % max(xs)) if xs else "-"
print("Copying %s MiB a -> m -> b, m's kernel dropping %s %% of forwarded packets "
      "(nftables), %s rounds, alternated" % (sys.argv[2], sys.argv[3], sys.argv[4]))
print("| transport | ms end to end | packets m forwarded | packets m dropped "
      "| segments retransmitted (xvi) |")
print("|---|---|---|---|---|")
for v, name in (("xvi", "xvi stream (xvi-cat)"), ("tcp", "kernel TCP (xvi-cat --kernel)")):
    print("| %s | %s | %s | %s | %s |" % (name, fmt(col(v, 1), "%.0f"), fmt(col(v, 2), "%.0f"),
          fmt(col(v, 3), "%.0f"), fmt(col(v, 4), "%.0f") if v == "xvi" else "-"))
bad = [r for r in rows if r[5] != "-"]
for r in bad:
    print("\nfailed run: %s: %s" % (r[0], r[5]))
x, k = col("xvi", 1), col("tcp", 1)
if x and k and statistics.median(k) > 0:
    print("\nxvi / TCP time, medians: %.2fx" % (statistics.median(x) / statistics.median(k)))
PY
