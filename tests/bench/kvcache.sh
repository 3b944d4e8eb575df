#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# tests/bench/kvcache.sh: memcached GETs answered by the key-value cache
# extension (xvi-kvcache), its hits in XDP (--xdp, the datapath's port hook)
# and in tc, against memcached alone, same client, same run, on a two-node
# lab; then hits in XDP and memcached alone over IPv6.  A benchmark, not a test: it prints tables and never fails on
# numbers.
#
#   node a: kvget (tests/bench/kvget.c): one kernel UDP socket, WINDOW GETs
#           of one hot key in flight
#   node b: memcached -U PORT -p 0 -t 2, the datapath attached (with pins:
#           the port hook needs them), the cache attached with --xdp (hits
#           in XDP), without (hits in tc) or not at all (memcached alone)
#   node a runs the datapath too, for every variant: an XDP_TX reply
#           reaches a veth's peer only while the peer runs XDP
#           (docs/KERNEL.md, fact 28); it passes the replies to a's kernel
#
# The variants alternate (xdp, tc, memcached, xdp6, memcached6, xdp, ...)
# for ROUNDS rounds; the table shows median (min-max) of GET rate, p50 and
# p99 latency.  The tc path answers no IPv6 GET: no tc row over IPv6.
#
# Then the datapath's own cost per frame by BPF_PROG_RUN, alternated for
# ROUNDS rounds: a datagram to a port nobody holds (passed) with no hook
# installed and with the cache's hook on another port (the one lookup a
# hook costs other frames).  Then the cache's own frames, hook on, a GET
# of the cached key (a hit, the reply made in place) and of a key never
# set (a miss, passed), over IPv4 and IPv6: one repetition per BPF_PROG_RUN
# (tests/bench/prog_run_each.py), since kv_xdp rewrites the frame into a
# reply and repeated runs (live frames too, whose recycled pages keep the
# bytes) would time the reply's way, not the request's.  With
# B_BASE=DIR, the build directory of another tree (its bin/xdp-vi and
# bin/xvi-kvcache: datapath and cache), every one of these rows is timed
# for that build too, node b's datapath attached by each build in turn,
# alternated: a before/after comparison in one run.
#
# The last column is the cache's own count of the GETs it answered
# (xvi-kvcache stats), so that each row says who answered.
#
# usage: B=build [B_BASE=DIR] tests/bench/kvcache.sh [-t SEC] [-w WINDOW] [-r ROUNDS]

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
# The port hook's table must be pinned (a bpffs in the lab's state
# directory, which lab down unmounts).
FS=$LAB_STATE/$L/kv-bpffs
mkdir -p "$FS" && mount -t bpf bpf "$FS" || die "cannot mount a bpffs on $FS"
x b "$BB/bin/xdp-vi" --bpffs "$FS" attach xv0 >/dev/null || die "attach on b"
x a "$BB/bin/xdp-vi" attach xv0 >/dev/null || die "attach on a"
# shellcheck disable=SC2016 # expanded by the inner shell
x b sh -c 'echo $$ >"$0"; exec memcached -u nobody -U "$1" -p 0 -l 198.18.0.2,[2001:2::2] -t 2 -m 64' \
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

run_one() {	# VARIANT: one measured run, one line "variant gets p50 p99 replies hits"
	local v=$1 mc=198.18.0.2
	case $v in *6) mc=2001:2::2 ;; esac
	if [ "${v%6}" != memcached ]; then
		# shellcheck disable=SC2046 # no word or one
		x b "$BB/bin/xvi-kvcache" attach xv0 --port "$PORT" \
			$([ "${v%6}" = xdp ] && echo "--xdp --bpffs $FS") >/dev/null || die "attach $v"
		# One GET fills the cache before the measured ones.
		x a python3 "$ROOT/tests/lab/helpers/memcache_udp.py" "$mc" "$PORT" get hot \
			>/dev/null || die "warm-up GET"
	fi
	x a "$BB/tests/kvget" "$mc" "$PORT" hot "$SEC" "$WIN" >"$TMP/cli.json" ||
		die "kvget failed"
	echo '{"hits":0,"xdp_hits":0}' >"$TMP/kv.json"
	if [ "${v%6}" != memcached ]; then
		x b "$BB/bin/xvi-kvcache" stats xv0 --json >"$TMP/kv.json" || die "stats"
		x b "$BB/bin/xvi-kvcache" detach xv0 >/dev/null || die "detach"
	fi
	python3 -c 'import json,sys
j = json.load(open(sys.argv[1]))
k = json.load(open(sys.argv[3]))
print(sys.argv[2], j["gets_per_s"], j["p50_us"], j["p99_us"], j["hits"] + j["misses"],
      k["hits"] + k["xdp_hits"])' "$TMP/cli.json" "$v" "$TMP/kv.json"
}

for _ in $(seq "$ROUNDS"); do
	for v in xdp tc memcached xdp6 memcached6; do
		run_one "$v" | tee -a "$TMP/rows" >&2
	done
done

# ---- the datapath's cost per frame (BPF_PROG_RUN) ----
prog=$(x b ip -d link show dev xv0 | grep -oE 'prog/xdp id [0-9]+' | awk '{ print $3 }')
mac_b=$(x b cat /sys/class/net/xv0/address)
frame() {	# DPORT FILE PAYLOAD-PYTHON-EXPR: Ethernet/IPv4/UDP a -> b, valid sums
	python3 - "$ROOT/tests/lab/helpers" "$mac_b" "$1" "$2" "$3" <<'PY'
import socket, sys
sys.path.insert(0, sys.argv[1])
from udp4_frame import udp4_frame, mac
f = udp4_frame(mac(sys.argv[2]), mac("02:00:00:00:00:01"), socket.inet_aton("198.18.0.1"),
               socket.inet_aton("198.18.0.2"), 40000, int(sys.argv[3]), eval(sys.argv[5]))
open(sys.argv[4], "wb").write(f)
PY
}
frame 9 "$TMP/pass.bin" 'bytes(64)'
prog_run() {	# VARIANT FILE: one line "variant ns_per_frame"
	local out ns
	out=$(bpftool prog run id "$prog" data_in "$2" repeat 2000000 2>&1)
	ns=$(sed -n 's/.*duration (average): \([0-9]*\)ns.*/\1/p' <<<"$out")
	[ -n "$ns" ] || die "BPF_PROG_RUN ($1): $(tr '\n' ' ' <<<"$out")"
	echo "$1 $ns"
}
# The cache's own frames, a -> b: "get hot" (cached: a hit) and "get cold"
# (never set: a miss), over IPv4 and IPv6, memcached's frame header in front.
python3 - "$ROOT/tests/lab/helpers" "$mac_b" "$PORT" "$TMP" <<'PY'
import socket, struct, sys
sys.path.insert(0, sys.argv[1])
from inet_csum import pseudo_header6, udp_checksum
from udp4_frame import udp4_frame, mac
dmac, smac, port = mac(sys.argv[2]), mac("02:00:00:00:00:01"), int(sys.argv[3])
for key in ("hot", "cold"):
    p = struct.pack("!HHHH", 1, 0, 1, 0) + b"get %s\r\n" % key.encode()
    f = udp4_frame(dmac, smac, socket.inet_aton("198.18.0.1"), socket.inet_aton("198.18.0.2"),
                   40000, port, p)
    open("%s/%s4.bin" % (sys.argv[4], key), "wb").write(f)
    src, dst = (socket.inet_pton(socket.AF_INET6, a) for a in ("2001:2::1", "2001:2::2"))
    udp = struct.pack("!HHHH", 40000, port, 8 + len(p), 0) + p
    c = udp_checksum(pseudo_header6(src, dst, 17, len(udp)) + udp)
    udp = udp[:6] + struct.pack("!H", c) + udp[8:]
    ip6 = struct.pack("!IHBB", 6 << 28, len(udp), 17, 64) + src + dst
    open("%s/%s6.bin" % (sys.argv[4], key), "wb").write(dmac + smac + b"\x86\xdd" + ip6 + udp)
PY
prog_each() {	# VARIANT FILE: one line "variant ns_median verdict"
	local out
	out=$(python3 "$ROOT/tests/bench/prog_run_each.py" "$prog" "$2" 2000 2>&1)
	[[ $out == ns_median* ]] || die "BPF_PROG_RUN ($1): $(tr '\n' ' ' <<<"$out")"
	echo "$1 $(cut -d' ' -f2,4 <<<"$out")"
}
builds=new cur=$BB/bin
if [ -n "${B_BASE:-}" ]; then
	builds="base new"
	case $B_BASE in /*) ;; *) B_BASE=$ROOT/$B_BASE ;; esac
	for b in "$B_BASE/bin/xdp-vi" "$B_BASE/bin/xvi-kvcache"; do
		[ -x "$b" ] || die "B_BASE: $b missing"
	done
fi
for _ in $(seq "$ROUNDS"); do
	for o in $builds; do
		bin=$BB/bin
		[ "$o" = new ] || bin=$B_BASE/bin
		if [ "$bin" != "$cur" ]; then	# node b's datapath from this build
			x b "$cur/xdp-vi" --bpffs "$FS" detach xv0 >/dev/null || die "detach on b"
			x b "$bin/xdp-vi" --bpffs "$FS" attach xv0 >/dev/null || die "attach $o on b"
			cur=$bin
			prog=$(x b ip -d link show dev xv0 | grep -oE 'prog/xdp id [0-9]+' |
				awk '{ print $3 }')
		fi
		prog_run "$o-pass-no-hook" "$TMP/pass.bin" | tee -a "$TMP/cost" >&2
		x b "$bin/xvi-kvcache" attach xv0 --port "$PORT" --xdp --bpffs "$FS" >/dev/null ||
			die "attach --xdp ($o)"
		prog_run "$o-pass-hook-on" "$TMP/pass.bin" | tee -a "$TMP/cost" >&2
		x a python3 "$ROOT/tests/lab/helpers/memcache_udp.py" 198.18.0.2 "$PORT" get hot \
			>/dev/null || die "warm-up GET"
		for k in hot4 hot6 cold4 cold6; do
			prog_each "$o-$k" "$TMP/$k.bin" | tee -a "$TMP/cost" >&2
		done
		x b "$bin/xvi-kvcache" detach xv0 >/dev/null || die "detach ($o)"
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
for v, name in (("xdp", "the cache, hits in XDP (kv_xdp, port hook)"),
                ("tc", "the cache, hits in tc (kv_ingress)"), ("memcached", "memcached alone"),
                ("xdp6", "IPv6: the cache, hits in XDP (kv_xdp, port hook)"),
                ("memcached6", "IPv6: memcached alone")):
    print("| %s | %s | %s | %s | %d | %d |" % (name, fmt(col(v, 1)), fmt(col(v, 2)),
          fmt(col(v, 3)), sum(col(v, 4)), sum(col(v, 5))))
m = col("memcached", 1)
for v, base in (("xdp", m), ("tc", m), ("xdp6", col("memcached6", 1))):
    c = col(v, 1)
    if c and base:
        print("\nGET rate with the cache, hits in %s: %.2fx memcached alone (medians)"
              % (v, statistics.median(c) / statistics.median(base)))
x, t = col("xdp", 1), col("tc", 1)
if x and t:
    print("\nhits in XDP: %.2fx hits in tc (medians)" % (statistics.median(x) / statistics.median(t)))
PY

python3 - "$TMP/cost" "$ROUNDS" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
def col(v):
    return [float(r[1]) for r in rows if r[0] == v]
builds = {"base": "B_BASE", "new": "this build"}
print("\nxvi_demux by BPF_PROG_RUN, ns per frame, median (min-max) of %s rounds" % sys.argv[2])
print("| frame | build | ns/frame |")
print("|---|---|---|")
for v, name in (("pass-no-hook", "UDP to a port nobody holds, no hook installed (passed)"),
                ("pass-hook-on", "the same, the cache's hook on another port (passed)")):
    for o in ("base", "new"):
        xs = col("%s-%s" % (o, v))
        if xs:
            print("| %s | %s | %.0f (%.0f-%.0f) |" % (name, builds[o], statistics.median(xs),
                                                   min(xs), max(xs)))
acts = {"1": "drop", "2": "pass", "3": "tx"}
print("\nThe cache's GETs through xvi_demux and kv_xdp, one repetition per BPF_PROG_RUN,"
      "\nns per frame: median over %s rounds of each round's median of 2,000 runs (min-max)"
      % sys.argv[2])
print("| GET | build | ns/frame | verdict |")
print("|---|---|---|---|")
for k, name in (("hot4", "cached key, IPv4"), ("hot6", "cached key, IPv6"),
                ("cold4", "key never set, IPv4"), ("cold6", "key never set, IPv6")):
    for o in ("base", "new"):
        xs = col("%s-%s" % (o, k))
        if xs:
            vs = sorted({acts.get(r[2], r[2]) for r in rows if r[0] == "%s-%s" % (o, k)})
            print("| %s | %s | %.0f (%.0f-%.0f) | %s |" % (
                name, builds[o], statistics.median(xs),
                min(xs), max(xs), ",".join(vs)))
PY
