#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# tcpserver.sh: MemNet's TCP Server (docs/DESIGN.md, "TCP Server") on the
# three-node lab turned into a routed one: a (198.18.1.1) -- m -- b
# (198.18.2.2).  xvi-tcpserver runs on m with its tunnel endpoint on xvb;
# the application on b (xvi-mncat, xvi-httpd) reaches it over xvi streams
# and does no TCP itself: its sockets are m's kernel sockets, bound to m's
# address 198.18.1.254 that a's kernel TCP talks to.  A kernel peer on a
# (helpers/tcp_peer.py, curl) checks the semantics end to end.

. "$(dirname "$0")/_tap.sh"

XVIRELAY=$T_BIN/xvi-relay
TCPSRV=$T_BIN/xvi-tcpserver
MNCAT=$T_BIN/xvi-mncat
HTTPD=$T_BIN/xvi-httpd
PEER=$T_HELPERS/tcp_peer.py
A4=198.18.1.1 M4A=198.18.1.254 M4B=198.18.2.254 B4=198.18.2.2
SPORT=9000	# the tunnel's service on m
PORT=7400	# one per case: no TIME_WAIT from a case before
SRV_PID=

t_setup() {
	t_need "$XDPVI" "$XVIRELAY" "$TCPSRV" "$MNCAT" "$HTTPD" || return 1
	T_LAB=$(t_lab_name ts)
	lab_up --name "$T_LAB" --nodes 3 >&2 || { fail "lab_up --nodes 3 $T_LAB failed"; return 1; }
	lab_relay_stop --name "$T_LAB"
	t_x a ip addr flush dev "$LAB_IFACE" &&
	t_x b ip addr flush dev "$LAB_IFACE" &&
	t_x a ip addr add $A4/24 dev "$LAB_IFACE" &&
	t_x a ip route add default via $M4A &&
	t_x b ip addr add $B4/24 dev "$LAB_IFACE" &&
	t_x b ip route add default via $M4B &&
	t_x m ip link set xva promisc off &&
	t_x m ip link set xvb promisc off &&
	t_x m ip addr add $M4A/24 dev xva &&
	t_x m ip addr add $M4B/24 dev xvb &&
	t_x m sysctl -qw net.ipv4.ip_forward=1 || { fail "could not address the nodes"; return 1; }
	t_attach b || return 1
	local err
	err=$(t_xdpvi m attach xvb 2>&1 >/dev/null) ||
		{ fail "xdp-vi attach xvb on m: ${err//$'\n'/ }"; return 1; }
	_srv_start
}

_srv_start() {
	lab_exec --name "$T_LAB" -T 600 m -- "$TCPSRV" -v -i xvb -m "${1:-2000}" $M4B $SPORT \
		2>>"$T_TMP/srv.err" &
	SRV_PID=$!
	lab_at_exit "t_stop $SRV_PID"
	t_wait_endpoint_port m $SPORT || { fail "xvi-tcpserver never came up: $(tail -2 \
		"$T_TMP/srv.err")"; return 1; }
}

# The server process itself (lab_exec's child), for kill -9 and memory.
_srv_real_pid() { pgrep -P "$SRV_PID" -x xvi-tcpserver || pgrep -f "^$TCPSRV .*$M4B $SPORT" | head -1; }

_mncat() { t_x -T "${T_MNCAT_TMO:-60}" b "$MNCAT" -i "$LAB_IFACE" -s $M4B:$SPORT "$@"; }

_mkfile() { [ -s "$T_TMP/in$1" ] || head -c "$(($1 << 20))" /dev/urandom >"$T_TMP/in$1"; }
_sha() { sha256sum <"$1" | cut -d' ' -f1; }

_same() {	# WHAT FILE WANT
	[ "$(_sha "$2")" = "$(_sha "$3")" ] ||
		fail "$1 differs: $(stat -c %s "$2") of $(stat -c %s "$3") bytes, sha256 differs"
}

# Data both ways at once, byte-exact, each direction closed by its own FIN
# while the other still flows (half-close): b listens on m's port, a's
# kernel connects.  _both_ways [MNCAT-FLAGS]
case_both_ways() { _both_ways; }
_both_ways() {
	local port=$((PORT++)) rl rc
	_mkfile 8
	head -c 3000001 /dev/urandom >"$T_TMP/back"
	_mncat "$@" -l $port <"$T_TMP/back" >"$T_TMP/got_b" 2>"$T_TMP/l.err" &
	local lpid=$!
	t_wait_tcp_port m $port || { t_stop $lpid; fail "no listener on m:$port: $(cat "$T_TMP/l.err")"
		return 1; }
	t_x -T 60 a "$PY" "$PEER" connect $M4A $port --send "$T_TMP/in8" --out "$T_TMP/got_a" \
		>"$T_TMP/peer.out" 2>&1 && rc=0 || rc=$?
	wait $lpid && rl=0 || rl=$?
	[ $rc = 0 ] || { fail "kernel peer: $(cat "$T_TMP/peer.out")"; return 1; }
	[ $rl = 0 ] || { fail "xvi-mncat: $(tail -2 "$T_TMP/l.err")"; return 1; }
	_same "a -> b (8 MiB)" "$T_TMP/got_b" "$T_TMP/in8" || return 1
	_same "b -> a (3 MB)" "$T_TMP/got_a" "$T_TMP/back" || return 1
	t_log "8 MiB a -> b and 3 MB b -> a byte-exact, both closed by FIN ${*:-}"
}

# The other way: b's application connects out through m to a's kernel
# listener; each side sends a file and half-closes.
case_connect_out() { _connect_out; }
_connect_out() {
	local port=$((PORT++)) rc rl
	_mkfile 4
	head -c 999999 /dev/urandom >"$T_TMP/back"
	t_x -T 60 a "$PY" "$PEER" listen $port --send "$T_TMP/back" --out "$T_TMP/got_a" \
		>"$T_TMP/peer.out" 2>&1 &
	local ppid=$!
	t_wait_tcp_port a $port || { t_stop $ppid; fail "kernel listener on a never came up"; return 1; }
	_mncat "$@" $A4 $port <"$T_TMP/in4" >"$T_TMP/got_b" 2>"$T_TMP/c.err" && rc=0 || rc=$?
	wait $ppid && rl=0 || rl=$?
	[ $rc = 0 ] || { fail "xvi-mncat: $(tail -2 "$T_TMP/c.err")"; return 1; }
	[ $rl = 0 ] || { fail "kernel listener: $(cat "$T_TMP/peer.out")"; return 1; }
	_same "b -> a (4 MiB)" "$T_TMP/got_a" "$T_TMP/in4" || return 1
	_same "a -> b (999999 B)" "$T_TMP/got_b" "$T_TMP/back"
}

# _mncat_fails WANT ARGS...: xvi-mncat exits 1 naming errno WANT.
_mncat_fails() {
	local want=$1 rc
	shift
	_mncat "$@" </dev/null >/dev/null 2>"$T_TMP/c.err" && rc=0 || rc=$?
	[ $rc = 1 ] || { fail "xvi-mncat $* exit $rc, want 1 ($want): $(tail -2 "$T_TMP/c.err")"
		return 1; }
	grep -q "($want)" "$T_TMP/c.err" || { fail "xvi-mncat $*: not $want: $(tail -2 \
		"$T_TMP/c.err")"; return 1; }
	t_log "$(tail -1 "$T_TMP/c.err")"
}

case_refused() {
	_mncat_fails ECONNREFUSED $A4 $((PORT++))
}

# Listening on a port m's kernel already listens on (a plain kernel
# listener there): m's kernel's own EADDRINUSE.
case_in_use() {
	local port=$((PORT++)) lpid
	t_x -T 30 m "$PY" "$PEER" listen $port >/dev/null 2>&1 &
	lpid=$!
	t_wait_tcp_port m $port || { t_stop $lpid; fail "kernel listener on m never came up"; return 1; }
	_mncat_fails EADDRINUSE -l $port -R && { t_stop $lpid; return 0; }
	t_stop $lpid
	return 1
}

# The client's RST reaches the application on b as ECONNRESET (with
# --async: completes its pending receive job so).
case_rst_from_client() { _rst_from_client; }
_rst_from_client() {
	local port=$((PORT++)) lpid rl
	head -c 100000 /dev/urandom >"$T_TMP/some"
	_mncat "$@" -l $port -R >"$T_TMP/got_b" 2>"$T_TMP/l.err" </dev/null &
	lpid=$!
	t_wait_tcp_port m $port || { t_stop $lpid; fail "listener never came up"; return 1; }
	t_x -T 30 a "$PY" "$PEER" connect $M4A $port --send "$T_TMP/some" --rst \
		>"$T_TMP/peer.out" 2>&1 || { t_stop $lpid; fail "peer: $(cat "$T_TMP/peer.out")"
		return 1; }
	wait $lpid && rl=0 || rl=$?
	[ $rl = 1 ] && grep -q '(ECONNRESET)' "$T_TMP/l.err" ||
		fail "xvi-mncat exit $rl, want ECONNRESET: $(tail -2 "$T_TMP/l.err")"
}

# The application's abort reaches a's kernel as a RST (with --async: with
# a receive job pending, which the abort completes).
case_rst_from_host() { _rst_from_host; }
_rst_from_host() {
	local port=$((PORT++)) ppid rc
	head -c 100000 /dev/urandom >"$T_TMP/some"
	t_x -T 30 a "$PY" "$PEER" listen $port --out "$T_TMP/got_a" >"$T_TMP/peer.out" 2>&1 &
	ppid=$!
	t_wait_tcp_port a $port || { t_stop $ppid; fail "kernel listener never came up"; return 1; }
	_mncat "$@" --abort $A4 $port <"$T_TMP/some" >/dev/null 2>"$T_TMP/c.err" ||
		{ t_stop $ppid; fail "xvi-mncat: $(tail -2 "$T_TMP/c.err")"; return 1; }
	wait $ppid && rc=0 || rc=$?
	[ $rc = 1 ] && grep -qx ECONNRESET "$T_TMP/peer.out" ||
		fail "kernel peer exit $rc, want ECONNRESET: $(cat "$T_TMP/peer.out")"
}

# Many connections at once through one tunnel, each echoed byte-exact.
case_many() {
	local port=$((PORT++)) n=${T_TS_CONNS:-1000} lpid rc rl
	_mncat -l $port --echo --conns $n </dev/null >/dev/null 2>"$T_TMP/l.err" &
	lpid=$!
	t_wait_tcp_port m $port || { t_stop $lpid; fail "listener never came up"; return 1; }
	t_x -T 150 a "$PY" "$PEER" many $M4A $port $n >"$T_TMP/peer.out" 2>&1 && rc=0 || rc=$?
	wait $lpid && rl=0 || rl=$?
	[ $rc = 0 ] || { fail "kernel clients: $(cat "$T_TMP/peer.out")"; return 1; }
	[ $rl = 0 ] || { fail "echo on b: $(tail -2 "$T_TMP/l.err")"; return 1; }
	t_log "$n connections echoed: $(cat "$T_TMP/peer.out")"
}

# Wait (bounded) until no process matches PATTERN: b's queue is free for
# the next application (one process's endpoints own it at a time).
_gone() {
	local i
	for i in $(seq "$T_WAIT_TENTHS"); do
		pgrep -f -- "$1" >/dev/null || return 0
		sleep 0.1
	done
	fail "still running: $(pgrep -af -- "$1")"
}

_rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }
_rchar() { awk '/^rchar:/ { print $2 }' "/proc/$1/io" 2>/dev/null; }
_pid_of() { pgrep -f -- "$1" | head -1; }

# Wait (bounded) until process $1 has read something and then read nothing
# more for two looks in a row: it is held back.
_wait_stalled() {
	local prev=-1 cur i
	for i in $(seq "$T_WAIT_TENTHS"); do
		cur=$(_rchar "$1")
		[ -n "$cur" ] || return 1
		[ "$cur" -gt 0 ] && [ "$cur" = "$prev" ] && return 0
		prev=$cur
		sleep 0.3
	done
	return 1
}

# _send_to_holder PORT FILE HOLD: b's listener sends FILE to a's kernel
# client, which reads nothing until HOLD exists.  Sets LPID PPID MPID.
_send_to_holder() {
	rm -f "$3"
	_mncat -l "$1" <"$2" >/dev/null 2>"$T_TMP/l.err" &
	LPID=$!
	t_wait_tcp_port m "$1" || { t_stop $LPID; fail "listener never came up: $(tail -2 \
		"$T_TMP/l.err")"; return 1; }
	t_x -T 120 a "$PY" "$PEER" connect $M4A "$1" --hold "$3" --out "$T_TMP/got_a" \
		>"$T_TMP/peer.out" 2>&1 &
	PPID_=$!
	MPID=$(_pid_of "^$MNCAT -i $LAB_IFACE -s $M4B:$SPORT -l $1")
	[ -n "$MPID" ] || { t_stop $LPID; t_stop $PPID_; fail "no xvi-mncat process"; return 1; }
}

# A client that does not read: the kernels' buffers fill, then the
# per-socket credit holds b's sender back; neither node buffers the rest of
# the 64 MiB.  Then the client reads everything, byte-exact.
case_slow_reader() {
	local port=$((PORT++)) hold=$T_TMP/hold spid s0 s1 h1 read rl rc
	_mkfile 64
	spid=$(_srv_real_pid)
	s0=$(_rss_kb "$spid")
	_send_to_holder $port "$T_TMP/in64" "$hold" || return 1
	_wait_stalled "$MPID" || { t_stop $LPID; t_stop $PPID_; fail "the sender never stalled"
		return 1; }
	read=$(_rchar "$MPID") s1=$(_rss_kb "$spid") h1=$(_rss_kb "$MPID")
	t_log "held back after $((read >> 10)) KiB of 65536 read on b; xvi-tcpserver RSS ${s0} -> ${s1} KiB, xvi-mncat RSS ${h1} KiB"
	touch "$hold"
	wait $PPID_ && rc=0 || rc=$?
	wait $LPID && rl=0 || rl=$?
	[ "$read" -lt $((48 << 20)) ] || { fail "b read $read bytes of 64 MiB before the client read anything: nothing held it back"; return 1; }
	[ $((s1 - s0)) -lt 8192 ] || { fail "xvi-tcpserver grew by $((s1 - s0)) KiB for one slow client"; return 1; }
	[ $rc = 0 ] || { fail "kernel client: $(cat "$T_TMP/peer.out")"; return 1; }
	[ $rl = 0 ] || { fail "xvi-mncat: $(tail -2 "$T_TMP/l.err")"; return 1; }
	_same "64 MiB to a slow reader" "$T_TMP/got_a" "$T_TMP/in64"
}

# The host killed mid-transfer: the server sees its tunnel die within the
# keepalive bound and aborts its sockets (a's client gets ECONNRESET), and
# m keeps no socket of it.
case_host_killed() {
	local port=$((PORT++)) hold=$T_TMP/hold t0 rc left i
	_mkfile 64
	_send_to_holder $port "$T_TMP/in64" "$hold" || return 1
	_wait_stalled "$MPID" || { t_stop $LPID; t_stop $PPID_; fail "the transfer never started"
		return 1; }
	touch "$hold"
	kill -9 "$MPID"
	t0=$(date +%s%3N)
	wait $PPID_ && rc=0 || rc=$?
	wait $LPID
	t_log "host killed: a's client ended after $(($(date +%s%3N) - t0)) ms: $(cat "$T_TMP/peer.out")"
	[ $rc = 1 ] && grep -qx ECONNRESET "$T_TMP/peer.out" ||
		{ fail "a's client: exit $rc, $(cat "$T_TMP/peer.out"), want ECONNRESET"; return 1; }
	for i in $(seq "$T_WAIT_TENTHS"); do
		left=$(t_x m ss -H -tan "sport = :$port" | grep -vc LISTEN)
		[ "$left" = 0 ] && break
		sleep 0.1
	done
	[ "$left" = 0 ] || fail "m keeps $left sockets of the dead host: $(t_x m ss -tan "sport = :$port")"
}

# xvi-httpd on b over the TCP Server, fetched by an unmodified curl on a at
# m's address: two files over one kept-alive HTTP/1.1 connection and one
# over HTTP/1.0, byte-exact; a missing file is a 404; then wrk for 10 s
# without an error.  _web [XVI-HTTPD-FLAGS]
case_web() { _web; }
_web() {
	local port=$((PORT++)) hpid code
	mkdir -p "$T_TMP/www"
	head -c 1048577 /dev/urandom >"$T_TMP/www/big.bin"
	head -c 777 /dev/urandom >"$T_TMP/www/small.bin"
	t_x -T 120 b "$HTTPD" -i "$LAB_IFACE" -s $M4B:$SPORT "$@" -r "$T_TMP/www" $port \
		2>"$T_TMP/h.err" &
	hpid=$!
	t_wait_tcp_port m $port || { t_stop $hpid; fail "xvi-httpd never listened: $(cat "$T_TMP/h.err")"
		return 1; }
	rm -f "$T_TMP/c1" "$T_TMP/c2" "$T_TMP/c3"
	t_x -T 30 a curl -sS --fail -v "http://$M4A:$port/big.bin" -o "$T_TMP/c1" \
		"http://$M4A:$port/small.bin" -o "$T_TMP/c2" 2>"$T_TMP/curl.err" &&
	t_x -T 30 a curl -sS --fail --http1.0 "http://$M4A:$port/big.bin" -o "$T_TMP/c3" ||
		{ t_stop $hpid; fail "curl: $(grep -v '^[<>*{}]' "$T_TMP/curl.err" | tail -2)"; return 1; }
	code=$(t_x -T 30 a curl -s -o /dev/null -w '%{http_code}' "http://$M4A:$port/nosuch")
	# Printed before it served anything.
	[ $# = 0 ] || grep -q -- "${1#--}" "$T_TMP/h.err" ||
		{ t_stop $hpid; fail "xvi-httpd $* did not say it runs ${1#--}: $(cat "$T_TMP/h.err")"
		return 1; }
	_same "big.bin over HTTP/1.1" "$T_TMP/c1" "$T_TMP/www/big.bin" &&
	_same "small.bin, same connection" "$T_TMP/c2" "$T_TMP/www/small.bin" &&
	_same "big.bin over HTTP/1.0" "$T_TMP/c3" "$T_TMP/www/big.bin" ||
		{ t_stop $hpid; return 1; }
	grep -q 'Re-using existing connection' "$T_TMP/curl.err" ||
		{ t_stop $hpid; fail "curl did not keep the connection alive"; return 1; }
	[ "$code" = 404 ] || { t_stop $hpid; fail "missing file: HTTP $code, want 404"; return 1; }
	t_x -T 40 a wrk -t 1 -c 20 -d 10s "http://$M4A:$port/small.bin" >"$T_TMP/wrk.out" 2>&1 ||
		{ t_stop $hpid; fail "wrk: $(tail -3 "$T_TMP/wrk.out")"; return 1; }
	t_stop $hpid
	_gone "^$HTTPD " || return 1
	sed 's/^/# wrk: /' "$T_TMP/wrk.out" >&2
	grep -q 'Socket errors\|Non-2xx' "$T_TMP/wrk.out" &&
		{ fail "wrk saw errors: $(grep 'Socket errors\|Non-2xx' "$T_TMP/wrk.out")"; return 1; }
	grep -qE '^ +[0-9]+ requests in' "$T_TMP/wrk.out" ||
		fail "wrk completed no requests: $(tail -3 "$T_TMP/wrk.out")"
}

# The TCP Server killed -9 mid-transfer: the application on b gets an
# error (the tunnel's: ETIMEDOUT within the keepalive bound, or
# ECONNRESET), never a clean end.  The server is started again after.
case_server_killed() {
	local port=$((PORT++)) hold=$T_TMP/hold t0 rl
	_mkfile 64
	_send_to_holder $port "$T_TMP/in64" "$hold" || return 1
	_wait_stalled "$MPID" || { t_stop $LPID; t_stop $PPID_; fail "the transfer never started"
		return 1; }
	kill -9 "$(_srv_real_pid)"
	t0=$(date +%s%3N)
	wait $LPID && rl=0 || rl=$?
	t_log "server killed: b's application ended after $(($(date +%s%3N) - t0)) ms: $(tail -1 "$T_TMP/l.err")"
	touch "$hold"
	wait $PPID_
	wait $SRV_PID 2>/dev/null
	_srv_start || return 1
	[ $rl = 1 ] && grep -qE '\((ETIMEDOUT|ECONNRESET)\)' "$T_TMP/l.err" ||
		fail "xvi-mncat exit $rl, want ETIMEDOUT or ECONNRESET: $(tail -2 "$T_TMP/l.err")"
}

# Async jobs on remote sockets: the same cases with b's application moving
# its data only by async_send / async_recv jobs on registered memory
# (xvi-mncat --async), and xvi-httpd sending file bodies as jobs.
case_async_both_ways() { _both_ways --async; }
case_async_connect_out() { _connect_out --async; }
case_async_rst() { _rst_from_client --async; }
case_async_abort() { _rst_from_host --async; }
case_async_web() { _web --async; }

# Many concurrent clients of xvi-httpd --async at once (HTTP/1.1, six
# pipelined requests a connection in bursts of three, then HTTP/1.0): every
# response arrives byte-exact, every send job completes by itself (xvi-httpd
# counts them when it stops; bodies of at least the copy threshold go by
# reference and complete on the tunnel's ACK), most body bytes went by
# reference, and no connection is left open on m afterwards.
case_async_many() {
	local port=$((PORT++)) n=${T_TS_HTTP_CONNS:-500} hpid rc left i jobs
	mkdir -p "$T_TMP/wwwm"
	head -c 777 /dev/urandom >"$T_TMP/wwwm/small.bin"
	head -c 40000 /dev/urandom >"$T_TMP/wwwm/big.bin"
	t_x -T 300 b "$HTTPD" -i "$LAB_IFACE" -s $M4B:$SPORT --async -r "$T_TMP/wwwm" $port \
		2>"$T_TMP/h.err" &
	hpid=$!
	t_wait_tcp_port m $port || { t_stop $hpid; fail "xvi-httpd never listened: $(cat "$T_TMP/h.err")"
		return 1; }
	t_x -T 150 a "$PY" "$T_HELPERS/http_many.py" $M4A $port "$T_TMP/wwwm" $n 6 small.bin big.bin \
		>"$T_TMP/hm.out" 2>&1 &&
	t_x -T 150 a "$PY" "$T_HELPERS/http_many.py" $M4A $port "$T_TMP/wwwm" $n 1 big.bin small.bin \
		>>"$T_TMP/hm.out" 2>&1 && rc=0 || rc=$?
	t_log "$(tr '\n' ';' <"$T_TMP/hm.out")"
	[ $rc = 0 ] || { t_stop $hpid; fail "clients: $(tail -1 "$T_TMP/hm.out")"; return 1; }
	for i in $(seq "$T_WAIT_TENTHS"); do
		left=$(t_x m ss -H -tan "sport = :$port" | grep -vc -e LISTEN -e TIME-WAIT)
		[ "$left" = 0 ] && break
		sleep 0.1
	done
	# SIGTERM to xvi-httpd itself: it counts its jobs as it stops.
	kill -TERM "$(_pid_of "^$HTTPD .* $port\$")" 2>/dev/null
	wait $hpid
	[ "$left" = 0 ] || { fail "m keeps $left connections after every client finished: $(t_x m ss \
		-H -tan "sport = :$port" | grep -v -e LISTEN -e TIME-WAIT | awk '{ print $1 }' | sort |
		uniq -c | tr '\n' ' ')"; return 1; }
	jobs=$(sed -n 's/^xvi-httpd: \([0-9]*\) send jobs: \([0-9]*\) completed, \([0-9]*\) with an error, \([0-9]*\) not completed; \([0-9]*\) bytes sent by reference$/\1 \2 \3 \4 \5/p' \
		"$T_TMP/h.err")
	t_log "xvi-httpd: $(tail -1 "$T_TMP/h.err")"
	set -- $jobs
	[ $# = 5 ] || { fail "xvi-httpd printed no job counts: $(tail -2 "$T_TMP/h.err")"; return 1; }
	[ "$1" -ge $((n * 4)) ] && [ "$2" = "$1" ] && [ "$3" = 0 ] && [ "$4" = 0 ] ||
		{ fail "of $1 send jobs (want >= $((n * 4)) bodies), $2 completed, $3 with an error, $4 never"
		return 1; }
	# Big bodies: 3 a connection over HTTP/1.1, one every other over 1.0.
	[ "$5" -ge $(((n * 3 + n / 2) * 40000 * 9 / 10)) ] ||
		fail "only $5 bytes went by reference of $(((n * 3 + n / 2) * 40000)) in big bodies: async_send copied"
}

# The direct primitives on remote sockets: xvi-mncat --direct moves both
# ways with send_direct / recv_direct on a registered region, byte-exact,
# and says how many bytes went into the tunnel by reference (no copy on b)
# and landed straight in the region.  Most of what b sends must go by
# reference.  What b receives while it also sends arrives during
# send_direct and waits in the socket's ring; on a slow machine all of it
# can, so here the bytes in place are only reported (direct_recv checks
# that recv_direct places what arrives while it waits).
# _direct both_ways|connect_out
_direct() {
	local sent got
	"_$1" --direct || return 1
	case $1 in
	both_ways) sent=3000001 got=$((8 << 20)) ;;
	*) sent=$((4 << 20)) got=999999 ;;
	esac
	_direct_counts "$([ "$1" = both_ways ] && echo "$T_TMP/l.err" || echo "$T_TMP/c.err")" \
		$sent $got 0
}

# _direct_counts ERRFILE SENT GOT MIN-IN-PLACE-BYTES
_direct_counts() {
	local ref inplace
	read -r ref inplace < <(sed -n 's/.*direct: \([0-9]*\) bytes sent by reference, \([0-9]*\) received in place/\1 \2/p' "$1")
	[ -n "$ref" ] || { fail "xvi-mncat --direct printed no counts: $(tail -2 "$1")"; return 1; }
	t_log "b sent $2 bytes, $ref by reference; received $3, $inplace in place"
	[ $((ref * 10)) -ge $(($2 * 9)) ] ||
		{ fail "only $ref of $2 bytes went by reference: send_direct copied"; return 1; }
	[ "$inplace" -ge "$4" ] ||
		fail "only $inplace of $3 bytes landed in place (want >= $4): recv_direct went through the ring"
}
case_direct_web() { _web --direct; }
case_direct_both_ways() { _direct both_ways; }
case_direct_connect_out() { _direct connect_out; }

# Receiving only, b waits in recv_direct: what arrives while it waits
# lands straight in the region, what arrives while it writes out a block
# goes through the socket's ring.  xvi-mncat's receive block is larger
# than the tunnel's window, so each full recv_direct, however late it
# comes, waits for bytes that land in place; the check is that some did
# (a recv_direct that always copies from the ring lands none).
case_direct_recv() {
	local port=$((PORT++)) rc rl
	_mkfile 4
	t_x -T 60 a "$PY" "$PEER" listen $port --send "$T_TMP/in4" --out "$T_TMP/got_a" \
		>"$T_TMP/peer.out" 2>&1 &
	local ppid=$!
	t_wait_tcp_port a $port || { t_stop $ppid; fail "kernel listener on a never came up"; return 1; }
	_mncat --direct --recv-only $A4 $port >"$T_TMP/got_b" 2>"$T_TMP/c.err" && rc=0 || rc=$?
	wait $ppid && rl=0 || rl=$?
	[ $rc = 0 ] || { fail "xvi-mncat: $(tail -2 "$T_TMP/c.err")"; return 1; }
	[ $rl = 0 ] || { fail "kernel listener: $(cat "$T_TMP/peer.out")"; return 1; }
	_same "a -> b (4 MiB)" "$T_TMP/got_b" "$T_TMP/in4" || return 1
	_direct_counts "$T_TMP/c.err" 0 $((4 << 20)) 1
}

CASES=(
	both_ways	case_both_ways	"data both ways byte-exact, each side half-closes"
	connect_out	case_connect_out	"b connects out through m: both ways, half-close"
	refused		case_refused	"connect to a closed port: ECONNREFUSED on b"
	in_use		case_in_use	"listen on a port m already listens on: EADDRINUSE"
	rst_from_client	case_rst_from_client	"a's RST: ECONNRESET on b"
	rst_from_host	case_rst_from_host	"b's abort: ECONNRESET on a"
	many		case_many	"1000 concurrent connections echoed byte-exact"
	web		case_web	"curl on a fetches from xvi-httpd on b byte-exact; wrk 10 s"
	slow_reader	case_slow_reader	"a slow client holds b back; bounded memory; byte-exact"
	host_killed	case_host_killed	"host killed -9: its sockets reset, none left on m"
	server_killed	case_server_killed	"TCP Server killed -9: an error on b"
	async_both_ways	case_async_both_ways	"async_send/async_recv both ways byte-exact, half-close"
	async_connect_out	case_async_connect_out	"b connects out; both ways by jobs, byte-exact"
	async_rst	case_async_rst	"a's RST completes b's receive job with ECONNRESET"
	async_abort	case_async_abort	"b's abort with a receive job pending: ECONNRESET on a"
	async_web	case_async_web	"curl fetches from xvi-httpd --async byte-exact"
	async_many	case_async_many	"500 concurrent clients of xvi-httpd --async: all answered, every job completes, none left open on m"
	direct_both_ways	case_direct_both_ways	"send_direct/recv_direct both ways byte-exact, sent by reference"
	direct_connect_out	case_direct_connect_out	"b connects out; direct both ways byte-exact, sent by reference"
	direct_recv	case_direct_recv	"recv_direct only: 4 MiB byte-exact, some of it in place"
	direct_web	case_direct_web	"curl fetches from xvi-httpd --direct byte-exact; wrk 10 s"
)
t_main "$@"
