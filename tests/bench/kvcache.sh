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
#           of one hot key in flight; and, in rows of their own (xviN), N
#           threads (several: each pinned to a CPU of its own), each with a
#           libxvi endpoint on xv0 (kvget --xvi --threads N), XVI_WINDOW GETs
#           in flight each, sent and received in batches: a client that costs
#           less per GET, so that the servers, not one kernel socket, are measured
#   node b: memcached -U PORT -p 0 -t 2, the datapath attached (with pins:
#           the port hook needs them), the cache attached with --xdp (hits
#           in XDP), without (hits in tc) or not at all (memcached alone)
#   node a runs the datapath too, for every variant: an XDP_TX reply
#           reaches a veth's peer only while the peer runs XDP
#           (docs/KERNEL.md, fact 28); it passes the replies to a's kernel,
#           or delivers them to the xvi client's endpoints
#
# The variants alternate (xdp, tc, memcached, xdp6, memcached6, then the
# same three IPv4 servers with each xvi client, xdp, ...) for ROUNDS rounds;
# the table shows median (min-max) of GET rate, p50 and p99 latency.  The
# tc path answers no IPv6 GET: no tc row over IPv6.  Every reply's value is
# checked by kvget; replies that fail count as bad, requests without a reply
# as lost (both shown).  Around each run the script reads the CPU time of
# the whole machine (/proc/stat: busy and softirq), of memcached
# (/proc/PID/stat) and of the client (its getrusage): a second table, CPUs
# used per second of run and machine CPU time per GET, says which side is
# the bound.  The machine is the lab's both nodes and anything else running.
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
# usage: B=build [B_BASE=DIR] tests/bench/kvcache.sh [-t SEC] [-w WINDOW] [-W XVI_WINDOW] [-r ROUNDS] [-c CLIENTS]
#   CLIENTS: whose rows run, of "kernel" and "xviN" (N threads); default "kernel xvi1 xvi2"

set -u -o pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${B:-build}
case $B in /*) BB=$B ;; *) BB=$ROOT/$B ;; esac
# The xvi client saturates the servers here with 16 GETs in flight; 32
# keeps it saturated without filling memcached's socket buffer (256 did:
# memcached dropped requests).
SEC=3 WIN=8 XWIN=32 ROUNDS=3 CLIENTS="kernel xvi1 xvi2"
while [ $# -ge 2 ]; do
	case $1 in
	-t) SEC=$2 ;; -w) WIN=$2 ;; -W) XWIN=$2 ;; -r) ROUNDS=$2 ;; -c) CLIENTS=$2 ;;
	*) break ;;
	esac
	shift 2
done
[ $# -eq 0 ] || { grep -A1 '^# usage:' "$0" | cut -c3- >&2; exit 2; }
VARIANTS=
for c in $CLIENTS; do
	case $c in
	kernel) VARIANTS="$VARIANTS xdp tc memcached xdp6 memcached6" ;;
	xvi[1-9]|xvi1[0-6]) VARIANTS="$VARIANTS $c-xdp $c-tc $c-memcached" ;;
	*) echo "kvcache.sh: -c $c: the clients are kernel and xviN (N threads, 1 to 16)" >&2
	   exit 2 ;;
	esac
done
[ -n "$VARIANTS" ] || { echo "kvcache.sh: -c names no client (kernel, xviN)" >&2; exit 2; }
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
# memcached lives for the whole run: its bound is the measured runs' (each
# SEC and some 10 s of attaching, warming and detaching), plus the rest.
MC_TMO=$(awk -v n="$(wc -w <<<"$VARIANTS")" -v r="$ROUNDS" -v t="$SEC" \
	'BEGIN { printf "%d", 300 + n * r * (t + 20) }')
# shellcheck disable=SC2016 # expanded by the inner shell
lab_exec --name "$L" -T "$MC_TMO" b -- sh -c 'echo $$ >"$0"; exec memcached -u nobody -U "$1" -p 0 -l 198.18.0.2,[2001:2::2] -t 2 -m 64' \
	"$TMP/mc.pid" "$PORT" >"$TMP/mc.err" 2>&1 &
MCW=$!
lab_at_exit "kill \$(cat '$TMP/mc.pid' 2>/dev/null) 2>/dev/null; wait $MCW 2>/dev/null"
for _ in $(seq 50); do
	[ -n "$(x b ss -H -uln "sport = :$PORT" 2>/dev/null)" ] && break
	sleep 0.1
done
# A 100-byte value, as small objects are what such caches serve; kvget
# checks every hit's bytes against it.
VALUE=$(head -c 100 /dev/zero | tr '\0' v)
x a python3 "$ROOT/tests/lab/helpers/memcache_udp.py" 198.18.0.2 "$PORT" set hot "$VALUE" ||
	die "set failed: $(cat "$TMP/mc.err")"

cpu_now() {	# "busy softirq memcached" CPU time so far, in clock ticks
	local mc
	mc=$(cat "$TMP/mc.pid")
	awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9, $8 }' /proc/stat | tr '\n' ' '
	awk '{ print $14 + $15 }' "/proc/$mc/stat"
}

run_one() {	# VARIANT: one measured run, one line "variant gets p50 p99 replies hits ..."
	local v=$1 srv=${1#xvi*-} mc=198.18.0.2 cli="" win=$WIN c0 c1 n
	case $v in *6) mc=2001:2::2 ;; esac
	if [ "$srv" != "$v" ]; then
		n=${v%%-*}
		cli="--xvi xv0 --threads ${n#xvi}" win=$XWIN
	fi
	srv=${srv%6}
	if [ "$srv" != memcached ]; then
		# shellcheck disable=SC2046 # no word or one
		x b "$BB/bin/xvi-kvcache" attach xv0 --port "$PORT" \
			$([ "$srv" = xdp ] && echo "--xdp --bpffs $FS") >/dev/null || die "attach $v"
		# One GET fills the cache before the measured ones.
		x a python3 "$ROOT/tests/lab/helpers/memcache_udp.py" "$mc" "$PORT" get hot \
			>/dev/null || die "warm-up GET"
	fi
	c0=$(cpu_now)
	# shellcheck disable=SC2086 # no word or four
	x a "$BB/tests/kvget" $cli --expect "$VALUE" "$mc" "$PORT" hot "$SEC" "$win" \
		>"$TMP/cli.json" || die "kvget $v failed"
	c1=$(cpu_now)
	echo '{"hits":0,"xdp_hits":0}' >"$TMP/kv.json"
	if [ "$srv" != memcached ]; then
		x b "$BB/bin/xvi-kvcache" stats xv0 --json >"$TMP/kv.json" || die "stats"
		x b "$BB/bin/xvi-kvcache" detach xv0 >/dev/null || die "detach"
	fi
	python3 -c 'import json, os, sys
j = json.load(open(sys.argv[1]))
k = json.load(open(sys.argv[3]))
c0, c1 = ([int(x) for x in c.split()] for c in sys.argv[4:6])
hz, secs = os.sysconf("SC_CLK_TCK"), j["seconds"]
busy, softirq, mc = ((b - a) / hz / secs for a, b in zip(c0, c1))
print(sys.argv[2], j["gets_per_s"], j["p50_us"], j["p99_us"], j["hits"] + j["misses"],
      k["hits"] + k["xdp_hits"], "%.3f %.3f %.3f %.3f" % (j["cpu_s"] / secs, mc, busy, softirq),
      j["lost"], j["bad"])' "$TMP/cli.json" "$v" "$TMP/kv.json" "$c0" "$c1"
}

for _ in $(seq "$ROUNDS"); do
	for v in $VARIANTS; do
		row=$(run_one "$v") || exit 1	# run_one said why
		echo "$row" | tee -a "$TMP/rows" >&2
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

python3 - "$TMP/rows" "$SEC" "$ROUNDS" "$WIN" "$XWIN" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
def col(v, i):
    return [float(r[i]) for r in rows if r[0] == v]
def fmt(xs, f="%.0f"):
    return "%s (%s-%s)" % (f % statistics.median(xs), f % min(xs), f % max(xs)) if xs else "-"
def med(v, i):
    xs = col(v, i)
    return statistics.median(xs) if xs else None
names = [("xdp", "the cache, hits in XDP (kv_xdp, port hook)"),
         ("tc", "the cache, hits in tc (kv_ingress)"), ("memcached", "memcached alone"),
         ("xdp6", "IPv6: the cache, hits in XDP (kv_xdp, port hook)"),
         ("memcached6", "IPv6: memcached alone")]
xvis = sorted({r[0].split("-")[0] for r in rows if r[0].startswith("xvi")},
              key=lambda c: int(c[3:]))
for c in xvis:
    names += [("%s-xdp" % c, "xvi client, %s threads: the cache, hits in XDP" % c[3:]),
              ("%s-tc" % c, "xvi client, %s threads: the cache, hits in tc" % c[3:]),
              ("%s-memcached" % c, "xvi client, %s threads: memcached alone" % c[3:])]
names = [(v, n) for v, n in names if col(v, 1)]
print("memcached GETs of one 100-byte value from a, %s s a run, %s rounds: kvget with one"
      " kernel socket, %s in flight, or (xvi client) kvget --xvi, N threads with a libxvi"
      " endpoint each, %s in flight each" % (sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]))
print("| answered by | GETs/s | p50 us | p99 us | replies (all runs) | answered by the cache"
      " | lost / bad |")
print("|---|---|---|---|---|---|---|")
for v, name in names:
    print("| %s | %s | %s | %s | %d | %d | %d / %d |" % (
        name, fmt(col(v, 1)), fmt(col(v, 2)), fmt(col(v, 3)), sum(col(v, 4)), sum(col(v, 5)),
        sum(col(v, 10)), sum(col(v, 11))))
print()
pairs = [("xdp", "memcached"), ("tc", "memcached"), ("xdp6", "memcached6"), ("xdp", "tc")]
for c in xvis:
    pairs += [("%s-xdp" % c, "%s-memcached" % c), ("%s-tc" % c, "%s-memcached" % c),
              ("%s-xdp" % c, "%s-tc" % c), ("%s-xdp" % c, "xdp"),
              ("%s-memcached" % c, "memcached")]
for a, b in pairs:
    x, y = med(a, 1), med(b, 1)
    if x and y:
        print("GET rate of %s: %.2fx %s (medians)" % (a, x / y, b))
# A client that takes CPU from memcached (a second spinning thread on a
# 2-CPU machine) lowers memcached's rate: the cache's best rate over the
# clients against memcached's best is the ratio that no client flatters.
def best(srv):
    got = [(med(v, 1), v) for v in [srv] + ["%s-%s" % (c, srv) for c in xvis] if col(v, 1)]
    return max(got) if got else None
for srv in ("xdp", "tc"):
    x, y = best(srv), best("memcached")
    if x and y:
        print("best of each over the clients: %s %.0f (%s) against memcached %.0f (%s): %.2fx"
              % (srv, x[0], x[1], y[0], y[1], x[0] / y[0]))
print("\nCPU during the runs, CPUs busy per second of run (median (min-max)): the client"
      " (its getrusage), memcached (/proc/PID/stat), the whole machine (/proc/stat: all but"
      " idle and iowait; of it softirq), and the machine's CPU time per GET")
print("| variant | client | memcached | machine busy | of it softirq | machine us per GET |")
print("|---|---|---|---|---|---|")
for v, name in names:
    per_get = [float(r[8]) / float(r[1]) * 1e6 for r in rows if r[0] == v and float(r[1]) > 0]
    print("| %s | %s | %s | %s | %s | %s |" % (v, fmt(col(v, 6), "%.2f"), fmt(col(v, 7), "%.2f"),
          fmt(col(v, 8), "%.2f"), fmt(col(v, 9), "%.2f"), fmt(per_get, "%.2f")))
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
