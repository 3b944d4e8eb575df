#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# tests/bench/routerlat.sh: request-response latency through the router
# node, with m forwarding in XDP against m's kernel forwarding, on one
# routed three-node lab (tests/bench/routed_lab.sh, IPv4 and IPv6):
#
#   a 198.18.1.1, 2001:2:1::1 -- xva  m  xvb -- 198.18.2.2, 2001:2:2::2 b
#   client, kernel sockets       routes          servers, kernel sockets
#
# Only m changes between the variants:
#   xdp     the datapath on xva and xvb, xdp-vi router enable: XDP forwards
#   kernel  the same datapath, router disabled: it passes every frame to
#           m's kernel, which forwards (what a host running xdp-vi pays)
#   bare    no XDP program on m: the kernel's forwarding alone
# The rows (64-byte messages, ping-pong, one-way latency = rtt / 2):
#   sp-udp4, sp-tcp4  sockperf ping-pong (UDP, --tcp) against sockperf
#         server: unmodified, blocking in recvfrom at both ends, so every
#         round trip pays two cross-CPU wakeups
#   udp4, tcp4, udp6, tcp6  xvi-perf ping-pong --kernel (a kernel UDP
#         socket) and --kernel --stream (kernel TCP) against xvi-perf
#         server --kernel: sockperf's protocol over plain kernel sockets,
#         both ends spinning before they block (--wait adaptive), so that
#         the path through m is most of the round trip; and IPv6, which
#         sockperf 3.7 does not speak
# a and b keep their settings in every variant: the datapath attached on
# both (a frame m's XDP redirects into a veth arrives only where the far
# end runs XDP: docs/KERNEL.md, fact 7; the kernel sockets pay its
# XDP_PASS both ways), transmit checksum offload off (full checksums, as
# from a wire: the router leaves a local kernel's partial ones to m's
# kernel).  Clients on CPU 0, servers on CPU 1; the servers live through
# the whole run.  The variants alternate (xdp, kernel, bare, ...) for
# ROUNDS rounds; the table shows medians (min-max).  Every run checks who
# forwarded: in an xdp run m's rt_forwarded must count at least the run's
# round trips twice and m's kernel (ForwDatagrams, Ip6OutForwDatagrams)
# at most 1 % of that, in the other runs the reverse; otherwise the script
# fails, naming the run.
#
# A benchmark, not a test: it never fails on numbers.
#
# usage: B=build tests/bench/routerlat.sh [-t SEC] [-r ROUNDS] [-m BYTES]

set -u -o pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${B:-build}
case $B in /*) BB=$B ;; *) BB=$ROOT/$B ;; esac
BIN=$BB/bin
SEC=2 ROUNDS=3 MSG=64
while [ $# -ge 2 ]; do
	case $1 in -t) SEC=$2 ;; -r) ROUNDS=$2 ;; -m) MSG=$2 ;; *) break ;; esac
	shift 2
done
[ $# -eq 0 ] || { grep '^# usage:' "$0" | cut -c3- >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "routerlat.sh: needs root (lab)" >&2; exit 1; }
for f in "$BIN/xdp-vi" "$BIN/xvi-relay" "$BIN/xvi-perf"; do
	[ -x "$f" ] || { echo "routerlat.sh: $f missing: make B=$B" >&2; exit 1; }
done
command -v sockperf >/dev/null || { echo "routerlat.sh: sockperf missing: make deps" >&2; exit 1; }
. "$ROOT/netns-lab/lib.sh"
export XVI_RELAY=$BIN/xvi-relay
TMP=$(mktemp -d /tmp/xvi-bench-rl.XXXXXX)
lab_at_exit "rm -rf '$TMP'"
L=xbl$$
. "$ROOT/tests/bench/routed_lab.sh"
routed_lab_up "$L" && routed_lab_ipv6 "$L" || exit 1
x() { local n=$1; shift; lab_exec --name "$L" -T 60 "$n" -- "$@"; }
die() { echo "routerlat.sh: $*" >&2; exit 1; }

B4=198.18.2.2 B6=2001:2:2::2
ROWS="sp-udp4 sp-tcp4 udp4 tcp4 udp6 tcp6"
declare -A PORT=([sp-udp4]=11111 [sp-tcp4]=11112 [udp4]=11113 [tcp4]=11114 [udp6]=11115
	[tcp6]=11116)
declare -A DST=([udp4]=$B4 [tcp4]=$B4 [udp6]=$B6 [tcp6]=$B6)

for n in a b; do
	x "$n" ethtool -K xv0 tx off >/dev/null || die "checksum offload off on $n"
	x "$n" "$BIN/xdp-vi" attach xv0 >/dev/null || die "xdp-vi attach on $n"
done

# The servers, on b for the whole run (the lab's teardown kills them).
srv() { lab_exec --name "$L" -T 3000 b -- taskset -c 1 "$@" >>"$TMP/servers.out" 2>&1 & }
srv sockperf server -i $B4 -p "${PORT[sp-udp4]}"
srv sockperf server --tcp -i $B4 -p "${PORT[sp-tcp4]}"
for r in udp4 udp6; do
	srv "$BIN/xvi-perf" server --kernel -i "${DST[$r]}" -p "${PORT[$r]}"
done
for r in tcp4 tcp6; do
	srv "$BIN/xvi-perf" server --kernel --stream -i "${DST[$r]}" -p "${PORT[$r]}"
done
for r in $ROWS; do
	case $r in *udp*) o=-uln ;; *) o=-tln ;; esac
	for _ in $(seq 100); do
		x b ss -H $o "sport = :${PORT[$r]}" | grep -q . && continue 2
		sleep 0.1
	done
	die "the $r server on b is not listening: $(tail -c 300 "$TMP/servers.out")"
done

rtfwd() {	# frames m's XDP forwarded so far; 0 with no datapath on m
	local j
	j=$(x m "$BIN/xdp-vi" router status xva xvb --json 2>/dev/null) || { echo 0; return; }
	python3 -c 'import json,sys; print(sum(i["rt_forwarded"] for i in json.load(sys.stdin)))' \
		<<<"$j"
}
kfwd() { routed_lab_kfwd "$L"; }

variant() {	# VARIANT: make m forward that way
	local i
	case $1 in
	bare)
		for i in xva xvb; do
			x m "$BIN/xdp-vi" detach "$i" >/dev/null || die "detach $i on m"
		done
		x m ip -d link show | grep -q 'prog/xdp' && die "XDP left on m"
		;;
	*)
		for i in xva xvb; do
			x m "$BIN/xdp-vi" attach "$i" >/dev/null || die "attach $i on m"
		done
		if [ "$1" = xdp ]; then
			x m "$BIN/xdp-vi" router enable xva xvb >/dev/null || die "router enable"
		else
			x m "$BIN/xdp-vi" router disable xva xvb >/dev/null || die "router disable"
		fi
		;;
	esac
	# Both ways through m once (neighbours resolved) before measuring.
	x a ping -n -q -c 2 -i 0.2 -W 2 $B4 >/dev/null && x a ping -n -q -c 2 -i 0.2 -W 2 $B6 \
		>/dev/null || die "no way from a to b through m ($1)"
}

strip() { sed -e 's/\x1b\[[0-9;]*m//g' "$1"; }

# run VARIANT ROW: one client run; one line "row variant p50 p99 p99.9
# round_trips_per_s round_trips by_xdp by_kernel"
run() {
	local v=$1 r=$2 out=$TMP/$1-$2.out f0 f1 k0 k1 res
	f0=$(rtfwd) k0=$(kfwd)
	case $r in
	sp-udp4) x a taskset -c 0 sockperf ping-pong -i $B4 -p "${PORT[$r]}" -t "$SEC" -m "$MSG" \
		>"$out" 2>&1 ;;
	sp-tcp4) x a taskset -c 0 sockperf ping-pong --tcp -i $B4 -p "${PORT[$r]}" -t "$SEC" \
		-m "$MSG" >"$out" 2>&1 ;;
	udp*) x a taskset -c 0 "$BIN/xvi-perf" ping-pong --kernel -i "${DST[$r]}" \
		-p "${PORT[$r]}" -t "$SEC" -m "$MSG" --json >"$out" 2>&1 ;;
	tcp*) x a taskset -c 0 "$BIN/xvi-perf" ping-pong --kernel --stream -i "${DST[$r]}" \
		-p "${PORT[$r]}" -t "$SEC" -m "$MSG" --json >"$out" 2>&1 ;;
	esac
	f1=$(rtfwd) k1=$(kfwd)
	case $r in
	sp-*) res=$(strip "$out" | awk '
		/\[Valid Duration\]/ { for (i = 1; i <= NF; i++) {
			if ($i ~ /^RunTime=/) { sub(/RunTime=/, "", $i); t = $i + 0 }
			if ($i ~ /^ReceivedMessages=/) { sub(/ReceivedMessages=/, "", $i); n = $i + 0 } } }
		/percentile 50.000 =/ { p50 = $NF } /percentile 99.000 =/ { p99 = $NF }
		/percentile 99.900 =/ { p999 = $NF }
		END { if (n > 0 && t > 0 && p50 != "")
			printf "%s %s %s %.0f %d\n", p50, p99, p999, n / t, n }') ;;
	*) res=$(python3 -c 'import json,sys
j = json.load(open(sys.argv[1])); l = j["latency_usec"]
if j["received"] > 0:
    print(l["p50"], l["p99"], l["p99.9"], "%.0f" % (j["received"] / j["seconds"]), j["received"])
' "$out" 2>/dev/null) ;;
	esac
	[ -n "$res" ] || die "$r through m ($v): no round trips measured: $(strip "$out" | tail -c 300)"
	echo "$r $v $res $((f1 - f0)) $((k1 - k0))"
}

for i in $(seq "$ROUNDS"); do
	for v in xdp kernel bare; do
		variant "$v"
		for r in $ROWS; do run "$v" "$r" | tee -a "$TMP/rows" >&2 || exit 1; done
	done
done

python3 - "$TMP/rows" "$MSG" "$SEC" "$ROUNDS" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
# The path each run claims, checked before any number is shown.
wrong = []
for r in rows:
    n, xf, kf = int(r[6]), int(r[7]), int(r[8])
    fwd, other = (xf, kf) if r[1] == "xdp" else (kf, xf)
    if fwd < 2 * n or other > fwd // 100:
        wrong.append("%s %s: %d round trips, by XDP %d, by m's kernel %d" % (r[0], r[1], n, xf, kf))
if wrong:
    sys.exit("routerlat.sh: forwarded by the wrong path in %d runs, e.g. %s"
             % (len(wrong), wrong[0]))
def col(row, v, i):
    return [float(r[i]) for r in rows if r[0] == row and r[1] == v]
def fmt(xs, f="%.1f"):
    return "%s (%s-%s)" % (f % statistics.median(xs), f % min(xs), f % max(xs)) if xs else "-"
tools = {"sp-udp4": "UDP, IPv4, sockperf", "sp-tcp4": "TCP, IPv4, sockperf --tcp",
         "udp4": "UDP, IPv4, xvi-perf --kernel", "tcp4": "TCP, IPv4, xvi-perf --kernel --stream",
         "udp6": "UDP, IPv6, xvi-perf --kernel", "tcp6": "TCP, IPv6, xvi-perf --kernel --stream"}
names = {"xdp": "xdp-vi router (XDP)", "kernel": "kernel, datapath passing",
         "bare": "kernel, no XDP on m"}
print("Ping-pong a -> m -> b and back, %s-byte messages, kernel sockets on a and b, "
      "%s s a run, %s rounds;" % (sys.argv[2], sys.argv[3], sys.argv[4]))
print("one-way latency (rtt / 2) in usec, medians (min-max) over the rounds")
print("| path | m forwards by | p50 | p99 | p99.9 | round trips/s |")
print("|---|---|---|---|---|---|")
ratios = []
for row in ("sp-udp4", "sp-tcp4", "udp4", "tcp4", "udp6", "tcp6"):
    for v in ("xdp", "kernel", "bare"):
        if col(row, v, 2):
            print("| %s | %s | %s | %s | %s | %s |" % (tools[row], names[v], fmt(col(row, v, 2)),
                  fmt(col(row, v, 3)), fmt(col(row, v, 4)), fmt(col(row, v, 5), "%.0f")))
    x, k, b = (statistics.median(col(row, v, 2)) for v in ("xdp", "kernel", "bare"))
    ratios.append("%s %.2fx / %.2fx" % (row, k / x, b / x))
print("\np50, kernel forwarding / XDP (datapath passing / no XDP on m): " + ", ".join(ratios))
print("every run: forwarded by the path its row names (m's rt_forwarded and its kernel's "
      "forwarding counters)")
PY
