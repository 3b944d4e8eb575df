#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# udp.sh: an xvi UDP endpoint (xvi-cat on node b, datapath on b's xv0) talks
# to an ordinary kernel UDP socket (python3 on node a), both directions,
# IPv4 and IPv6, payloads compared byte for byte.  Plus a datagram too
# large for the MTU, which xvi-cat must refuse with EMSGSIZE.

. "$(dirname "$0")/_tap.sh"

t_setup() {
	t_need "$XDPVI" "$XVICAT" || return 1
	t_lab_up udp || return 1
	t_attach b
}

# Three datagrams: short, with spaces, and ~1000 bytes; random so that no
# stale output can match.
_payloads() {
	local tok
	tok=$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
	{
		echo "xvi-udp-$tok-one"
		echo "two: $tok with spaces"
		printf 'three-%s-' "$tok"
		head -c 1000 /dev/zero | tr '\0' 'z'
		echo
	} >"$1"
}

# kernel (node a) -> xvi-cat -l (node b)
_kernel_to_xvi() {
	local local_ip=$1 port=$2 in=$T_TMP/k2x-$2.in out=$T_TMP/k2x-$2.out rc
	_payloads "$in"
	t_x -T 90 b "$XVICAT" -u --iface "$LAB_IFACE" -l "$local_ip" "$port" -c 3 -w 60 \
		>"$out" 2>"$out.err" &
	local pid=$!
	# Send only once the endpoint is published.
	t_wait_endpoint_port b "$port" || { kill $pid 2>/dev/null; wait $pid
		fail "listener on b:$port never came up: $(head -c 200 "$out.err")"; return 1; }
	t_x -T 30 a "$PY" "$T_HELPERS/udp_send.py" "$local_ip" "$port" --lines "$in" --gap 0.05 ||
		{ kill $pid 2>/dev/null; wait $pid; fail "kernel sender on node a failed"; return 1; }
	wait $pid && rc=0 || rc=$?
	if ! cmp -s "$in" "$out"; then
		fail "xvi-cat (exit $rc) got $(wc -c <"$out") bytes, expected $(wc -c <"$in"):" \
			"$(head -c 80 "$out" | od -An -c | tr -s ' \n' ' ') $(head -c 200 "$out.err")"
		return 1
	fi
	[ $rc -eq 0 ] || fail "payload right but xvi-cat exited $rc: $(head -c 200 "$out.err")"
}

# xvi-cat (node b) -> kernel socket (node a)
_xvi_to_kernel() {
	local peer_ip=$1 port=$2 src_ip=$3 in=$T_TMP/x2k-$2.in out=$T_TMP/x2k-$2.out
	local ready=$T_TMP/x2k-$2.ready rc err
	_payloads "$in"
	rm -f "$ready"
	t_x -T 90 a "$PY" "$T_HELPERS/udp_recv.py" "$peer_ip" "$port" --count 3 --ready "$ready" \
		--format '{src} {hex}' >"$out" 2>&1 &
	local pid=$!
	t_wait_file "$ready" || { wait $pid; fail "kernel receiver on node a did not start"; return 1; }
	err=$(t_x -T 10 b "$XVICAT" -u --iface "$LAB_IFACE" "$peer_ip" "$port" <"$in" 2>&1) &&
		rc=0 || rc=$?
	wait $pid
	[ $rc -eq 0 ] || fail "xvi-cat send exited $rc: $err" || return
	# Each stdin line is one datagram; the line's newline may or may not be
	# part of the payload, nothing else may differ.
	err=$("$PY" "$T_HELPERS/compare_datagrams.py" "$in" "$out" --source "$src_ip") ||
		fail "$err"
}

case_udp4_in() { _kernel_to_xvi 198.18.0.2 7000; }
case_udp4_out() { _xvi_to_kernel 198.18.0.1 7001 198.18.0.2; }
case_udp6_in() { _kernel_to_xvi 2001:2::2 7002; }
case_udp6_out() { _xvi_to_kernel 2001:2::1 7003 2001:2::2; }

case_too_long() {
	local err rc
	err=$(head -c 9000 /dev/zero | tr '\0' 'x' |
		t_x -T 10 b "$XVICAT" -u --iface "$LAB_IFACE" 198.18.0.1 7004 2>&1 >/dev/null) &&
		rc=0 || rc=$?
	[ $rc -ne 0 ] || fail "a 9000-byte datagram on a 1500-byte MTU was accepted (exit 0)" || return
	[ $rc -ne 124 ] || fail "xvi-cat hung on an oversized datagram" || return
	shopt -s nocasematch
	[[ $err == *EMSGSIZE* || $err == *"too long"* || $err == *"too large"* ||
		$err == *"too big"* ]] ||
		{ shopt -u nocasematch; fail "no EMSGSIZE/too long message: '${err:0:200}'"; return 1; }
	shopt -u nocasematch
}

# shellcheck disable=SC2034 # read by t_main
CASES=(
	udp4_in		case_udp4_in	"kernel UDP (a) -> xvi-cat -l 198.18.0.2:7000 (b), 3 datagrams"
	udp4_out	case_udp4_out	"xvi-cat (b) -> kernel UDP 198.18.0.1:7001 (a), 3 datagrams"
	udp6_in		case_udp6_in	"kernel UDP (a) -> xvi-cat -l [2001:2::2]:7002 (b)"
	udp6_out	case_udp6_out	"xvi-cat (b) -> kernel UDP [2001:2::1]:7003 (a)"
	too_long	case_too_long	"a 9000-byte line on a 1500 MTU: xvi-cat fails with EMSGSIZE"
)

t_main "$@"
