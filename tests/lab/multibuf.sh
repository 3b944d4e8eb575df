#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# multibuf.sh: multi-buffer endpoints (XVI_EP_MULTI_BUFFER, AF_XDP
# XDP_USE_SG) on a two-node lab with MTU 9000 on both veth ends and the
# datapath on both nodes.  Datagrams up to the MTU (8972 bytes over IPv4,
# 8952 over IPv6) span several 2048-byte frames: received from and sent to
# kernel UDP sockets and between two xvi endpoints, payloads compared byte
# for byte; an endpoint without the flag keeps its one-frame limit.
#
# The endpoints are driven by tests/lab/mbtool.c ($B/tests/mbtool, built
# by make).

. "$(dirname "$0")/_tap.sh"

MBTOOL=$T_B/tests/mbtool
MTU=9000

t_setup() {
	t_need "$XDPVI" || return 1
	t_need "$MBTOOL" "$XVICAT" || return 1
	t_lab_up mb || return 1
	t_x a ip link set "$LAB_IFACE" mtu $MTU && t_x b ip link set "$LAB_IFACE" mtu $MTU ||
		{ fail "cannot set MTU $MTU on the lab's veth"; return 1; }
	t_attach a && t_attach b
}

# Random payload bytes for the given sizes, and the expected length lines.
_payload() {
	local file=$1 sizes=$2 n total=0
	for n in ${sizes//,/ }; do total=$((total + n)); done
	head -c "$total" /dev/urandom >"$file"
	tr ',' '\n' <<<"$sizes" >"$file.lens"
}

_mb() { t_x -T "${MB_T:-20}" "$@"; }

# kernel UDP (a) -> mbtool recv (b); $4: -z (recv_batch pieces) or "" (recvfrom)
_kernel_to_mb() {
	local lip=$1 port=$2 sizes=$3 mode=$4 in=$T_TMP/k2m-$2.in out=$T_TMP/k2m-$2.out rc
	local count
	count=$(tr ',' '\n' <<<"$sizes" | wc -l)
	_payload "$in" "$sizes"
	# shellcheck disable=SC2086 # $mode is one flag or none
	_mb b "$MBTOOL" -i "$LAB_IFACE" -l "$lip" -p "$port" -m $mode -c "$count" -w 60000 \
		-o "$out" recv >"$out.lens" 2>"$out.err" &
	local pid=$!
	t_wait_endpoint_port b "$port" || { kill $pid 2>/dev/null; wait $pid
		fail "receiver on b:$port never came up: $(tail -c 300 "$out.err")"; return 1; }
	t_x -T 30 a "$PY" "$T_HELPERS/udp_send.py" "$lip" "$port" --file "$in" --sizes "$sizes" \
		--gap 0.05 ||
		{ kill $pid 2>/dev/null; wait $pid; fail "kernel sender on node a failed"; return 1; }
	wait $pid && rc=0 || rc=$?
	[ $rc -eq 0 ] || { fail "mbtool recv exited $rc: $(tail -c 300 "$out.err")"; return 1; }
	cmp -s "$in.lens" "$out.lens" ||
		{ fail "lengths $(tr '\n' ' ' <"$out.lens"), expected $(tr '\n' ' ' <"$in.lens")"; return 1; }
	cmp -s "$in" "$out" || { fail "payload bytes differ: $(cmp "$in" "$out" 2>&1)"; return 1; }
	[ -z "$mode" ] || grep -q "in [2-9] piece" "$out.err" ||
		{ fail "no datagram arrived in several pieces: $(tr '\n' ' ' <"$out.err")"; return 1; }
}

# mbtool send (node $5, multi-buffer) -> kernel UDP (the other node)
_mb_to_kernel() {
	local pip=$1 port=$2 sizes=$3 mode=$4 node=${5:-b} lip=$6
	local in=$T_TMP/m2k-$2.in out=$T_TMP/m2k-$2.out ready=$T_TMP/m2k-$2.ready rc err peer count
	peer=$([ "$node" = b ] && echo a || echo b)
	count=$(tr ',' '\n' <<<"$sizes" | wc -l)
	_payload "$in" "$sizes"
	rm -f "$ready"
	t_x -T 90 "$peer" "$PY" "$T_HELPERS/udp_recv.py" "$pip" "$port" --count "$count" \
		--ready "$ready" --payloads "$out" --format '{len} {src}' >"$out.lens" 2>&1 &
	local pid=$!
	t_wait_file "$ready" || { wait $pid; fail "kernel receiver did not start"; return 1; }
	# shellcheck disable=SC2086
	err=$(_mb "$node" "$MBTOOL" -i "$LAB_IFACE" -l "$lip" -p $((port + 100)) -m $mode \
		-d "$pip" -P "$port" -s "$sizes" send <"$in" 2>&1) && rc=0 || rc=$?
	wait $pid
	[ $rc -eq 0 ] || { fail "mbtool send exited $rc: $err"; return 1; }
	cut -d' ' -f1 "$out.lens" | cmp -s "$in.lens" - ||
		{ fail "kernel got $(tr '\n' ' ' <"$out.lens"), expected lengths $(tr '\n' ' ' <"$in.lens")"; return 1; }
	awk -v s="$lip" '$2 != s { exit 1 }' "$out.lens" ||
		{ fail "source address not $lip: $(head -1 "$out.lens")"; return 1; }
	# The kernel drops a datagram with a bad UDP checksum: arrival proves it.
	cmp -s "$in" "$out" || { fail "payload bytes differ: $(cmp "$in" "$out" 2>&1)"; return 1; }
}

case_info_mb() {
	local out
	out=$(_mb b "$MBTOOL" -i "$LAB_IFACE" -l 198.18.0.2 -p 7100 -m info 2>&1) ||
		{ fail "open with XVI_EP_MULTI_BUFFER failed: $out"; return 1; }
	t_log "$out"
	[[ $out == *"max_payload=8972 "* ]] || { fail "IPv4 max_payload not 8972: $out"; return 1; }
	(( $(sed -n 's/.*flags=\(0x[0-9a-f]*\).*/\1/p' <<<"$out") & 0x8 )) ||
		{ fail "XVI_INFO_MULTI_BUFFER (0x8) not in flags: $out"; return 1; }
	out=$(_mb b "$MBTOOL" -i "$LAB_IFACE" -l 2001:2::2 -p 7100 -m info 2>&1) ||
		{ fail "IPv6 open failed: $out"; return 1; }
	[[ $out == *"max_payload=8952 "* ]] || fail "IPv6 max_payload not 8952: $out"
}

case_plain_limit() {
	local out err rc maxp flags
	out=$(_mb b "$MBTOOL" -i "$LAB_IFACE" -l 198.18.0.2 -p 7101 info 2>&1) ||
		{ fail "open without the flag failed: $out"; return 1; }
	maxp=$(sed -n 's/.*max_payload=\([0-9]*\).*/\1/p' <<<"$out")
	flags=$(sed -n 's/.*flags=\(0x[0-9a-f]*\).*/\1/p' <<<"$out")
	# One 2048-byte frame: 2048 - 256 (XDP headroom) - 14 - 20 - 8.
	[ "$maxp" -le 1750 ] || { fail "max_payload $maxp above one frame's room: $out"; return 1; }
	(( flags & 0x8 )) && { fail "XVI_INFO_MULTI_BUFFER without the flag: $out"; return 1; }
	head -c 8972 /dev/urandom >"$T_TMP/plain.in"
	for mode in "" -z; do
		# shellcheck disable=SC2086
		err=$(_mb b "$MBTOOL" -i "$LAB_IFACE" -l 198.18.0.2 -p 7101 $mode -d 198.18.0.1 \
			-P 7102 -s 8972 send <"$T_TMP/plain.in" 2>&1) && rc=0 || rc=$?
		[ $rc -ne 0 ] || { fail "8972 bytes sent ${mode:-by sendto} without the flag"; return 1; }
		[[ $err == *"Message too long"* ]] ||
			{ fail "${mode:-sendto}: no EMSGSIZE: $err"; return 1; }
	done
}

case_protected_refused() {
	local err rc
	err=$(_mb b "$MBTOOL" -x -i "$LAB_IFACE" -l 198.18.0.2 -p 7103 -m info 2>&1) && rc=0 || rc=$?
	[ $rc -ne 0 ] || { fail "a protected multi-buffer endpoint opened"; return 1; }
	[[ $err == *"Operation not supported"* && $err == *xdp-vid* ]] ||
		fail "no EOPNOTSUPP naming xdp-vid: $err"
}

case_udp4_in() { _kernel_to_mb 198.18.0.2 7000 1000,4000,8972 -z; }
case_udp4_in_copy() { _kernel_to_mb 198.18.0.2 7001 8972,1000,8972 ""; }
case_udp6_in() { _kernel_to_mb 2001:2::2 7002 1000,4000,8952 -z; }
case_udp4_out() { _mb_to_kernel 198.18.0.1 7010 8972,8972,8972 -z b 198.18.0.2; }
case_udp4_out_sendto() { _mb_to_kernel 198.18.0.1 7011 8972,1000,4000 "" b 198.18.0.2; }
case_udp6_out() { _mb_to_kernel 2001:2::1 7012 8952,8952 -z b 2001:2::2; }

# mbtool send (a, multi-buffer) -> mbtool recv (b, multi-buffer)
case_xvi_to_xvi() {
	local in=$T_TMP/x2x.in out=$T_TMP/x2x.out sizes=1000,4000,8972,8972 rc err
	_payload "$in" "$sizes"
	_mb b "$MBTOOL" -i "$LAB_IFACE" -l 198.18.0.2 -p 7020 -m -z -c 4 -w 60000 -o "$out" \
		recv >"$out.lens" 2>"$out.err" &
	local pid=$!
	t_wait_endpoint_port b 7020 || { kill $pid 2>/dev/null; wait $pid
		fail "receiver on b:7020 never came up: $(tail -c 300 "$out.err")"; return 1; }
	err=$(_mb a "$MBTOOL" -i "$LAB_IFACE" -l 198.18.0.1 -p 7021 -m -z -d 198.18.0.2 -P 7020 \
		-s "$sizes" send <"$in" 2>&1) && rc=0 || rc=$?
	wait $pid || { fail "mbtool recv failed: $(tail -c 300 "$out.err")"; return 1; }
	[ $rc -eq 0 ] || { fail "mbtool send exited $rc: $err"; return 1; }
	cmp -s "$in.lens" "$out.lens" ||
		{ fail "lengths $(tr '\n' ' ' <"$out.lens"), expected $(tr '\n' ' ' <"$in.lens")"; return 1; }
	cmp -s "$in" "$out" || fail "payload bytes differ: $(cmp "$in" "$out" 2>&1)"
}

# Streams over multi-buffer endpoints: 8896-byte segments in five frames.
case_stream_mb() {
	head -c $((16 << 20)) /dev/urandom >"$T_TMP/s16"
	t_stream_xfer "$T_LAB" "$T_TMP/s16" 60 --multi-buffer || return 1
	t_log "16 MiB byte-exact over multi-buffer streams in ${XFER_MS} ms"
}

# shellcheck disable=SC2034 # read by t_main
CASES=(
	info_mb		case_info_mb		"XVI_EP_MULTI_BUFFER: XVI_INFO_MULTI_BUFFER, max_payload 8972 (v4) / 8952 (v6) at MTU 9000"
	plain_limit	case_plain_limit	"without the flag: max_payload within one frame, 8972 bytes fail with EMSGSIZE"
	protected	case_protected_refused	"a protected (xdp-vid) multi-buffer endpoint is refused with EOPNOTSUPP"
	udp4_in		case_udp4_in		"kernel UDP (a) -> multi-buffer endpoint (b): 1000, 4000, 8972 bytes, pieces"
	udp4_in_copy	case_udp4_in_copy	"kernel UDP (a) -> multi-buffer endpoint (b) through recvfrom"
	udp6_in		case_udp6_in		"kernel UDP6 (a) -> multi-buffer endpoint (b): 1000, 4000, 8952 bytes"
	udp4_out	case_udp4_out		"multi-buffer endpoint (b) tx_send -> kernel UDP (a): 3 x 8972 bytes"
	udp4_out_sendto	case_udp4_out_sendto	"multi-buffer endpoint (b) sendto -> kernel UDP (a): 8972, 1000, 4000"
	udp6_out	case_udp6_out		"multi-buffer endpoint (b) -> kernel UDP6 (a): 2 x 8952 bytes"
	xvi_to_xvi	case_xvi_to_xvi		"multi-buffer endpoint (a) -> multi-buffer endpoint (b), up to 8972 bytes"
	stream_mb	case_stream_mb		"xvi-cat stream, both ends multi-buffer at MTU 9000: 16 MiB byte-exact"
)

t_main "$@"
