#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# txcsum.sh: UDP checksums on send (DESIGN.md section 5).  xvi-cat on node b
# (datapath attached) sends datagrams to a kernel UDP socket on node a.
#
#   probe_veth      the run-time probe finds no AF_XDP TX checksum offload on
#                   veth, but veth is a local link in copy mode: the library
#                   requests every checksum through TX metadata and sums no
#                   payload; the kernel sends CHECKSUM_PARTIAL skbs, which
#                   node a's kernel delivers, with only the pseudo-header
#                   sum in the captured frames (as a kernel sender's)
#   sw_knob         test knob XVI_TX_CSUM=sw: the library computes every
#                   checksum itself, and every captured frame verifies
#   control_bad     the check behind the other cases: node a's kernel drops a
#                   datagram whose UDP checksum is wrong (so "it arrived"
#                   means "its checksum verified") and a right one arrives
#   sw_offload4/6   test knob XVI_TX_CSUM=sw-offload: the TX-metadata path
#                   (pseudo-header sum in the field, csum_start/offset in the
#                   metadata, XDP_TX_METADATA on the descriptor) with
#                   XDP_UMEM_TX_SW_CSUM, so the kernel fills the checksum in
#                   from our request.  The datagrams must arrive, node a must
#                   count no checksum error, every captured frame's checksum
#                   must verify (checked again in Python, independently), and
#                   the library's counters must show that the software path
#                   summed none of them.  Skipped if the kernel lacks
#                   XDP_UMEM_TX_SW_CSUM (before 6.11).

. "$(dirname "$0")/_tap.sh"

t_setup() {
	t_need "$XDPVI" "$XVICAT" || return 1
	t_lab_up tc || return 1
	t_attach b
}

# One IPv4 UDP datagram 198.18.0.2 -> 198.18.0.1 from node b, built by hand
# with its UDP checksum right (good) or deliberately wrong (bad), sent with
# AF_PACKET (no kernel checksum help): _raw_send DST_MAC PORT good|bad PAYLOAD.
_raw_send() {
	local bad=
	[ "$3" = bad ] && bad=--bad-checksum
	t_x b "$PY" "$T_HELPERS/udp4_frame.py" --send "$LAB_IFACE" --dst-mac "$1" \
		--src 198.18.0.2 --dst 198.18.0.1 --sport 40001 --dport "$2" --df ${bad:+"$bad"} \
		--payload "$4"
}

# Node $1's kernel count of UDP datagrams dropped for a bad checksum (IPv4).
_udp_csum_errors() {
	t_x "$1" awk '/^Udp:/ { n++; if (n == 1) for (i = 1; i <= NF; i++) { if ($i == "InCsumErrors") c = i } else print $c }' /proc/net/snmp
}

# Start the receiver on node a: $1 addr, $2 port, $3 count, $4 output.  It
# prints the datagrams, the checksum of every frame it captured and checked
# (again, independently), and the growth of node a's checksum error count.
_recv_start() {
	local ready=$4.ready
	rm -f "$ready"
	t_x -T 90 a "$PY" "$T_HELPERS/udp_csum_recv.py" "$1" "$2" "$3" "$ready" --iface "$LAB_IFACE" \
		>"$4" 2>&1 &
	T_RPID=$!
	t_wait_file "$ready" ||
		{ wait $T_RPID; fail "receiver on node a did not start"; return 1; }
}

_payloads() {
	local tok
	tok=$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
	{
		echo "txcsum-$tok-one"
		echo "odd length: $tok!"
		printf 'three-%s-' "$tok"
		head -c 1001 /dev/zero | tr '\0' 'q'
		echo
	} >"$1"
}

# Payloads in $1 (one datagram a line) against the receiver's output $2.
_check_payloads() { "$PY" "$T_HELPERS/compare_datagrams.py" "$1" "$2" --tag DGRAM; }

# "TX checksums: N requested through TX metadata, M computed in software"
_counters() {
	local re='TX checksums: \([0-9]*\) requested through TX metadata,'
	re+=' \([0-9]*\) computed in software'
	sed -n "s/.*$re.*/\1 \2/p" "$1" | tail -1
}

# Send the lines of $3 from node b to $1:$2 with extra env $4 (may be empty).
# Leaves xvi-cat's stderr in $3.err.
_send() {
	local rc
	t_x -T 10 b env ${4:+"$4"} "$XVICAT" -vv -u --iface "$LAB_IFACE" "$1" "$2" <"$3" \
		>/dev/null 2>"$3.err" && rc=0 || rc=$?
	[ $rc -eq 0 ] || { fail "xvi-cat exited $rc: $(tail -3 "$3.err")"; return 1; }
}

case_probe_veth() {
	local in=$T_TMP/probe.in out=$T_TMP/probe.out c err
	_payloads "$in"
	_recv_start 198.18.0.1 7200 3 "$out" || return 1
	_send 198.18.0.1 7200 "$in" "" || { wait $T_RPID; return 1; }
	wait $T_RPID
	err=$(_check_payloads "$in" "$out") || { fail "$err"; return 1; }
	grep -q 'TX checksum probe: device AF_XDP TX checksum offload no' "$in.err" ||
		fail "no probe line saying veth has no AF_XDP TX checksum offload:" \
			"$(grep -i checksum "$in.err" | head -3)" || return 1
	grep -q 'a local link in copy mode' "$in.err" &&
		grep -q 'TX checksums requested through TX metadata$' "$in.err" ||
		fail "the endpoint on a veth did not request checksums through TX metadata:" \
			"$(grep -i checksum "$in.err" | head -3)" || return 1
	grep -qx 'CSUMERR 0' "$out" ||
		fail "node a counted UDP checksum errors: $(grep CSUMERR "$out")" || return 1
	[ "$(grep -c '^FRAME partial ' "$out")" -eq 3 ] ||
		fail "captured checksums, expected 3 partial: $(grep '^FRAME' "$out" | tr '\n' ' ')" ||
		return 1
	c=$(_counters "$in.err")
	[ "$c" = "3 0" ] || fail "library counters '$c', expected 3 via metadata, 0 in software"
}

case_sw_knob() {
	local in=$T_TMP/swk.in out=$T_TMP/swk.out c err
	_payloads "$in"
	_recv_start 198.18.0.1 7204 3 "$out" || return 1
	_send 198.18.0.1 7204 "$in" XVI_TX_CSUM=sw || { wait $T_RPID; return 1; }
	wait $T_RPID
	err=$(_check_payloads "$in" "$out") || { fail "$err"; return 1; }
	grep -q 'TX checksums in software (XVI_TX_CSUM=sw)' "$in.err" ||
		fail "the knob did not select software checksums" || return 1
	[ "$(grep -c '^FRAME ok ' "$out")" -eq 3 ] && ! grep -q '^FRAME \(bad\|partial\|zero\)' "$out" ||
		fail "captured checksums: $(grep '^FRAME' "$out" | tr '\n' ' ')" || return 1
	c=$(_counters "$in.err")
	[ "$c" = "0 3" ] || fail "library counters '$c', expected 0 via metadata, 3 in software"
}

case_control_bad() {
	local out=$T_TMP/control.out mac n
	mac=$(t_x a cat /sys/class/net/xv0/address) || { fail "no MAC for node a"; return 1; }
	_recv_start 198.18.0.1 7201 1 "$out" || return 1
	local base i
	base=$(_udp_csum_errors a)
	_raw_send "$mac" 7201 bad "corrupted" ||
		{ kill $T_RPID 2>/dev/null; wait $T_RPID; fail "raw sender failed"; return 1; }
	# The good datagram goes once node a's kernel has counted the bad one:
	# the receiver stops at its first datagram.
	for i in $(seq "$T_WAIT_TENTHS"); do
		[ "$(_udp_csum_errors a)" -gt "$base" ] && break
		sleep 0.1
	done
	_raw_send "$mac" 7201 good "intact" ||
		{ kill $T_RPID 2>/dev/null; wait $T_RPID; fail "raw sender failed"; return 1; }
	wait $T_RPID
	n=$(grep -c '^DGRAM ' "$out")
	grep -qx "DGRAM $(printf intact | od -An -tx1 | tr -d ' \n')" "$out" ||
		fail "the datagram with a right checksum did not arrive: $(head -c 300 "$out")" ||
		return 1
	[ "$n" -eq 1 ] || fail "$n datagrams arrived, the corrupted one must be dropped" || return 1
	grep -qx 'CSUMERR 1' "$out" ||
		fail "node a did not count exactly one UDP checksum error: $(grep CSUMERR "$out")"
}

_sw_offload() {
	local dst=$1 port=$2 in=$T_TMP/swo-$2.in out=$T_TMP/swo-$2.out c err
	_payloads "$in"
	# Neighbour resolution is not under test here: warm the cache first.
	t_ping b "$dst" >/dev/null 2>&1 || t_log "ping $dst from b failed; sending anyway"
	_recv_start "$dst" "$port" 3 "$out" || return 1
	_send "$dst" "$port" "$in" XVI_TX_CSUM=sw-offload || { wait $T_RPID; return 1; }
	wait $T_RPID
	if grep -q 'refuses TX metadata with XDP_UMEM_TX_SW_CSUM' "$in.err"; then
		skip "kernel $(uname -r) lacks XDP_UMEM_TX_SW_CSUM / TX metadata (6.11+)"
		return
	fi
	grep -q 'TX checksums requested through TX metadata, summed by the kernel' "$in.err" ||
		fail "the knob did not select the metadata path:" \
			"$(grep -i checksum "$in.err" | head -3)" ||
		return 1
	err=$(_check_payloads "$in" "$out") || { fail "$err"; return 1; }
	grep -qx 'CSUMERR 0' "$out" ||
		fail "node a counted UDP checksum errors: $(grep CSUMERR "$out")" || return 1
	[ "$(grep -c '^FRAME ok ' "$out")" -eq 3 ] && ! grep -q '^FRAME \(bad\|zero\)' "$out" ||
		fail "captured checksums: $(grep '^FRAME' "$out" | tr '\n' ' ')" || return 1
	c=$(_counters "$in.err")
	[ "$c" = "3 0" ] || fail "library counters '$c', expected 3 via metadata, 0 in software"
}

case_sw_offload4() { _sw_offload 198.18.0.1 7202; }
case_sw_offload6() { _sw_offload 2001:2::1 7203; }

# shellcheck disable=SC2034 # read by t_main
CASES=(
	probe_veth	case_probe_veth		"veth: copy mode, checksums requested through TX metadata"
	sw_knob		case_sw_knob		"XVI_TX_CSUM=sw: software sums, every frame verifies"
	control_bad	case_control_bad	"control: node a drops a wrong UDP checksum"
	sw_offload4	case_sw_offload4	"XVI_TX_CSUM=sw-offload, IPv4: metadata request"
	sw_offload6	case_sw_offload6	"XVI_TX_CSUM=sw-offload, IPv6: metadata request"
)

t_main "$@"
