#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# tests/bench/tcpserver.sh: xvi-httpd on node b over kernel TCP (RegTCP: m
# routes in its kernel) against the same server through MemNet's TCP
# Server (xvi-tcpserver on m, the host's sockets are m's), on one routed
# three-node lab (a 198.18.1.1 -- m -- 198.18.2.2 b, as
# tests/lab/tcpserver.sh builds it).  A benchmark, not a test: it prints a
# table and never fails on numbers.
#
#   node a: wrk (closed loop, 20 connections, keep-alive) and httperf
#           (open loop, HTTP/1.1, 6 requests per connection in bursts of 3,
#           at RATE new connections/s) fetching one file of SIZE bytes
#           (default 1024)
#   node b: xvi-httpd --kernel, or xvi-httpd over the TCP Server
#   node m: kernel forwarding, or xvi-tcpserver
#
# Variants (TS_VARIANTS, default all that can run) alternate for ROUNDS
# rounds:
#   regtcp      xvi-httpd --kernel on b, m routes
#   haproxy     the same, reached through haproxy (TCP mode, one thread) on m
#   memnet      xvi-httpd over the TCP Server on m, plain send/recv
#   direct      the same with --direct: file bodies by send_direct
#   async       the same with --async: responses by async_send jobs
#   base        memnet with the binaries of another build, TS_BASE_B=DIR
#               (its own xvi-tcpserver on service 9001): a change on and
#               off in one run
#   basereg     regtcp with that build's xvi-httpd
#   basedirect  direct with that build's binaries (service 9001)
#   baseasync   async with that build's binaries (service 9001)
# The table shows medians (min-max) of wrk's requests/s and latency
# p50/p99, httperf's reply rate and reply time, and the CPU seconds per
# second of the host's server process and of m's server process
# (xvi-tcpserver or haproxy) during the wrk run.
#
# -S "RATE..." adds the paper's sweep over offered load: after wrk, httperf
# at each RATE new connections/s, HTTP/1.0 (one request a connection) and
# HTTP/1.1 (6 requests a connection in bursts of 3), SEC s a point, and a
# second table of replies/s against offered requests/s.  Without --hog,
# on a that reuses TIME_WAIT ports (tcp_tw_reuse) so that points do not
# run out of them.
#
# a keeps at most 4096 sockets in TIME_WAIT (tcp_max_tw_buckets, a's
# namespace only): with tens of thousands of them (a few runs' worth of
# httperf connections in the last minute), httperf --hog stalls with
# connections it opened and never sent a request on, whichever system
# serves.  Every httperf run is bounded by SEC + 20 s, and the host's server
# by the round (as m's), so that a stalled run costs one figure (-1), not
# the round's later ones.
#
# TS_PERF=DIR: perf record (call graphs) of the host's server and of m's
# server during each wrk run, into DIR/VARIANT-PORT-{host,m}.data (a port per round); the
# CPU figures of such a run include perf's own cost.
#
# usage: B=build tests/bench/tcpserver.sh [-t SEC] [-r ROUNDS] [-R RATE] [-s SIZE] [-S "RATE..."]

set -u -o pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${B:-build}
case $B in /*) BIN=$B/bin ;; *) BIN=$ROOT/$B/bin ;; esac
SEC=5 ROUNDS=3 RATE=2000 SIZE=1024 SWEEP=
while [ $# -ge 2 ]; do
	case $1 in -t) SEC=$2 ;; -r) ROUNDS=$2 ;; -R) RATE=$2 ;; -s) SIZE=$2 ;; -S) SWEEP=$2 ;;
	*) break ;; esac
	shift 2
done
[ $# -eq 0 ] || { grep '^# usage:' "$0" | cut -c3- >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "tcpserver.sh: needs root (lab)" >&2; exit 1; }
for b in "$BIN/xdp-vi" "$BIN/xvi-httpd" "$BIN/xvi-tcpserver" "$BIN/xvi-relay"; do
	[ -x "$b" ] || { echo "tcpserver.sh: $b missing: make B=$B" >&2; exit 1; }
done
command -v wrk >/dev/null && command -v httperf >/dev/null ||
	{ echo "tcpserver.sh: wrk and httperf missing: scripts/install-deps.sh" >&2; exit 1; }
BASE=${TS_BASE_B:-}
case $BASE in ''|/*) ;; *) BASE=$ROOT/$BASE ;; esac
DEFV="regtcp memnet direct async"
command -v haproxy >/dev/null && DEFV="$DEFV haproxy" ||
	echo "tcpserver.sh: haproxy missing (scripts/install-deps.sh): no haproxy row" >&2
[ -z "$BASE" ] || DEFV="$DEFV base basereg"
VARIANTS=${TS_VARIANTS:-$DEFV}
case " $VARIANTS " in *" base "*|*" basereg "*|*" basedirect "*|*" baseasync "*)
	[ -x "$BASE/bin/xvi-httpd" ] && [ -x "$BASE/bin/xvi-tcpserver" ] ||
		{ echo "tcpserver.sh: variant base: set TS_BASE_B to a build with xvi-httpd and xvi-tcpserver" >&2; exit 1; } ;;
esac
. "$ROOT/netns-lab/lib.sh"
export XVI_RELAY=$BIN/xvi-relay
TMP=$(mktemp -d /tmp/xvi-bench-ts.XXXXXX)
lab_at_exit "rm -rf '$TMP'"
L=xbt$$
lab_up --name "$L" --nodes 3 >&2 || { echo "tcpserver.sh: lab_up failed" >&2; exit 1; }
lab_relay_stop --name "$L"
x() { local n=$1; shift; lab_exec --name "$L" -T 60 "$n" -- "$@"; }
die() { echo "tcpserver.sh: $*" >&2; exit 1; }

for n in a b; do x "$n" ip addr flush dev xv0 || die "flush on $n"; done
x a ip addr add 198.18.1.1/24 dev xv0 && x a ip route add default via 198.18.1.254 &&
x b ip addr add 198.18.2.2/24 dev xv0 && x b ip route add default via 198.18.2.254 &&
x m ip link set xva promisc off && x m ip link set xvb promisc off &&
x m ip addr add 198.18.1.254/24 dev xva && x m ip addr add 198.18.2.254/24 dev xvb &&
x m sysctl -qw net.ipv4.ip_forward=1 || die "could not build the routed lab"
x b "$BIN/xdp-vi" attach xv0 >/dev/null || die "attach on b"
x m "$BIN/xdp-vi" attach xvb >/dev/null || die "attach xvb on m"
x a ping -c 1 -W 2 198.18.2.2 >/dev/null || die "no way from a to b"
[ -z "$SWEEP" ] || x a sysctl -qw net.ipv4.tcp_tw_reuse=1 net.ipv4.ip_local_port_range="1024 65535" ||
	die "sysctl on a"
x a sysctl -qw net.ipv4.tcp_max_tw_buckets=4096 || die "sysctl tcp_max_tw_buckets on a"
mkdir -p "$TMP/www"
head -c "$SIZE" /dev/urandom >"$TMP/www/f1k"

# m's server (xvi-tcpserver or haproxy) and the host's (xvi-httpd) serve
# one round: bounded by 300 s, longer than a round takes, even with every
# httperf run at its bound (a 60 s bound stopped them mid-round).

cpu_of() {	# utime + stime of PID in seconds (0 without a PID)
	[ -n "$1" ] || { echo 0; return; }
	awk -v hz="$(getconf CLK_TCK)" '{ printf "%.3f\n", ($14 + $15) / hz }' "/proc/$1/stat" \
		2>/dev/null || echo 0
}
pid_of() { pgrep -f -- "$1" | head -1; }
wait_listen() {
	for _ in $(seq 100); do
		[ -n "$(x "$1" ss -H -tln "sport = :$2" 2>/dev/null)" ] && return 0
		sleep 0.1
	done
	return 1
}

PORT=8100
run_one() {	# VARIANT: one line "variant rps p50ms p99ms httperf_rps httperf_ms host_cpu srv_cpu"
	local v=$1 dst=198.18.1.254 node=m hp h0 h1 s0 s1 spid hb=$BIN svc=9000 hx=()
	case $v in
	regtcp|haproxy)
		hx=(--kernel) ;;
	basereg)
		hb=$BASE/bin hx=(--kernel) ;;
	memnet)
		hx=(-i xv0 -s 198.18.2.254:9000) ;;
	direct)
		hx=(-i xv0 -s 198.18.2.254:9000 --direct) ;;
	async)
		hx=(-i xv0 -s 198.18.2.254:9000 --async) ;;
	base)
		hb=$BASE/bin svc=9001 hx=(-i xv0 -s 198.18.2.254:9001) ;;
	basedirect)
		hb=$BASE/bin svc=9001 hx=(-i xv0 -s 198.18.2.254:9001 --direct) ;;
	baseasync)
		hb=$BASE/bin svc=9001 hx=(-i xv0 -s 198.18.2.254:9001 --async) ;;
	*)	die "unknown variant $v (regtcp haproxy memnet direct async base basereg basedirect baseasync)" ;;
	esac
	local w hpx=
	if [ "${hx[0]}" != --kernel ]; then
		lab_exec --name "$L" -T 300 m -- "$hb/xvi-tcpserver" -i xvb 198.18.2.254 $svc \
			2>>"$TMP/srv.err" &
		hpx=$!
		for _ in $(seq 50); do
			x m "$BIN/xdp-vi" status 2>/dev/null | grep -q ":$svc" && break
			sleep 0.1
		done
	fi
	lab_exec --name "$L" -T 300 b "$hb/xvi-httpd" "${hx[@]}" -r "$TMP/www" $PORT 2>"$TMP/h.err" &
	w=$!
	if [ "$v" = regtcp ] || [ "$v" = basereg ]; then
		dst=198.18.2.2 node=b
	elif [ "$v" = haproxy ]; then
		wait_listen b $PORT || die "$v: no listener on b: $(cat "$TMP/h.err")"
		printf '%s\n' global "  nbthread 1" "  maxconn 8000" defaults "  mode tcp" \
			"  timeout connect 5s" "  timeout client 60s" "  timeout server 60s" \
			"listen web" "  bind 198.18.1.254:$PORT" "  server b 198.18.2.2:$PORT" \
			>"$TMP/haproxy.cfg"
		lab_exec --name "$L" -T 300 m -- haproxy -db -f "$TMP/haproxy.cfg" \
			2>"$TMP/hx.err" &
		hpx=$!
	fi
	wait_listen $node $PORT || die "$v: no listener: $(cat "$TMP/h.err" "$TMP/hx.err" 2>/dev/null)"
	hp=$(pid_of "^$hb/xvi-httpd .*$PORT\$")
	case $v in
	memnet|direct|async|base|basedirect|baseasync) spid=$(pid_of "^$hb/xvi-tcpserver .* $svc\$")
		[ -n "$spid" ] || die "$v: xvi-tcpserver did not start: $(tail -2 "$TMP/srv.err")" ;;
	haproxy) spid=$(pid_of "^haproxy -db -f $TMP/haproxy.cfg") ;;
	*) spid= ;;
	esac
	h0=$(cpu_of "$hp") s0=$(cpu_of "$spid")
	local pp=() who pid
	for who in host m; do
		pid=$hp
		[ $who = host ] || pid=$spid
		[ -n "${TS_PERF:-}" ] && [ -n "$pid" ] || continue
		perf record -q -F 1999 -g -p "$pid" -o "$TS_PERF/$v-$PORT-$who.data" \
			-- sleep "$SEC" >/dev/null 2>&1 &
		pp+=($!)
	done
	x a wrk --latency -t 1 -c 20 -d "${SEC}s" "http://$dst:$PORT/f1k" >"$TMP/wrk.out" 2>&1
	[ ${#pp[@]} = 0 ] || wait "${pp[@]}"
	h1=$(cpu_of "$hp") s1=$(cpu_of "$spid")
	x a timeout $((SEC + 20)) httperf --hog --server $dst --port $PORT --uri /f1k --rate "$RATE" \
		--num-conns $((RATE * SEC)) --num-calls 6 --burst-length 3 --timeout 5 \
		>"$TMP/hp.out" 2>&1
	local rate proto calls hb3
	for rate in $SWEEP; do
		for proto in 1.0 1.1; do
			calls=1 hb3=()
			[ $proto = 1.0 ] || calls=6 hb3=(--burst-length 3)
			x a timeout $((SEC + 20)) httperf --server $dst --port $PORT --uri /f1k --http-version $proto \
				--rate "$rate" --num-conns $((rate * SEC)) --num-calls $calls "${hb3[@]}" \
				--timeout 5 >"$TMP/sw.out" 2>&1
			echo "$v $proto $((rate * calls)) $(sed -n 's/.*replies \([0-9]*\) test-duration \([0-9.]*\) s.*/\1 \2/p' \
				"$TMP/sw.out" | awk '{ printf "%.0f", $1 / $2 }')" >>"$TMP/sweep"
			tail -1 "$TMP/sweep" | sed 's/^/# sweep: /' >&2
		done
	done
	[ -z "$spid" ] || kill -0 "$spid" 2>/dev/null ||
		die "$v: m's server exited during the round: $(tail -2 "$TMP/srv.err" "$TMP/hx.err" 2>/dev/null)"
	# httperf killed by its bound prints no summary: show what it did print.
	grep -q 'test-duration' "$TMP/hp.out" ||
		sed 's/^/# httperf ('"$v"'): /' "$TMP/hp.out" | tail -12 >&2
	kill -TERM "$hp" 2>/dev/null
	wait "$w"
	if [ -n "$hpx" ]; then
		kill -TERM "$spid" 2>/dev/null
		wait "$hpx"
	fi
	python3 - "$v" "$TMP/wrk.out" "$TMP/hp.out" "$SEC" "$h0" "$h1" "$s0" "$s1" <<'PY'
import re, sys
v, wrk, hp, sec = sys.argv[1], open(sys.argv[2]).read(), open(sys.argv[3]).read(), float(sys.argv[4])
h0, h1, s0, s1 = map(float, sys.argv[5:9])
def ms(s):
    m = re.match(r"([\d.]+)(us|ms|s)", s)
    return float(m.group(1)) * {"us": 1e-3, "ms": 1, "s": 1e3}[m.group(2)] if m else -1
rps = re.search(r"Requests/sec:\s+([\d.]+)", wrk)
p50 = re.search(r"\s50%\s+(\S+)", wrk)
p99 = re.search(r"\s99%\s+(\S+)", wrk)
# httperf samples its reply rate every 5 s: the total over the duration
# covers runs shorter than that too.
tot = re.search(r"replies (\d+) test-duration ([\d.]+) s", hp)
ht = re.search(r"Reply time \[ms\]: response ([\d.]+)", hp)
srv = (s1 - s0) / sec
print(v, rps.group(1) if rps else -1, ms(p50.group(1)) if p50 else -1,
      ms(p99.group(1)) if p99 else -1,
      "%.0f" % (int(tot.group(1)) / float(tot.group(2))) if tot else -1,
      ht.group(1) if ht else -1,
      "%.2f" % ((h1 - h0) / sec), "%.2f" % srv)
PY
}

for r in $(seq "$ROUNDS"); do
	for v in $VARIANTS; do
		PORT=$((PORT + 1))	# here: run_one runs in the pipe's subshell
		run_one "$v" | tee -a "$TMP/rows" >&2
	done
done

sed 's/^/# xvi-tcpserver: /' "$TMP/srv.err" >&2
python3 - "$TMP/rows" "$SEC" "$ROUNDS" "$RATE" "$SIZE" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
def col(v, i):
    return [float(r[i]) for r in rows if r[0] == v and float(r[i]) >= 0]
def fmt(xs, f):
    return "%s (%s-%s)" % (f % statistics.median(xs), f % min(xs), f % max(xs)) if xs else "-"
print("Web server on b, a file of %s bytes, fetched from a; %s s a run, %s rounds" % (sys.argv[5], sys.argv[2], sys.argv[3]))
print("wrk -t1 -c20 (keep-alive, closed loop); httperf HTTP/1.1, 6 calls a connection in bursts of 3, %s connections/s offered" % sys.argv[4])
print("| system | wrk requests/s | p50 ms | p99 ms | httperf replies/s | reply time ms | host server CPU/s | m's server CPU/s |")
print("|---|---|---|---|---|---|---|---|")
for v, name in (("regtcp", "RegTCP (kernel TCP on b, m routes)"),
                ("basereg", "RegTCP, TS_BASE_B's build"),
                ("haproxy", "haproxy on m (TCP mode, 1 thread) in front of RegTCP"),
                ("base", "MemNet, TS_BASE_B's build"),
                ("memnet", "MemNet (TCP Server on m)"),
                ("basedirect", "MemNet_Direct, TS_BASE_B's build"),
                ("direct", "MemNet_Direct (send_direct)"),
                ("baseasync", "MemNet_Async, TS_BASE_B's build"),
                ("async", "MemNet_Async (async_send jobs)")):
    if not col(v, 1) and not col(v, 4):
        continue
    print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (name, fmt(col(v, 1), "%.0f"),
          fmt(col(v, 2), "%.3f"), fmt(col(v, 3), "%.3f"), fmt(col(v, 4), "%.0f"),
          fmt(col(v, 5), "%.2f"), fmt(col(v, 6), "%.2f"), fmt(col(v, 7), "%.2f")))
r = col("regtcp", 1)
for v in ("basereg", "haproxy", "base", "memnet", "basedirect", "direct", "baseasync", "async"):
    m = col(v, 1)
    if r and m:
        print("%s / regtcp wrk requests/s, medians: %.2fx" % (v, statistics.median(m) / statistics.median(r)))
PY
[ -s "$TMP/sweep" ] || exit 0
python3 - "$TMP/sweep" "$SEC" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if len(l.split()) == 4]
names = {"regtcp": "RegTCP", "basereg": "RegTCP (base)", "haproxy": "haproxy", "base": "MemNet (base)",
         "memnet": "MemNet", "basedirect": "MemNet_Direct (base)", "direct": "MemNet_Direct",
         "baseasync": "MemNet_Async (base)", "async": "MemNet_Async"}
points = sorted({(r[1], int(r[2])) for r in rows})
print()
print("httperf replies/s against offered requests/s (%s s a point, medians of the rounds)" % sys.argv[2])
print("| system | " + " | ".join("HTTP/%s %d" % p for p in points) + " |")
print("|---|" + "---|" * len(points))
for v in names:
    if not any(r[0] == v for r in rows):
        continue
    cells = []
    for p, o in points:
        xs = [float(r[3]) for r in rows if r[0] == v and r[1] == p and int(r[2]) == o]
        cells.append("%.0f" % statistics.median(xs) if xs else "-")
    print("| %s | %s |" % (names[v], " | ".join(cells)))
PY
