#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# reserve.sh: a direct UDP endpoint owns its (address, port) in the kernel's
# port space too (libxvi/ctl/reserve.c), and a wildcard and an exact endpoint on
# one port cannot belong to two processes (ctl claim), as with kernel bind():
#   - a kernel socket holds the port first: the endpoint open fails with
#     EADDRINUSE and says so;
#   - the endpoint holds it first: a kernel bind() fails (exact and wildcard
#     address), IPv6 wildcard endpoints leave IPv4 alone (V6ONLY);
#   - after either one closes, the other gets the port.
# Node b runs the datapath, the endpoints (xvi-cat) and the kernel sockets.

. "$(dirname "$0")/_tap.sh"

t_setup() {
	t_need "$XDPVI" "$XVICAT" || return 1
	t_lab_up rsv || return 1
	t_attach b
}

# Try a kernel bind() of ADDR PORT: exit 0 bound, 98 EADDRINUSE, 1 other.
_kbind() {
	local node=$1 addr=$2 port=$3
	t_x -T 10 "$node" "$PY" "$T_HELPERS/udp_bind.py" "$addr" "$port" >/dev/null 2>>"$T_TMP/kb.err"
}

# Start a kernel holder of ADDR PORT on node b until _unhold (at most SEC
# seconds); sets HOLD_PID.
_hold() {
	local addr=$1 port=$2 sec=$3
	rm -f "$T_TMP/hold.ready"
	t_x -T $((sec + 10)) b "$PY" "$T_HELPERS/udp_bind.py" "$addr" "$port" \
		--ready "$T_TMP/hold.ready" --hold "$sec" >/dev/null &
	HOLD_PID=$!
	t_wait_file "$T_TMP/hold.ready" || { wait $HOLD_PID; fail "kernel holder did not bind $addr:$port"; return 1; }
}

# Stop a background xvi-cat (lab exec forwards the signal to it).
_stop() {
	kill "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	return 0
}

_unhold() {
	rm -f "$T_TMP/hold.ready"
	wait "$HOLD_PID"
}

# xvi-cat listener on node b that exits after one datagram (or 60 s); sets XPID.
_listen() {
	local addr=$1 port=$2 tag=$3
	t_x -T 90 b "$XVICAT" -u --iface "$LAB_IFACE" -l "$addr" "$port" -c 1 -w 60 \
		>"$T_TMP/$tag.out" 2>"$T_TMP/$tag.err" &
	XPID=$!
	t_wait_endpoint_port b "$port" || { _stop $XPID; fail "endpoint on port $port never published: $(head -c 300 "$T_TMP/$tag.err")"; return 1; }
}

# One datagram from node a ends a listener started by _listen.
_poke() {
	local addr=$1 port=$2
	t_x -T 10 a "$PY" "$T_HELPERS/udp_send.py" "$addr" "$port" --message xvi-reserve
}

# Open must fail while a kernel socket holds the port, and work after.
_kernel_first() {
	local hold_addr=$1 ep_addr=$2 port=$3 rc
	# The holder keeps the port until the open was tried.
	_hold "$hold_addr" "$port" 60 || return 1
	t_x -T 30 b "$XVICAT" -u --iface "$LAB_IFACE" -l "$ep_addr" "$port" -c 1 -w 2 \
		>/dev/null 2>"$T_TMP/kf.err" && rc=0 || rc=$?
	kill -0 "$HOLD_PID" 2>/dev/null || t_log "kernel holder ended before the open was tried"
	_unhold
	[ $rc -ne 0 ] || { fail "xvi-cat opened $ep_addr:$port while a kernel socket held $hold_addr:$port"; return 1; }
	grep -q "kernel socket already uses this port" "$T_TMP/kf.err" ||
		{ fail "open failed (exit $rc) without naming the kernel socket: $(head -c 300 "$T_TMP/kf.err")"; return 1; }
	# The holder is gone: the same open now works end to end.
	_listen "$ep_addr" "$port" kf2 || return 1
	_poke 198.18.0.2 "$port"
	wait $XPID && rc=0 || rc=$?
	[ $rc -eq 0 ] || fail "after the kernel socket closed, xvi-cat exited $rc: $(head -c 300 "$T_TMP/kf2.err")"
}

case_kernel_exact_first() { _kernel_first 198.18.0.2 198.18.0.2 7100; }
case_kernel_wild_first() { _kernel_first 0.0.0.0 198.18.0.2 7101; }
case_kernel_exact_first_wild_ep() { _kernel_first 198.18.0.2 0.0.0.0 7102; }

# While an endpoint is open, kernel binds of the port fail; after, they work.
_xvi_first() {
	local ep_addr=$1 port=$2 rc
	shift 2
	_listen "$ep_addr" "$port" xf || return 1
	local a want got
	for a in "$@"; do
		want=${a%%=*}
		a=${a#*=}
		_kbind b "$a" "$port" && got=0 || got=$?
		if [ "$got" != "$want" ]; then
			_stop $XPID
			fail "kernel bind $a:$port with endpoint $ep_addr:$port open: exit $got, expected $want ($(tail -1 "$T_TMP/kb.err"))"
			return 1
		fi
	done
	_poke "$([ "${ep_addr#*:}" != "$ep_addr" ] && echo 2001:2::2 || echo 198.18.0.2)" "$port"
	wait $XPID && rc=0 || rc=$?
	[ $rc -eq 0 ] || { fail "xvi-cat exited $rc: $(head -c 300 "$T_TMP/xf.err")"; return 1; }
	_kbind b "$ep_addr" "$port" ||
		fail "kernel bind $ep_addr:$port still fails after the endpoint closed ($(tail -1 "$T_TMP/kb.err"))"
}

case_xvi_exact_first() { _xvi_first 198.18.0.2 7110 98=198.18.0.2 98=0.0.0.0; }
case_xvi_wild_first() { _xvi_first 0.0.0.0 7111 98=198.18.0.2 98=0.0.0.0 0=::; }
case_xvi_wild6_first() { _xvi_first :: 7112 98=2001:2::2 98=:: 0=0.0.0.0; }

# Two processes: wildcard and exact on one port overlap (ctl claim).
_overlap() {
	local first=$1 second=$2 port=$3 rc
	_listen "$first" "$port" ov || return 1
	t_x -T 10 b "$XVICAT" -u --iface "$LAB_IFACE" -l "$second" "$port" -c 1 -w 2 \
		>/dev/null 2>"$T_TMP/ov2.err" && rc=0 || rc=$?
	_poke 198.18.0.2 "$port"
	wait $XPID
	[ $rc -ne 0 ] || { fail "second endpoint $second:$port opened next to $first:$port of another process"; return 1; }
	grep -q "overlaps .*of pid [0-9]" "$T_TMP/ov2.err" ||
		fail "refused (exit $rc) but not as an overlap naming the holder: $(head -c 300 "$T_TMP/ov2.err")"
}

case_overlap_wild_then_exact() { _overlap 0.0.0.0 198.18.0.2 7120; }
case_overlap_exact_then_wild() { _overlap 198.18.0.2 0.0.0.0 7121; }

CASES=(
	kernel_exact_first        case_kernel_exact_first        "kernel 198.18.0.2:P bound -> open 198.18.0.2:P fails EADDRINUSE; works after close"
	kernel_wild_first         case_kernel_wild_first         "kernel 0.0.0.0:P bound -> open 198.18.0.2:P fails; works after close"
	kernel_exact_wild_ep      case_kernel_exact_first_wild_ep "kernel 198.18.0.2:P bound -> open 0.0.0.0:P fails; works after close"
	xvi_exact_first           case_xvi_exact_first           "endpoint 198.18.0.2:P open -> kernel bind exact and wildcard fail; works after close"
	xvi_wild_first            case_xvi_wild_first            "endpoint 0.0.0.0:P open -> kernel v4 binds fail, [::]:P (V6ONLY) works"
	xvi_wild6_first           case_xvi_wild6_first           "endpoint [::]:P open -> kernel v6 binds fail, 0.0.0.0:P works"
	overlap_wild_then_exact   case_overlap_wild_then_exact   "endpoint 0.0.0.0:P of one process -> 198.18.0.2:P of another refused, naming it"
	overlap_exact_then_wild   case_overlap_exact_then_wild   "endpoint 198.18.0.2:P of one process -> 0.0.0.0:P of another refused, naming it"
)

t_main "$@"
