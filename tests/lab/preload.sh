#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# preload.sh: unmodified UDP programs under xvi-run (libxvi-preload.so) on
# the two-node lab, datapath on both nodes.  Every row that runs a program
# under xvi-run checks that its sockets really ran over xvi: the endpoints'
# counters (xvi-run --stats) moved, and the kernel's UDP counters in that
# node's namespace (/proc/net/snmp, Udp InDatagrams and OutDatagrams, and
# /proc/net/snmp6, Udp6InDatagrams and Udp6OutDatagrams) did not.  A
# socket that silently stayed on the kernel fails the row.

. "$(dirname "$0")/_tap.sh"

XVIRUN=$T_BIN/xvi-run
SEM=$T_B/tests/preload_sem

t_setup() {
	t_need "$XDPVI" "$XVIRUN" "$SEM" "$T_B/lib/libxvi-preload.so" || return 1
	t_lab_up pl || return 1
	t_attach a && t_attach b
}

# "InDatagrams OutDatagrams Udp6InDatagrams Udp6OutDatagrams" of the
# kernel's UDP (IPv4, IPv6) in NODE's namespace.
_udp_counters() {
	t_x "$1" sh -c 'cat /proc/net/snmp /proc/net/snmp6' | awk '
		$1 == "Udp:" && $2 ~ /^[0-9]+$/ { v4 = $2 " " $5 }
		$1 == "Udp6InDatagrams" { i6 = $2 }
		$1 == "Udp6OutDatagrams" { o6 = $2 }
		END { print v4, i6, o6 }'
}

# The sum of counter NAME over the endpoint lines of xvi-run --stats FILE.
_stats_sum() {
	sed -n "s/.* $2=\([0-9]*\).*/\1/p" "$1" 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'
}

# The datapath's rx_frames of NODE's endpoints on PORT, while they live.
_status_rx() {
	t_xdpvi "$1" status --json >"$T_TMP/st-$2.json" 2>/dev/null &&
		"$PY" "$T_HELPERS/xvi_status.py" "$T_TMP/st-$2.json" counters "$2" rx_frames
}

# Wait until no live endpoint of NODE is on PORT: the program that held it
# has exited, and the next one may take the interface's queue directly.
_wait_gone() {
	local i
	for i in $(seq "$T_WAIT_TENTHS"); do
		t_xdpvi "$1" status --json >"$T_TMP/gone.json" 2>/dev/null &&
			! "$PY" "$T_HELPERS/xvi_status.py" "$T_TMP/gone.json" live "$2" && return 0
		sleep 0.1
	done
	fail "node $1: the endpoint on port $2 outlived its program"
}

# _ran_over_xvi NODE BEFORE RX TX WHAT: the endpoints moved WHAT (rx, tx or
# both: RX received and TX sent datagrams) and NODE's kernel UDP counters
# are still BEFORE.
_ran_over_xvi() {
	local node=$1 before=$2 rx=${3:-0} tx=${4:-0} what=$5 after
	after=$(_udp_counters "$node")
	case $what in rx | both) [ "$rx" -gt 0 ] || { fail "node $node: no datagram received" \
		"through an endpoint (rx_frames=0): the sockets stayed on the kernel"; return 1; } ;; esac
	case $what in tx | both) [ "$tx" -gt 0 ] || { fail "node $node: no datagram sent" \
		"through an endpoint (tx_frames=0): the sockets stayed on the kernel"; return 1; } ;; esac
	[ "$before" = "$after" ] || { fail "node $node: kernel UDP counters moved" \
		"(InDatagrams OutDatagrams Udp6InDatagrams Udp6OutDatagrams $before -> $after):" \
		"traffic went through the kernel"
		return 1; }
	t_log "node $node: endpoints rx $rx tx $tx, kernel UDP counters unchanged ($after)"
}

# _stats_over_xvi NODE STATS BEFORE WHAT: _ran_over_xvi with STATS' counters.
_stats_over_xvi() {
	[ -s "$2" ] || { fail "node $1: no endpoint was opened (no $2):" \
		"the sockets stayed on the kernel"; return 1; }
	sed 's/^/# stats: /' "$2" >&2
	_ran_over_xvi "$1" "$3" "$(_stats_sum "$2" rx_frames)" "$(_stats_sum "$2" tx_frames)" "$4"
}

# A kernel UDP echo server on node a, PORT, sending with TOS 0x20 (read
# back by IP_RECVTOS); stopped by t_stop "$ECHO_PID".  _echo_up PORT 6: one
# dual-stack IPv6 socket on ::, traffic class 0x20 too (IPV6_RECVTCLASS).
_echo_up() {
	t_x -T 120 a "$PY" -c '
import socket, sys
v6 = sys.argv[2] == "6"
s = socket.socket(socket.AF_INET6 if v6 else socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, 0x20)
if v6:
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_TCLASS, 0x20)
s.bind(("::" if v6 else "198.18.0.1", int(sys.argv[1])))
s.settimeout(60)
while True:
    d, a = s.recvfrom(65535)
    s.sendto(d, a)
' "$1" "${2:-4}" >/dev/null 2>&1 &
	ECHO_PID=$!
	t_wait_udp_port a "$1" || { t_stop "$ECHO_PID"; fail "echo server on a:$1 never came up"; return 1; }
}

case_sem_kernel() {
	local out=$T_TMP/sem-kernel.out
	_echo_up 9201 || return 1
	t_x -T 60 b "$SEM" 198.18.0.2 9200 198.18.0.1 9201 >"$out" 2>&1
	local rc=$?
	t_stop "$ECHO_PID"
	sed 's/^/# /' "$out" >&2
	[ $rc -eq 0 ] || fail "on kernel sockets (exit $rc): $(grep -m1 FAIL "$out")"
}

# _sem_xvi PORT [XVI-RUN OPTIONS]: preload_sem under xvi-run on b, from PORT.
_sem_xvi() {
	local port=$1 out=$T_TMP/sem-xvi-$1.out stats=$T_TMP/sem-$1.stats before rc
	shift
	_echo_up $((port + 5)) || return 1
	before=$(_udp_counters b)
	t_x -T 60 b "$XVIRUN" "$@" --stats "$stats" "$SEM" 198.18.0.2 "$port" 198.18.0.1 \
		$((port + 5)) >"$out" 2>&1
	rc=$?
	t_stop "$ECHO_PID"
	sed 's/^/# /' "$out" >&2
	[ $rc -eq 0 ] || [ ! -s "$stats" ] || sed 's/^/# stats: /' "$stats" >&2
	[ $rc -eq 0 ] || fail "under xvi-run $* (exit $rc): $(grep -m1 -E 'FAIL|stays on' "$out")" ||
		return
	# Every socket of preload_sem is on xvi; a refused option must not say otherwise.
	! grep -q 'stays on the kernel' "$out" ||
		fail "a socket logged as on the kernel: $(grep -m1 'stays on the kernel' "$out")" ||
		return
	_stats_over_xvi b "$stats" "$before" both
}

case_sem_xvi() { _sem_xvi 9202; }

# The same with deferred send doorbells: every wait must ring them first,
# or the echo never comes.
case_sem_batch() { _sem_xvi 9220 --tx-batch 8; }

# preload_sem as a plain uid (no capabilities): its socket goes on a
# protected endpoint through an xdp-vid started for the case on b.
case_sem_protected() {
	local run=$T_TMP/run bin=$T_TMP/bin out=$T_TMP/sem-prot.out stats before rc vid
	local uid=$((20000 + $$ % 20000))
	chmod 0755 "$T_TMP" && mkdir -p "$run" "$bin" && chmod 0755 "$run" "$bin" &&
		cp "$XVIRUN" "$SEM" "$T_B/lib/libxvi-preload.so" "$bin/" && chmod 0755 "$bin"/* ||
		{ fail "cannot copy the programs out for uid $uid"; return 1; }
	stats=$bin/stats && : >"$stats" && chmod 0666 "$stats"
	echo "allow * udp 1024-65535 addr iface" >"$T_TMP/policy"
	t_x -T 120 b env XVI_RUN_DIR="$run" "$T_BIN/xdp-vid" --policy "$T_TMP/policy" \
		"$LAB_IFACE" >"$T_TMP/vid.log" 2>&1 &
	vid=$!
	for _ in $(seq "$T_WAIT_TENTHS"); do
		ls "$run"/*.sock >/dev/null 2>&1 && break
		sleep 0.1
	done
	ls "$run"/*.sock >/dev/null 2>&1 || { t_stop "$vid"; fail "xdp-vid did not start:" \
		"$(tail -3 "$T_TMP/vid.log")"; return 1; }
	_echo_up 9211 || { t_stop "$vid"; return 1; }
	before=$(_udp_counters b)
	t_x -T 60 b env XVI_RUN_DIR="$run" XVI_RUN_PRELOAD="$bin/libxvi-preload.so" \
		setpriv --reuid="$uid" --regid=65534 --clear-groups --inh-caps=-all \
		"$bin/xvi-run" --stats "$stats" "$bin/preload_sem" 198.18.0.2 9210 198.18.0.1 9211 \
		>"$out" 2>&1
	rc=$?
	t_stop "$ECHO_PID"
	t_stop "$vid"
	sed 's/^/# /' "$out" >&2
	[ $rc -eq 0 ] || fail "as uid $uid under xvi-run (exit $rc):" \
		"$(grep -m1 -E 'FAIL|stays on' "$out")" || return
	grep -q "path=protected" "$stats" || fail "not a protected endpoint: $(head -c 300 "$stats")" ||
		return
	sed 's/^/# stats: /' "$stats" >&2
	# A protected client cannot read the datapath's counters (rx_frames
	# stays 0): the datagrams its endpoint's RX ring gave it count instead.
	_ran_over_xvi b "$before" "$(_stats_sum "$stats" rx_dgrams)" \
		"$(_stats_sum "$stats" tx_frames)" both
}

# Received messages in a sockperf client's output, 0 if none.
_sockperf_received() {
	sed -e 's/\x1b\[[0-9;]*m//g' "$1" |
		sed -n 's/.*\[Valid Duration\].*ReceivedMessages=\([0-9]*\).*/\1/p' | head -1
}

# _sockperf SRV_RUN CLI_RUN MODE PORT MSGSIZE: a sockperf server on b and a
# client on a, each under xvi-run when its RUN is "xvi".  MODE ping-pong or
# throughput.  Checks every xvi side ran over xvi.
_sockperf() {
	local srun=$1 crun=$2 mode=$3 port=$4 size=$5
	local cstats=$T_TMP/sp-cli-$4.stats cli=$T_TMP/sp-cli-$4.out ba bb n=0 spid
	local spre=() cpre=()
	[ "$srun" = xvi ] && spre=("$XVIRUN")
	[ "$crun" = xvi ] && cpre=("$XVIRUN" --stats "$cstats")
	ba=$(_udp_counters a)
	bb=$(_udp_counters b)
	t_x -T 90 b "${spre[@]}" sockperf server -i 198.18.0.2 -p "$port" \
		>"$T_TMP/sp-srv-$port.out" 2>&1 &
	spid=$!
	if [ "$srun" = xvi ]; then
		t_wait_endpoint_port b "$port"
	else
		t_wait_udp_port b "$port"
	fi || { t_stop "$spid"; fail "sockperf server on b:$port never came up:" \
		"$(head -c 300 "$T_TMP/sp-srv-$port.out")"; return 1; }
	t_x -T 60 a "${cpre[@]}" sockperf "$mode" -i 198.18.0.2 -p "$port" -t 2 -m "$size" \
		>"$cli" 2>&1
	local rc=$? srx=0
	# The server's endpoint counters from the datapath, before it goes.
	[ "$srun" = xvi ] && srx=$(_status_rx b "$port")
	t_stop "$spid"
	[ "$srun" = xvi ] && { _wait_gone b "$port" || return 1; }
	sed -e 's/\x1b\[[0-9;]*m//g' "$cli" | grep -E 'Summary|Valid|percentile 50|xvi-run|ERROR' |
		sed 's/^/# /' >&2
	[ $rc -eq 0 ] || fail "sockperf $mode exit $rc: $(tail -c 300 "$cli")" || return
	if [ "$mode" = ping-pong ]; then
		n=$(_sockperf_received "$cli")
		[ "${n:-0}" -gt 0 ] || fail "sockperf ping-pong got no replies" || return
	fi
	# The server's replies went out through its endpoint if the client
	# got them and b's kernel sent nothing.
	if [ "$srun" = xvi ]; then
		_ran_over_xvi b "$bb" "${srx:-0}" "${n:-0}" "$([ "$mode" = ping-pong ] && echo both ||
			echo rx)" || return 1
	fi
	if [ "$crun" = xvi ]; then
		_stats_over_xvi a "$cstats" "$ba" "$([ "$mode" = ping-pong ] && echo both || echo tx)" ||
			return 1
	fi
	return 0
}

case_sp_pp_srv() { _sockperf xvi kernel ping-pong 11201 16; }
case_sp_pp_cli() { _sockperf kernel xvi ping-pong 11202 16; }
case_sp_pp_both() { _sockperf xvi xvi ping-pong 11203 16; }
case_sp_tp_cli() { _sockperf kernel xvi throughput 11204 1472; }
case_sp_tp_both() { _sockperf xvi xvi throughput 11205 1472; }

# socat: a file relayed datagram by datagram, byte-exact, both ends under xvi-run.
case_socat() {
	local in=$T_TMP/socat.in out=$T_TMP/socat.out ss=$T_TMP/socat-l.stats cs=$T_TMP/socat-s.stats
	local ba bb lpid rc
	head -c 300000 /dev/urandom >"$in"
	ba=$(_udp_counters a)
	bb=$(_udp_counters b)
	# -b 1400: each read of the file is one datagram under the MTU.
	t_x -T 60 b "$XVIRUN" --stats "$ss" socat -u -T 3 UDP4-RECV:9300,bind=198.18.0.2 \
		"OPEN:$out,creat,trunc" 2>"$T_TMP/socat-l.err" &
	lpid=$!
	t_wait_endpoint_port b 9300 || { t_stop "$lpid"; fail "socat listener never came up:" \
		"$(head -c 300 "$T_TMP/socat-l.err")"; return 1; }
	t_x -T 60 a "$XVIRUN" --stats "$cs" socat -u -b 1400 "OPEN:$in" \
		UDP4-SENDTO:198.18.0.2:9300 2>"$T_TMP/socat-s.err"
	rc=$?
	wait "$lpid"
	[ $rc -eq 0 ] || fail "socat sender exit $rc: $(head -c 300 "$T_TMP/socat-s.err")" || return
	cmp -s "$in" "$out" || fail "relayed file differs: $(stat -c %s "$out" 2>/dev/null) of" \
		"$(stat -c %s "$in") bytes" || return
	_stats_over_xvi a "$cs" "$ba" tx && _stats_over_xvi b "$ss" "$bb" rx
}

# memcached -U under xvi-run on b (one worker thread: an endpoint is
# single-threaded), set and get over UDP from a kernel client on a.
case_memcached() {
	local bb pid err ra
	command -v memcached >/dev/null || { fail "memcached not installed (make deps)"; return 1; }
	bb=$(_udp_counters b)
	t_x -T 60 b "$XVIRUN" memcached -u root -U 9500 -p 0 -l 198.18.0.2 -t 1 \
		>"$T_TMP/mc.out" 2>&1 &
	pid=$!
	t_wait_endpoint_port b 9500 || { t_stop "$pid"; fail "memcached never came up:" \
		"$(head -c 300 "$T_TMP/mc.out")"; return 1; }
	err=$(t_x -T 30 a "$PY" -c '
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(5)
def ask(rid, cmd):
    s.sendto(struct.pack("!HHHH", rid, 0, 1, 0) + cmd, ("198.18.0.2", 9500))
    d, _ = s.recvfrom(65535)
    return d[8:]
val = b"xvi-%d" % (12345,)
r = ask(1, b"set k1 0 0 %d\r\n%s\r\n" % (len(val), val))
if r != b"STORED\r\n": sys.exit("set answered %r" % r)
for i in range(100):
    r = ask(2 + i, b"get k1\r\n")
    want = b"VALUE k1 0 %d\r\n%s\r\nEND\r\n" % (len(val), val)
    if r != want: sys.exit("get %d answered %r" % (i, r))
print("ok")
' 2>&1)
	ra=$(_status_rx b 9500)
	t_stop "$pid"
	_wait_gone b 9500 || return 1
	[ "$err" = ok ] || fail "memcached over UDP: $err; server: $(head -c 300 "$T_TMP/mc.out")" ||
		return
	# 101 requests in, 101 answers out (the client checked each).
	_ran_over_xvi b "$bb" "${ra:-0}" 101 both
}

# _dnsperf_stat OUT NAME: the number after "NAME:" in dnsperf's output
# ("Queries sent", "Queries completed", "Queries lost"), or the NOERROR
# count for NAME "NOERROR"; empty if it printed none.
_dnsperf_stat() {
	case $2 in
	NOERROR) sed -n 's/.*Response codes:.*NOERROR \([0-9]*\).*/\1/p' "$1" | head -1 ;;
	*) sed -n "s/^ *$2: *\([0-9]*\).*/\1/p" "$1" | head -1 ;;
	esac
}

# dnsmasq under xvi-run on b answers from a hosts file of 300 names
# (nothing upstream: a name it does not hold gets REFUSED); a plain
# dnsperf on a sends each name once.  --bind-interfaces with
# --listen-address: one UDP socket bound to b's lab address, read with a
# plain recvmsg (dnsmasq asks for IP_PKTINFO only on a wildcard socket),
# answered from the same socket.
case_dnsperf() {
	local hosts=$T_TMP/dns.hosts qf=$T_TMP/dns.queries out=$T_TMP/dnsperf.out
	local port=9553 n=300 i bb pid rc ra sent got lost ok err
	command -v dnsmasq >/dev/null && command -v dnsperf >/dev/null ||
		{ fail "dnsmasq or dnsperf not installed (make deps)"; return 1; }
	: >"$hosts" && : >"$qf"
	for i in $(seq "$n"); do
		echo "198.19.$((i / 250)).$((i % 250 + 1)) h$i.xvi.test" >>"$hosts"
		echo "h$i.xvi.test A" >>"$qf"
	done
	bb=$(_udp_counters b)
	t_x -T 60 b "$XVIRUN" dnsmasq -k --conf-file=/dev/null --pid-file= --user=root \
		--no-resolv --no-hosts --addn-hosts="$hosts" --port="$port" \
		--bind-interfaces --listen-address=198.18.0.2 >"$T_TMP/dnsmasq.out" 2>&1 &
	pid=$!
	t_wait_endpoint_port b "$port" || { t_stop "$pid"; fail "dnsmasq never came up on an" \
		"endpoint: $(head -c 300 "$T_TMP/dnsmasq.out")"; return 1; }
	t_x -T 60 a dnsperf -s 198.18.0.2 -p "$port" -d "$qf" -n 1 -l 20 -t 2 >"$out" 2>&1
	rc=$?
	# Ten answers' addresses, read back by a kernel client on a.
	err=$(t_x -T 30 a "$PY" -c '
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(5)
for i in range(1, 301, 30):
    name = b"".join(bytes([len(p)]) + p for p in (b"h%d.xvi.test" % i).split(b"."))
    s.sendto(struct.pack("!6H", i, 0x100, 1, 0, 0, 0) + name + b"\0\0\1\0\1",
             ("198.18.0.2", int(sys.argv[1])))
    d = s.recv(512)
    want = socket.inet_aton("198.19.%d.%d" % (i // 250, i % 250 + 1))
    if d[:2] != struct.pack("!H", i) or d[3] & 15 or d[-4:] != want:
        sys.exit("h%d: answered %r" % (i, d))
print("ok")
' "$port" 2>&1)
	ra=$(_status_rx b "$port")
	t_stop "$pid"
	_wait_gone b "$port" || return 1
	grep -E 'Queries|Response codes|Run time|Latency' "$out" | sed 's/^/# /' >&2
	[ $rc -eq 0 ] || fail "dnsperf exit $rc: $(tail -c 300 "$out")" || return
	sent=$(_dnsperf_stat "$out" "Queries sent")
	got=$(_dnsperf_stat "$out" "Queries completed")
	lost=$(_dnsperf_stat "$out" "Queries lost")
	ok=$(_dnsperf_stat "$out" NOERROR)
	[ "${sent:-0}" -eq "$n" ] && [ "${got:-0}" -eq "$n" ] && [ "${lost:-1}" -eq 0 ] &&
		[ "${ok:-0}" -eq "$n" ] || fail "dnsperf: sent ${sent:-?} completed ${got:-?}" \
		"lost ${lost:-?} NOERROR ${ok:-?} of $n; dnsmasq: $(head -c 300 "$T_TMP/dnsmasq.out")" ||
		return
	[ "$err" = ok ] || fail "answers: $err" || return
	# n + 10 queries in, as many answers out (dnsperf and the client saw them).
	_ran_over_xvi b "$bb" "${ra:-0}" $((n + 10)) both
}

# _iperf3_sum JSON KEY: end.sum.KEY of iperf3 --json's output, or nothing.
_iperf3_sum() {
	"$PY" -c '
import json, sys
try:
    print(json.load(open(sys.argv[1]))["end"]["sum"][sys.argv[2]])
except Exception:
    pass
' "$1" "$2"
}

# iperf3 -u, xvi-run on both nodes: the control connection stays on kernel
# TCP, the data goes over the endpoints.  Its UDP server connects the
# listening socket to the client and binds a second socket to the same
# port (SO_REUSEADDR) for the next one, which the kernel allows: the two
# then share one endpoint (preload/share.c), the connected one taking its
# peer's datagrams.  Two streams (-P 2): the second client socket's first
# datagram reaches the new socket while the first stream's data flows to
# the connected one.  -1: the server exits after the test and writes its
# --stats.  _iperf3 FAMILY PORT ADDR: over IPv4 or IPv6 (4 or 6), the
# server bound to b's ADDR.
_iperf3() {
	local fam=$1 port=$2 addr=$3 ss=$T_TMP/ip3-s-$2.stats cs=$T_TMP/ip3-c-$2.stats
	local out=$T_TMP/ip3-c-$2.json ba bb spid rc pk lost lp bps
	rm -f "$ss" "$cs"
	ba=$(_udp_counters a)
	bb=$(_udp_counters b)
	t_x -T 60 b "$XVIRUN" --stats "$ss" iperf3 -s -1 -B "$addr" -p "$port" \
		>"$T_TMP/ip3-s-$port.out" 2>&1 &
	spid=$!
	t_wait_tcp_port b "$port" || { t_stop "$spid"; fail "iperf3 server never came up:" \
		"$(head -c 300 "$T_TMP/ip3-s-$port.out")"; return 1; }
	t_x -T 60 a "$XVIRUN" --stats "$cs" iperf3 "-$fam" -u -c "$addr" -p "$port" -b 10M \
		-l 1400 -t 2 -P 2 --json >"$out" 2>"$T_TMP/ip3-c-$port.err"
	rc=$?
	wait "$spid"
	grep -iE 'error|Address|xvi-run' "$T_TMP/ip3-s-$port.out" "$T_TMP/ip3-c-$port.err" | head -5 |
		sed 's/^/# /' >&2
	[ $rc -eq 0 ] || fail "iperf3 -u client exit $rc: $(head -c 300 "$out")" \
		"server: $(tail -c 300 "$T_TMP/ip3-s-$port.out")" || return
	pk=$(_iperf3_sum "$out" packets)
	lost=$(_iperf3_sum "$out" lost_packets)
	lp=$(_iperf3_sum "$out" lost_percent)
	bps=$(_iperf3_sum "$out" bits_per_second)
	t_log "iperf3 -u: packets $pk lost $lost ($lp %) ${bps} bit/s (asked 2 x 10 Mbit/s)"
	# Sane: datagrams went, no more than asked for, most of them arrived.
	[ "${pk:-0}" -gt 0 ] && [ -n "$lost" ] && [ "$lost" -ge 0 ] ||
		fail "iperf3 reported no datagrams (packets '${pk}', lost '${lost}')" || return
	"$PY" -c 'import sys; b = float(sys.argv[1]); p = float(sys.argv[2])
sys.exit(0 if 0 < b <= 20e6 * 1.1 and 0 <= p <= 10 else 1)' "${bps:-0}" "${lp:-100}" ||
		fail "iperf3 -u numbers not sane: ${bps:-?} bit/s for 20 Mbit/s, ${lp:-?} % lost" ||
		return
	# Every datagram iperf3 counted arrived through b's endpoint.
	[ "$(_stats_sum "$ss" rx_dgrams)" -ge $((pk - lost)) ] ||
		fail "b's endpoints received $(_stats_sum "$ss" rx_dgrams) datagrams," \
		"iperf3 counted $((pk - lost))" || return
	_stats_over_xvi a "$cs" "$ba" both && _stats_over_xvi b "$ss" "$bb" both
}

case_iperf3() { _iperf3 4 5301 198.18.0.2; }
case_iperf3_6() { _iperf3 6 5311 2001:2::2; }

# socat over IPv6: the same relay with UDP6 addresses (the listener bound to
# b's address: one bound to :: would be dual-stack and stay on the kernel).
case_socat6() {
	local in=$T_TMP/socat6.in out=$T_TMP/socat6.out ss=$T_TMP/socat6-l.stats
	local cs=$T_TMP/socat6-s.stats ba bb lpid rc
	head -c 300000 /dev/urandom >"$in"
	ba=$(_udp_counters a)
	bb=$(_udp_counters b)
	t_x -T 60 b "$XVIRUN" --stats "$ss" socat -u -T 3 "UDP6-RECV:9310,bind=[2001:2::2]" \
		"OPEN:$out,creat,trunc" 2>"$T_TMP/socat6-l.err" &
	lpid=$!
	t_wait_endpoint_port b 9310 || { t_stop "$lpid"; fail "socat listener never came up:" \
		"$(head -c 300 "$T_TMP/socat6-l.err")"; return 1; }
	t_x -T 60 a "$XVIRUN" --stats "$cs" socat -u -b 1400 "OPEN:$in" \
		"UDP6-SENDTO:[2001:2::2]:9310" 2>"$T_TMP/socat6-s.err"
	rc=$?
	wait "$lpid"
	cat "$T_TMP/socat6-l.err" "$T_TMP/socat6-s.err" | head -5 | sed 's/^/# /' >&2
	[ $rc -eq 0 ] || fail "socat sender exit $rc: $(head -c 300 "$T_TMP/socat6-s.err")" || return
	cmp -s "$in" "$out" || fail "relayed file differs: $(stat -c %s "$out" 2>/dev/null) of" \
		"$(stat -c %s "$in") bytes" || return
	grep -q 'local=\[2001:2::2\]:9310' "$ss" ||
		fail "b's endpoint is not [2001:2::2]:9310: $(head -c 300 "$ss")" || return
	_stats_over_xvi a "$cs" "$ba" tx && _stats_over_xvi b "$ss" "$bb" rx
}

# _udp6_sem PORT [xvi]: tests/lab/helpers/udp6_sem.py on b, on kernel
# sockets or under xvi-run, against a kernel echo server on a.
_udp6_sem() {
	local port=$1 run=${2:-kernel} out=$T_TMP/udp6-sem-$1.out stats=$T_TMP/udp6-sem-$1.stats
	local before rc pre=()
	[ "$run" = xvi ] && pre=("$XVIRUN" --stats "$stats")
	_echo_up $((port + 5)) 6 || return 1
	before=$(_udp_counters b)
	t_x -T 60 b "${pre[@]}" "$PY" "$T_HELPERS/udp6_sem.py" "$LAB_IFACE" 2001:2::2 \
		198.18.0.2 "$port" 2001:2::1 198.18.0.1 $((port + 5)) >"$out" 2>&1
	rc=$?
	t_stop "$ECHO_PID"
	sed 's/^/# /' "$out" >&2
	[ $rc -eq 0 ] || fail "exit $rc: $(grep -m1 -E 'FAIL|stays on|Error' "$out")" || return
	grep -q "^all ok" "$out" || fail "the checks did not all run" || return
	[ "$run" = xvi ] || return 0
	# Four sockets: [2001:2::2], [::] with IPV6_V6ONLY, an autobound one, one IPv4.
	[ "$(grep -c '^endpoint' "$stats")" -eq 4 ] ||
		fail "$(grep -c '^endpoint' "$stats") endpoints, want 4: $(head -c 400 "$stats")" ||
		return
	_stats_over_xvi b "$stats" "$before" both
}

case_udp6_sem_kernel() { _udp6_sem 9320; }
case_udp6_sem() { _udp6_sem 9330 xvi; }

# A dual-stack socket (bound to :: with IPV6_V6ONLY off, Linux's default)
# would take IPv4 datagrams too: it stays on the kernel, logged and counted,
# and gets an IPv4 datagram as ::ffff:a.b.c.d.
case_udp6_dualstack() {
	local err
	_echo_up 9345 6 || return 1
	err=$(t_x -T 30 b "$XVIRUN" "$PY" -c '
import socket
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s.settimeout(5)
s.bind(("::", 9340))
s.sendto(b"v4", ("::ffff:198.18.0.1", 9345))
d, a = s.recvfrom(64)
assert d == b"v4" and a[0] == "::ffff:198.18.0.1", (d, a)
' 2>&1)
	local rc=$?
	t_stop "$ECHO_PID"
	[ $rc -eq 0 ] || fail "program failed on the dual-stack socket: $err" || return
	[[ $err == *"stays on the kernel: IPv6 socket that takes IPv4 too (dual-stack)"*"IPV6_V6ONLY"* ]] ||
		fail "no fallback message naming the reason: '${err:0:300}'" || return
	[[ $err == *"0 UDP socket(s) on xvi, 1 on the kernel"* ]] ||
		fail "fallback not counted at exit: '${err:0:300}'"
}

# Loud fallback: a socket the datapath cannot take says so, with its reason.
case_fallback() {
	local err
	err=$(t_x -T 30 b "$XVIRUN" "$PY" -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 0))
s.sendto(b"x", s.getsockname())
assert s.recv(10) == b"x"
' 2>&1) || fail "program failed on the fallback socket: $err" || return
	[[ $err == *"stays on the kernel"*"no xdp-vi datapath"*"lo"* ]] ||
		fail "no fallback message naming the reason: '${err:0:300}'" || return
	[[ $err == *"0 UDP socket(s) on xvi, 1 on the kernel"* ]] ||
		fail "fallback not counted at exit: '${err:0:300}'"
}

# exec right after closes: they finish first, so the new program (same
# pid) binds the closed port again, on xvi.  The closes of 12 other sockets
# just before keep the reapers busy, so that the port's is still queued.
case_exec() {
	local err
	cat >"$T_TMP/exec_rebind.py" <<'PYEOF'
import os, socket, sys
P = 9241
if len(sys.argv) == 1:
    a = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    a.bind(("198.18.0.2", P))
    crowd = []
    for j in range(12):
        c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        c.bind(("198.18.0.2", P + 1 + j))
        crowd.append(c)
    for c in crowd:
        c.close()
    a.close()
    os.execv(sys.executable, [sys.executable, sys.argv[0], "after-exec"])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("198.18.0.2", P))
print("bound again after exec")
PYEOF
	err=$(t_x -T 30 b "$XVIRUN" -v "$PY" "$T_TMP/exec_rebind.py" 2>&1) ||
		fail "the program failed: ${err:0:600}" || return
	[[ $err == *"bound again after exec"* ]] ||
		fail "no bind after exec: '${err:0:300}'" || return
	[[ $(grep -c "on xvi: 198.18.0.2:9241 " <<<"$err") == 2 ]] ||
		fail "the port was not on xvi before and after exec: '${err:0:600}'"
}

# --check: says what would be accelerated, traffic stays on the kernel.
case_check() {
	local err
	err=$(t_x -T 30 b "$XVIRUN" --check "$PY" -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("198.18.0.2", 9400))
t = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
t.bind(("127.0.0.1", 0))
' 2>&1) || fail "program failed under --check: $err" || return
	[[ $err == *"would be accelerated: 198.18.0.2:9400 on $LAB_IFACE"* ]] ||
		fail "--check did not report the accelerable socket: '${err:0:300}'" || return
	[[ $err == *"stays on the kernel"*"lo"* ]] ||
		fail "--check did not report the socket on lo: '${err:0:300}'" || return
	# The preflight: the lab interface passes, lo says why it cannot.
	[[ $err == *"preflight $LAB_IFACE: datapath attached"*"1 RX queue"* ]] ||
		fail "no preflight line for $LAB_IFACE: '${err:0:300}'" || return
	err=$(t_x -T 30 b "$XVIRUN" -v --iface lo true 2>&1) ||
		fail "xvi-run -v --iface lo true failed: $err" || return
	[[ $err == *"preflight lo: cannot be accelerated: no xdp-vi datapath attached"* ]] &&
		[[ $err == *"preflight lo: MTU 65536 too large for one 2048-byte frame"* ]] ||
		fail "the preflight did not say why lo cannot be accelerated: '${err:0:300}'"
}

# shellcheck disable=SC2034 # read by t_main
CASES=(
	sem_kernel	case_sem_kernel	"preload_sem on kernel sockets (b) against an echo server (a)"
	sem_xvi		case_sem_xvi	"preload_sem under xvi-run: epoll/poll/select mixed and nested, dup2, fork, EINTR, FIONREAD, a port bound again at once after its close"
	sem_batch	case_sem_batch	"preload_sem under xvi-run --tx-batch 8: no datagram left unsent before a wait"
	sem_protected	case_sem_protected	"preload_sem as a plain uid: protected endpoint through xdp-vid"
	sp_pp_srv	case_sp_pp_srv	"sockperf server under xvi-run (b), plain sockperf ping-pong (a)"
	sp_pp_cli	case_sp_pp_cli	"plain sockperf server (b), sockperf ping-pong under xvi-run (a)"
	sp_pp_both	case_sp_pp_both	"sockperf ping-pong, xvi-run on both nodes"
	sp_tp_cli	case_sp_tp_cli	"sockperf throughput 1472 B under xvi-run (a) to a plain server (b)"
	sp_tp_both	case_sp_tp_both	"sockperf throughput 1472 B, xvi-run on both nodes"
	socat		case_socat	"socat UDP4 file relay a -> b, both under xvi-run, byte-exact"
	socat6		case_socat6	"socat UDP6 file relay a -> b, both under xvi-run, byte-exact"
	udp6_sem_kernel	case_udp6_sem_kernel	"IPv6 socket semantics (udp6_sem.py) on kernel sockets (b)"
	udp6_sem	case_udp6_sem	"IPv6 socket semantics under xvi-run (b): names, cmsgs, PKTINFO sends, V6ONLY"
	udp6_dualstack	case_udp6_dualstack	"a dual-stack IPv6 socket stays on the kernel, logged and counted"
	memcached	case_memcached	"memcached -U under xvi-run (b): set and 100 gets over UDP from a"
	dnsperf		case_dnsperf	"dnsmasq under xvi-run (b): 300 names from a hosts file, dnsperf (a)"
	iperf3		case_iperf3	"iperf3 -u, xvi-run on both nodes: data over xvi, control over kernel TCP"
	iperf3_6	case_iperf3_6	"iperf3 -6 -u, xvi-run on both nodes: two IPv6 sockets sharing the server's port"
	fallback	case_fallback	"a socket on lo stays on the kernel, logged with its reason and counted"
	exec		case_exec	"a program under xvi-run closes sockets and execs at once; the new program binds a closed port again, on xvi"
	check		case_check	"xvi-run --check reports the accelerable socket and the one on lo; the preflight"
)

t_main "$@"
