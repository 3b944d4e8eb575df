#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# preload_streams.sh: unmodified TCP programs under `xvi-run --streams` on
# the two-node lab, datapath on both nodes.  A row that runs both ends
# under xvi-run checks that the connection went over an xvi stream: the
# client's --stats show the connect over xvi and the bytes through it, the
# stream context's segments and endpoint frames moved, and neither node's
# kernel TCP opened a connection (/proc/net/snmp, Tcp ActiveOpens on the
# client, PassiveOpens on the server).  The fallback rows check the other
# way round: the kernel's counters moved.

. "$(dirname "$0")/_tap.sh"
# shellcheck source=tests/lab/_streams.sh
. "$(dirname "$0")/_streams.sh"

XVIRUN=$T_BIN/xvi-run
SIZE=$((4 * 1024 * 1024 + 333))

t_setup() {
	t_need "$XDPVI" "$XVIRUN" "$T_B/lib/libxvi-preload.so" "$(command -v curl)" "$(command -v iperf3)" \
		"$(command -v sockperf)" || return 1
	t_lab_up ps || return 1
	t_attach a && t_attach b
}

# An HTTP server on b:PORT serving $T_TMP/www, under xvi-run --streams
# when $1 = xvi: python3 -m http.server (threads, poll), or with $3 = aio
# tests/lab/helpers/aio_httpd.py (asyncio: epoll).  Bound to $SRV_ADDR
# (default b's IPv4 address).  Sets SRV_PID.
_http_up() {
	local mode=$1 port=$2 pre=() srv
	mkdir -p "$T_TMP/www"
	[ -s "$T_TMP/www/file" ] || head -c "$SIZE" /dev/urandom >"$T_TMP/www/file"
	[ "$mode" = xvi ] && pre=("$XVIRUN" --streams -v)
	srv=("$PY" -m http.server "$port" --bind "${SRV_ADDR:-198.18.0.2}" --directory "$T_TMP/www")
	[ "${3:-}" = aio ] && srv=("$PY" "$T_HELPERS/aio_httpd.py" "$T_TMP/www" \
		"${SRV_ADDR:-198.18.0.2}" "$port")
	t_x -T 120 b "${pre[@]}" "${srv[@]}" >"$T_TMP/srv-$port.out" 2>"$T_TMP/srv-$port.err" &
	SRV_PID=$!
	_srv_ready "$mode" "$port" "$SRV_PID" "HTTP server"
}

# _curl MODE PORT OUT: curl on a (under xvi-run --streams for MODE xvi),
# byte-exact download of the file from $URL_HOST (default b's IPv4 address).
_curl() {
	local mode=$1 port=$2 out=$3 pre=() rc
	rm -f "$out" "$T_TMP/curl.stats"
	[ "$mode" = xvi ] && pre=("$XVIRUN" --streams ${STREAM_MS:+--stream-timeout "$STREAM_MS"} \
		-v --stats "$T_TMP/curl.stats")
	t_x -T 60 a "${pre[@]}" curl -gsS --max-time 50 -o "$out" \
		"http://${URL_HOST:-198.18.0.2}:$port/file" 2>"$T_TMP/curl.err"
	rc=$?
	sed 's/^/# curl: /' "$T_TMP/curl.err" >&2
	[ $rc -eq 0 ] || { fail "curl exit $rc: $(tail -c 300 "$T_TMP/curl.err")"; return 1; }
	cmp -s "$T_TMP/www/file" "$out" || { fail "download differs: $(stat -c %s "$out" \
		2>/dev/null) of $SIZE bytes"; return 1; }
}

# _fetch SERVER CLIENT PORT [aio]: the HTTP server on b and curl on a, each
# under xvi-run --streams when its mode is xvi; sets OA/NA (node a's kernel
# TCP opens before and after) and OB/NB (node b's).
_fetch() {
	_http_up "$1" "$3" "${4:-}" || return
	OA=$(_tcp_opens a)
	OB=$(_tcp_opens b)
	_curl "$2" "$3" "$T_TMP/dl-$3" || { t_stop "$SRV_PID"; return 1; }
	NA=$(_tcp_opens a)
	NB=$(_tcp_opens b)
	t_stop "$SRV_PID"
}

# curl and the HTTP server both under xvi-run: over an xvi stream.  The
# server answers on a thread of its own (ThreadingHTTPServer), so its
# contexts switch to keeping their fds ready between sleeps.
case_curl_xvi() {
	_curl_over_xvi 8080 || return
	grep -q "a second thread uses streams" "$T_TMP/srv-8080.err" ||
		fail "the threaded server's contexts did not switch to staying armed"
}

# A client whose event loop nests: it sleeps in poll() on an epoll set's fd
# and takes the set's events with epoll_wait(..., 0) (GLib, sd-event in
# another loop).  No wait of the stream mode holds its stream, so the
# contexts must be armed before that poll sleeps, or the set's fd stops
# waking it once the context has pumped for long without a sleep.
case_nested_epoll() {
	local port=8090 out=$T_TMP/nested.out big=$T_TMP/www/big rc
	# 16 MiB: some 11,000 segments, far past the pumps after which an
	# unarmed context leaves its socket out of its epoll set (2,048).
	mkdir -p "$T_TMP/www"
	[ -s "$big" ] || head -c $((16 * 1024 * 1024)) /dev/urandom >"$big"
	_http_up xvi "$port" || return
	OA=$(_tcp_opens a)
	rm -f "$out" "$T_TMP/nested.stats"
	t_x -T 60 a "$XVIRUN" --streams -v --stats "$T_TMP/nested.stats" "$PY" \
		"$T_HELPERS/nested_epoll_get.py" 198.18.0.2 "$port" /big "$out" \
		2>"$T_TMP/nested.err"
	rc=$?
	NA=$(_tcp_opens a)
	t_stop "$SRV_PID"
	sed 's/^/# client: /' "$T_TMP/nested.err" >&2
	[ $rc -eq 0 ] || fail "nested_epoll_get.py exit $rc: $(grep -v '^xvi-run' \
		"$T_TMP/nested.err" | tail -c 300)" || return
	cmp -s "$big" "$out" || fail "download differs: $(stat -c %s "$out" \
		2>/dev/null) of $(stat -c %s "$big") bytes" || return
	# Still one thread: the contexts armed on sleep, or the case tests nothing.
	! grep -q "a second thread uses streams" "$T_TMP/nested.err" ||
		fail "the client's contexts stopped arming on sleep" || return
	# A python3 reached through a version manager's shim (pyenv) runs shell
	# processes first, each adding a line: match the one of the connect.
	grep -q "^streams .* connect_xvi=1 connect_tcp=0 " "$T_TMP/nested.stats" ||
		fail "the connect did not go over an xvi stream (--stats)" || return
	[ "${OA% *}" = "${NA% *}" ] || fail "node a: kernel TCP ActiveOpens $OA -> $NA"
}

# The same with an asyncio server (epoll), then a plain curl against it.
case_epoll() {
	_curl_over_xvi 8083 aio || return
	_fetch xvi kernel 8084 aio || return
	[ "${NB#* }" -gt "${OB#* }" ] || fail "node b: kernel TCP PassiveOpens did not move" \
		"($OB -> $NB)"
}

# _curl_over_xvi PORT [aio]: both under xvi-run, the download over a stream.
_curl_over_xvi() {
	local rx segs frames STREAM_MS=$XVI_MS
	_fetch xvi xvi "$1" "${2:-}" || return
	sed 's/^/# stats: /' "$T_TMP/curl.stats" >&2
	[ "$(_stat "$T_TMP/curl.stats" streams connect_xvi)" = 1 ] ||
		fail "curl's connect did not go over an xvi stream (--stats)" || return
	rx=$(_stat "$T_TMP/curl.stats" streams rx_bytes)
	[ "${rx:-0}" -ge "$SIZE" ] || fail "only ${rx:-0} bytes came through the stream" || return
	segs=$(_stat "$T_TMP/curl.stats" stream-ctx rx_segs)
	frames=$(_stat "$T_TMP/curl.stats" stream-ctx rx_frames)
	[ "${segs:-0}" -ge $((SIZE / 1500)) ] && [ "${frames:-0}" -ge "${segs:-0}" ] ||
		fail "stream context counters did not move: rx_segs=$segs rx_frames=$frames" ||
		return
	[ "${OA% *}" = "${NA% *}" ] || fail "node a: kernel TCP ActiveOpens $OA -> $NA:" \
		"a kernel connection was made" || return
	[ "${OB#* }" = "${NB#* }" ] || fail "node b: kernel TCP PassiveOpens $OB -> $NB:" \
		"a kernel connection was accepted" || return
	t_log "rx_bytes=$rx rx_segs=$segs rx_frames=$frames, kernel TCP opens unchanged"
}

# _dad_done NODE: wait until NODE's IPv6 addresses are past duplicate
# address detection.  The kernel sends the neighbour solicitation an
# endpoint's resolution asks for (no packet behind it) from the
# interface's link-local address, and none while that one is tentative
# (docs/KERNEL.md); the lab's link-local addresses start tentative.
_dad_done() {
	local i
	for i in $(seq "$T_WAIT_TENTHS"); do
		[ -z "$(t_x "$1" ip -6 -o addr show tentative)" ] && return 0
		sleep 0.1
	done
	fail "node $1: IPv6 addresses still tentative: $(t_x "$1" ip -6 -o addr show tentative)"
}

# IPv6: both under xvi-run, server bound to b's IPv6 address: the download
# over an IPv6 stream (the client's connect and the server's accept over
# xvi, kernel TCP opens unchanged: the Tcp counters of /proc/net/snmp count
# IPv6 connections too, which the plain curl after it shows).
case_curl_v6() {
	local SRV_ADDR=2001:2::2 URL_HOST='[2001:2::2]'
	_dad_done a && _dad_done b || return
	_curl_over_xvi 8085 || return
	grep -q "listens on \[2001:2::2\]:8085: kernel TCP and xvi streams" \
		"$T_TMP/srv-8085.err" || fail "no IPv6 xvi listener in the server's log" || return
	grep -q "accepted \[2001:2::1\]:[0-9]* over an xvi stream" "$T_TMP/srv-8085.err" ||
		fail "the server did not accept over an IPv6 stream" || return
	grep -q "connect \[2001:2::2\]:8085 over an xvi stream" "$T_TMP/curl.err" ||
		fail "curl's log has no IPv6 connect over an xvi stream" || return
	grep -q "local=\[2001:2::1\]:" "$T_TMP/curl.stats" ||
		fail "curl's stream context is not on an IPv6 endpoint" || return
	_fetch xvi kernel 8086 || return
	[ "${NB#* }" -gt "${OB#* }" ] || fail "node b: kernel TCP PassiveOpens did not move" \
		"for a plain IPv6 client ($OB -> $NB)"
}

# A dual-stack listener (http.server on ::, IPV6_V6ONLY off) under
# xvi-run: an IPv6 endpoint only.  curl under xvi-run over IPv6 comes over
# a stream; over IPv4 its stream try gets no answer and it comes through
# the kernel socket, which takes both families; to the v4-mapped form of
# b's IPv4 address it goes to the kernel without a try.
case_dualstack() {
	local SRV_ADDR=:: URL_HOST='[2001:2::2]'
	_dad_done a && _dad_done b || return
	_curl_over_xvi 8087 || return
	grep -q "listens on \[::\]:8087: kernel TCP and xvi streams (endpoint \[::\]:8087" \
		"$T_TMP/srv-8087.err" || fail "no IPv6 wildcard endpoint in the server's log:" \
		"$(grep listens "$T_TMP/srv-8087.err")" || return
	URL_HOST=198.18.0.2
	_fetch xvi xvi 8088 || return
	grep -q "over kernel TCP: xvi stream" "$T_TMP/curl.err" &&
		[ "$(_stat "$T_TMP/curl.stats" streams connect_tcp)" = 1 ] ||
		fail "curl's IPv4 connect did not fall back: $(head -1 "$T_TMP/curl.stats")" || return
	[ "${NB#* }" -gt "${OB#* }" ] || fail "node b: kernel TCP PassiveOpens did not move" \
		"for the IPv4 client ($OB -> $NB)" || return
	# An IPv4 peer named as ::ffff:a.b.c.d on an IPv6 socket: the kernel at once.
	URL_HOST='[::ffff:198.18.0.2]'
	_fetch xvi xvi 8089 || return
	grep -q "connect \[::ffff:198.18.0.2\]:8089 over kernel TCP: v4-mapped address" \
		"$T_TMP/curl.err" || fail "curl's v4-mapped connect was not sent to the kernel:" \
		"$(grep connect "$T_TMP/curl.err")" || return
	[ "$(_stat "$T_TMP/curl.stats" streams connect_tcp)" = 1 ] ||
		fail "the v4-mapped connect was not counted: $(head -1 "$T_TMP/curl.stats")"
}

# Plain curl against the server under xvi-run: its listener takes kernel TCP.
case_curl_kernel_client() {
	_fetch xvi kernel 8081 || return
	[ "${NB#* }" -gt "${OB#* }" ] || fail "node b: kernel TCP PassiveOpens did not move" \
		"($OB -> $NB)" || return
	grep -q "accepted a kernel TCP connection" "$T_TMP/srv-8081.err" ||
		fail "the server did not log its kernel TCP accept" || return
}

# curl under xvi-run against a plain server: no stream answers, TCP after the bound.
case_curl_fallback() {
	_fetch kernel xvi 8082 || return
	grep -q "over kernel TCP: xvi stream timeout" "$T_TMP/curl.err" ||
		fail "no fallback line in curl's log" || return
	[ "$(_stat "$T_TMP/curl.stats" streams connect_xvi)" = 0 ] &&
		[ "$(_stat "$T_TMP/curl.stats" streams connect_tcp)" = 1 ] ||
		fail "fallback not counted: $(head -1 "$T_TMP/curl.stats")" || return
	[ "${NA% *}" -gt "${OA% *}" ] || fail "node a: kernel TCP ActiveOpens did not move" \
		"($OA -> $NA)"
}

# iperf3 (TCP) under xvi-run --streams at both ends: control and data
# connections over xvi streams, 32 MiB, kernel TCP untouched.
case_iperf3() {
	local oa ob na nb spid rc sent tx rx ss=$T_TMP/ip-s.stats cs=$T_TMP/ip-c.stats
	rm -f "$ss" "$cs"
	t_x -T 120 b "$XVIRUN" --streams -v --stats "$ss" iperf3 -s -1 -p 5301 -B 198.18.0.2 \
		>"$T_TMP/ip-s.out" 2>"$T_TMP/ip-s.err" &
	spid=$!
	t_wait_endpoint_port b 5301 || { t_stop "$spid"; fail "iperf3 server never listened" \
		"on xvi: $(head -c 300 "$T_TMP/ip-s.err")"; return 1; }
	oa=$(_tcp_opens a)
	ob=$(_tcp_opens b)
	t_x -T 60 a "$XVIRUN" --streams --stream-timeout "$XVI_MS" -v --stats "$cs" \
		iperf3 -c 198.18.0.2 -p 5301 -n 32M -J >"$T_TMP/ip-c.json" 2>"$T_TMP/ip-c.err"
	rc=$?
	wait "$spid"
	na=$(_tcp_opens a)
	nb=$(_tcp_opens b)
	sed 's/^/# client: /' "$T_TMP/ip-c.err" "$cs" >&2
	sed 's/^/# server: /' "$T_TMP/ip-s.err" "$ss" >&2
	[ $rc -eq 0 ] || fail "iperf3 client exit $rc: $(tail -c 300 "$T_TMP/ip-c.json")" || return
	# The server stops reading at the end of the test (the client says so
	# on the control connection): it counts a little less than was sent.
	sent=$("$PY" -c 'import json, sys
j = json.load(open(sys.argv[1]))["end"]
print(j["sum_sent"]["bytes"], j["sum_received"]["bytes"],
      j["sum_received"]["bits_per_second"])' "$T_TMP/ip-c.json") ||
		fail "iperf3 JSON has no result" || return
	read -r tx rx _ <<<"$sent"
	[ "$tx" -ge $((32 * 1024 * 1024)) ] && [ "$rx" -ge $((31 * 1024 * 1024)) ] ||
		fail "iperf3 sent $tx bytes, received $rx" || return
	[ "$(_stat "$cs" streams connect_xvi)" = 2 ] && [ "$(_stat "$cs" streams connect_tcp)" = 0 ] ||
		fail "iperf3's connects not both over xvi: $(head -1 "$cs")" || return
	[ "$(_stat "$ss" streams accept_xvi)" = 2 ] ||
		fail "iperf3 server did not accept both over xvi: $(head -1 "$ss")" || return
	[ "$(_stat "$cs" streams tx_bytes)" -ge $((32 * 1024 * 1024)) ] ||
		fail "the data did not go through the stream: $(head -1 "$cs")" || return
	[ "${oa% *}" = "${na% *}" ] && [ "${ob#* }" = "${nb#* }" ] ||
		fail "kernel TCP opens moved: a $oa -> $na, b $ob -> $nb" || return
	t_log "iperf3 sent, received bytes, bits/s: $sent; kernel TCP opens unchanged"
}

# sockperf TCP ping-pong under xvi-run --streams at both ends: the server
# waits in epoll on non-blocking sockets (a feed file, -F epoll), the
# client in a blocking recv.  The messages went through the stream (both
# --stats byte counts), the connection over xvi, kernel TCP untouched.
case_sockperf() {
	local oa ob na nb spid rc n tx rx cs=$T_TMP/sp-c.stats port=5302
	rm -f "$cs"
	echo "T:198.18.0.2:$port" >"$T_TMP/sp.feed"
	t_x -T 60 b "$XVIRUN" --streams -v sockperf server -f "$T_TMP/sp.feed" -F epoll \
		--nonblocked >"$T_TMP/sp-s.out" 2>"$T_TMP/sp-s.err" &
	spid=$!
	t_wait_endpoint_port b "$port" || { t_stop "$spid"; fail "sockperf server never" \
		"listened on xvi: $(head -c 300 "$T_TMP/sp-s.err")"; return 1; }
	oa=$(_tcp_opens a)
	ob=$(_tcp_opens b)
	t_x -T 30 a "$XVIRUN" --streams --stream-timeout "$XVI_MS" -v --stats "$cs" \
		sockperf ping-pong --tcp -i 198.18.0.2 -p "$port" -t 1 -m 16 >"$T_TMP/sp-c.out" 2>&1
	rc=$?
	na=$(_tcp_opens a)
	nb=$(_tcp_opens b)
	t_stop "$spid"
	sed 's/^/# client: /' "$T_TMP/sp-c.out" >&2
	sed 's/^/# server: /' "$T_TMP/sp-s.err" >&2
	[ $rc -eq 0 ] || fail "sockperf client exit $rc: $(tail -c 300 "$T_TMP/sp-c.out")" || return
	n=$(sed -n 's/.*SentMessages=[0-9]*; ReceivedMessages=\([0-9]*\).*/\1/p' "$T_TMP/sp-c.out" |
		head -1)
	[ "${n:-0}" -gt 0 ] && grep -q 'percentile 50.000' "$T_TMP/sp-c.out" ||
		fail "no ping-pong result: $(tail -c 300 "$T_TMP/sp-c.out")" || return
	[ "$(_stat "$cs" streams connect_xvi)" = 1 ] && [ "$(_stat "$cs" streams connect_tcp)" = 0 ] ||
		fail "the client's connect did not go over xvi: $(head -1 "$cs")" || return
	grep -q "over an xvi stream on fd" "$T_TMP/sp-s.err" ||
		fail "the server did not accept over xvi" || return
	tx=$(_stat "$cs" streams tx_bytes)
	rx=$(_stat "$cs" streams rx_bytes)
	[ "${tx:-0}" -ge $((n * 16)) ] && [ "${rx:-0}" -ge $((n * 16)) ] ||
		fail "$n messages of 16 B, but the stream carried tx $tx rx $rx bytes" || return
	[ "${oa% *}" = "${na% *}" ] && [ "${ob#* }" = "${nb#* }" ] ||
		fail "kernel TCP opens moved: a $oa -> $na, b $ob -> $nb" || return
	t_log "$n round trips; stream tx_bytes=$tx rx_bytes=$rx; kernel TCP opens unchanged"
}

# A listener registered in an epoll set and taken out again, then a wait
# on that set with only a pipe in it (tests/lab/helpers/epoll_unreg.py on
# b, never accepting), while an xvi client's SYNs reach the listener's
# stream context (the client falls back to kernel TCP after the bound):
# the wait reports the pipe alone, no event of the context's marker.
case_epoll_unreg() {
	local port=5303 fifo=$T_TMP/unreg.fifo out=$T_TMP/unreg.out err=$T_TMP/unreg.err spid rc hrc
	rm -f "$fifo" "$out" "$err" "$T_TMP/unreg-c.err"
	mkfifo "$fifo"
	t_x -T 60 b "$XVIRUN" --streams -v "$PY" "$T_HELPERS/epoll_unreg.py" 198.18.0.2 "$port" \
		<"$fifo" >"$out" 2>"$err" &
	spid=$!
	exec 7>"$fifo"
	if ! t_wait_grep "$out" '^ready' || ! t_wait_endpoint_port b "$port"; then
		exec 7>&-
		t_stop "$spid"
		fail "the helper never waited: $(head -c 300 "$err")"
		return 1
	fi
	t_x -T 30 a "$XVIRUN" --streams -v "$PY" -c 'import socket, sys
socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10).close()' \
		198.18.0.2 "$port" 2>"$T_TMP/unreg-c.err"
	rc=$?
	(echo "done" >&7) 2>/dev/null	# the helper may have gone: SIGPIPE in the subshell only
	exec 7>&-
	wait "$spid"
	hrc=$?
	sed 's/^/# helper: /' "$err" >&2
	sed 's/^/# client: /' "$T_TMP/unreg-c.err" >&2
	[ $hrc -eq 0 ] || fail "helper exit $hrc: $(grep -v '^xvi-run' "$err" | tail -c 300)" ||
		return
	[ $rc -eq 0 ] || fail "the client's connect failed (exit $rc)" || return
	grep -q "over kernel TCP: xvi stream timeout" "$T_TMP/unreg-c.err" ||
		fail "the client's SYNs did not go over xvi unanswered" || return
}

# A forking server under xvi-run --streams (tests/lab/preload_fork.c on b:
# accept, fork, the parent closes its copy at once and accepts again) and
# its client under xvi-run --streams on a: an echo of 4 MiB through the
# first child with EOF each way, then 1 MiB each way around the second
# child's shutdown.  Both connections over xvi, both streams relayed to
# the children by the parent (relays=2), the bytes through the parent's
# streams, kernel TCP opens unchanged on both nodes.
case_fork() {
	local bin=$T_B/tests/preload_fork port=5304 spid rc src oa ob na nb
	local cs=$T_TMP/fork-c.stats ss=$T_TMP/fork-s.stats
	t_need "$bin" || return
	rm -f "$cs" "$ss"
	t_x -T 150 b "$XVIRUN" --streams -v --stats "$ss" "$bin" server 198.18.0.2 "$port" \
		>"$T_TMP/fork-s.out" 2>"$T_TMP/fork-s.err" &
	spid=$!
	_srv_ready xvi "$port" "$spid" "preload_fork server" || return
	oa=$(_tcp_opens a)
	ob=$(_tcp_opens b)
	t_x -T 130 a "$XVIRUN" --streams --stream-timeout "$XVI_MS" -v --stats "$cs" \
		"$bin" client 198.18.0.2 "$port" >"$T_TMP/fork-c.out" 2>"$T_TMP/fork-c.err"
	rc=$?
	wait "$spid"
	src=$?
	na=$(_tcp_opens a)
	nb=$(_tcp_opens b)
	sed 's/^/# client: /' "$T_TMP/fork-c.out" "$T_TMP/fork-c.err" >&2
	sed 's/^/# server: /' "$T_TMP/fork-s.out" "$T_TMP/fork-s.err" >&2
	[ $rc -eq 0 ] || fail "client exit $rc: $(grep FAIL "$T_TMP/fork-c.out")" || return
	[ $src -eq 0 ] || fail "server exit $src: $(grep FAIL "$T_TMP/fork-s.out")" || return
	[ "$(_stat "$cs" streams connect_xvi)" = 2 ] && [ "$(_stat "$cs" streams connect_tcp)" = 0 ] ||
		fail "the client's connects not both over xvi: $(head -1 "$cs")" || return
	[ "$(_stat "$ss" streams accept_xvi)" = 2 ] && [ "$(_stat "$ss" streams relays)" = 2 ] ||
		fail "the server did not accept both over xvi and relay both:" \
			"$(grep '^streams' "$ss")" || return
	[ "$(_stat "$ss" streams rx_bytes)" -ge $((5 << 20)) ] &&
		[ "$(_stat "$ss" streams tx_bytes)" -ge $((5 << 20)) ] ||
		fail "the children's bytes did not go through the parent's streams:" \
			"$(grep '^streams' "$ss")" || return
	[ "${oa% *}" = "${na% *}" ] && [ "${ob#* }" = "${nb#* }" ] ||
		fail "kernel TCP opens moved: a $oa -> $na, b $ob -> $nb" || return
	t_log "server: $(grep '^streams' "$ss" | cut -d' ' -f3-)"
}

# shellcheck disable=SC2034 # read by t_main
CASES=(
	curl_xvi	case_curl_xvi	"curl and python3 http.server both under xvi-run --streams: 4 MiB over an xvi stream, byte-exact"
	curl_v6		case_curl_v6	"curl -g and python3 http.server --bind 2001:2::2 both under xvi-run --streams: over an IPv6 xvi stream; plain curl over TCP"
	dualstack	case_dualstack	"http.server on :: (dual-stack) under xvi-run --streams: curl under xvi-run over an IPv6 stream, over IPv4 through the kernel socket"
	curl_kernel_client	case_curl_kernel_client	"plain curl against the http.server under xvi-run --streams: kernel TCP"
	curl_fallback	case_curl_fallback	"curl under xvi-run --streams against a plain http.server: falls back to TCP"
	epoll		case_epoll	"an asyncio (epoll) HTTP server under xvi-run --streams: curl under xvi-run over a stream, plain curl over TCP"
	nested_epoll	case_nested_epoll	"a client under xvi-run --streams that sleeps in poll() on its epoll set's fd and takes events with epoll_wait(0): 16 MiB over a stream, byte-exact"
	iperf3		case_iperf3	"iperf3 TCP under xvi-run --streams at both ends: 32 MiB over xvi streams"
	sockperf	case_sockperf	"sockperf TCP ping-pong under xvi-run --streams at both ends (server in epoll): over an xvi stream"
	fork		case_fork	"a forking server (accept, fork, the parent closes its copy) under xvi-run --streams: echo and EOF both ways through the children, over xvi"
	epoll_unreg	case_epoll_unreg	"a listener taken out of an epoll set under xvi-run --streams: a wait on the set with a pipe alone gets no marker event while xvi SYNs come"
)

t_main "$@"
