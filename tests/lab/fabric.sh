#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# fabric.sh: the libfabric provider xvi ($B/lib/libxvi-fi.so, loaded through
# FI_PROVIDER_PATH) between node a and node b, the datapath attached on
# both.  fi_info must list it (DGRAM) and ofi_rxd layered on it (RDM);
# libfabric-bin's fi_pingpong must run over it in both modes with its data
# check (-c: every received byte compared with the pattern sent); a wrong
# interface must be refused with a message that names FI_XVI_IFACE.
# tests/fabric/fi_check.c checks what fi_pingpong does not reach: sread
# with a wait fd and its timeout, readfrom, iovecs, cancel, truncation,
# datagrams that arrive before their receive is posted.
# Open MPI must run tests/mpi/mpi_check (ring, allreduce, ping-pong, each
# result checked by the program) with one rank on a and one on b over the
# OFI MTL on xvi;ofi_rxd (tests/mpi/lab-mpirun).

# shellcheck source=tests/lab/_tap.sh
. "$(dirname "$0")/_tap.sh"

PROVDIR=$T_B/lib
export FI_PROVIDER_PATH=$PROVDIR
# fi_pingpong's out-of-band TCP port (its default), on node b.
PP_PORT=47592

t_setup() {
	t_need "$XDPVI" "$PROVDIR/libxvi-fi.so" || return 1
	command -v fi_pingpong >/dev/null && command -v fi_info >/dev/null ||
		{ fail "fi_pingpong/fi_info missing: install libfabric-bin (make deps)"; return 1; }
	t_lab_up fab || return 1
	t_attach a && t_attach b
}

case_info() {
	local out
	out=$(t_x b fi_info -p xvi 2>&1) || { fail "fi_info -p xvi failed: ${out:0:300}"; return 1; }
	grep -q 'provider: xvi$' <<<"$out" && grep -q 'type: FI_EP_DGRAM' <<<"$out" &&
		grep -q "domain: $LAB_IFACE" <<<"$out" ||
		{ fail "fi_info -p xvi does not list xvi DGRAM on $LAB_IFACE: ${out:0:300}"; return 1; }
	out=$(t_x b fi_info -p 'xvi;ofi_rxd' 2>&1) ||
		{ fail "fi_info -p 'xvi;ofi_rxd' failed: ${out:0:300}"; return 1; }
	grep -q 'type: FI_EP_RDM' <<<"$out" ||
		{ fail "no RDM endpoint from ofi_rxd over xvi: ${out:0:300}"; return 1; }
}

# _pingpong NAME ARGS...: fi_pingpong server on b, client on a, both with
# ARGS and the data check; both must exit 0 and report every size.  When
# one side fails the other would wait for its peer: it is stopped at once.
_pingpong() {
	local name=$1 srv=$T_TMP/$1.srv cli=$T_TMP/$1.cli rs=- rc=-
	shift
	t_x -T 120 b fi_pingpong -c -I 20 "$@" >"$srv" 2>&1 &
	local spid=$!
	t_wait_tcp_port b $PP_PORT || { t_stop $spid
		fail "fi_pingpong server on b never listened: $(tail -3 "$srv")"; return 1; }
	t_x -T 120 a fi_pingpong -c -I 20 "$@" 198.18.0.2 >"$cli" 2>&1 &
	local cpid=$!
	while [ "$rs" = - ] || [ "$rc" = - ]; do
		if [ "$rs" = - ] && ! kill -0 $spid 2>/dev/null; then
			wait $spid && rs=0 || rs=$?
			[ "$rs" = 0 ] || [ "$rc" != - ] || { t_stop $cpid; rc=stopped; }
		fi
		if [ "$rc" = - ] && ! kill -0 $cpid 2>/dev/null; then
			wait $cpid && rc=0 || rc=$?
			[ "$rc" = 0 ] || [ "$rs" != - ] || { t_stop $spid; rs=stopped; }
		fi
		sleep 0.1
	done
	sed "s/^/# $name client: /" "$cli" | tail -5 >&2
	[ "$rc" = 0 ] && [ "$rs" = 0 ] || { fail "fi_pingpong $* exit client $rc, server $rs:" \
		"$(grep -v '^bytes\|^[0-9]' "$cli" "$srv" | tail -3 | tr '\n' ' ')"; return 1; }
	# A row per size: "SIZE 20 =20 ..." (sent and acknowledged counts).
	local rows
	rows=$(grep -cE '^[0-9.]+[kmg]? +20 +=20 ' "$cli")
	[ "$rows" -ge "${PP_MIN_ROWS:-1}" ] ||
		{ fail "fi_pingpong $*: $rows result rows, want ${PP_MIN_ROWS:-1}"; return 1; }
}

# Every size from 0 to the largest datagram (-S all), byte-exact.
case_dgram() { PP_MIN_ROWS=20 _pingpong dgram -p xvi -e dgram -S all; }

# Reliable, tagged-capable endpoints from ofi_rxd over xvi datagrams:
# messages up to 1 MiB, segmented by rxd into datagrams.
case_rdm() { PP_MIN_ROWS=30 _pingpong rdm -p 'xvi;ofi_rxd' -e rdm -S all; }

case_mpi() {
	local out=$T_TMP/mpi.out rc
	t_need "$T_B/tests/mpi_check" || return 1
	command -v mpirun >/dev/null || { fail "mpirun missing: install openmpi-bin (make deps)"
		return 1; }
	bash "$T_ROOT/tests/mpi/lab-mpirun" --name "$T_LAB" --transport xvi -T 120 \
		"$T_B/tests/mpi_check" 20 >"$out" 2>&1 && rc=0 || rc=$?
	sed 's/^/# mpi: /' "$out" | tail -14 >&2
	[ $rc = 0 ] || { fail "mpirun exit $rc: $(grep -v '^pingpong' "$out" | tail -3 |
		tr '\n' ' ')"; return 1; }
	grep -q '^mpi_check: OK ranks 2$' "$out" ||
		{ fail "mpi_check did not report OK for 2 ranks: $(tail -2 "$out" | tr '\n' ' ')"
		return 1; }
	# The job must have used the provider: the ping-pong rows came back.
	[ "$(grep -c '^pingpong ' "$out")" -ge 11 ] || { fail "ping-pong rows missing"; return 1; }
}

case_cq() {
	local srv=$T_TMP/cq.srv cli=$T_TMP/cq.cli rs rc
	t_need "$T_B/tests/fi_check" || return 1
	t_x -T 30 b "$T_B/tests/fi_check" server 198.18.0.2 198.18.0.1 >"$srv" 2>&1 &
	local pid=$!
	t_wait_endpoint_port b 7300 || { t_stop $pid
		fail "fi_check server's endpoint never came up: $(tail -2 "$srv")"; return 1; }
	t_x -T 30 a "$T_B/tests/fi_check" client 198.18.0.1 198.18.0.2 >"$cli" 2>&1 &&
		rc=0 || rc=$?
	[ $rc = 0 ] || t_stop $pid
	wait $pid && rs=0 || rs=$?
	[ $rc = 0 ] && [ $rs = 0 ] && grep -q 'fi_check: OK' "$srv" ||
		{ fail "fi_check client $rc, server $rs:" \
			"$(grep -h fi_check "$cli" "$srv" | tail -2 | tr '\n' ' ')"
		return 1; }
}

case_bad_iface() {
	local out rc
	out=$(t_x b env FI_XVI_IFACE=nosuch0 fi_info -p xvi 2>&1) && rc=0 || rc=$?
	[ $rc != 0 ] || { fail "fi_info accepted FI_XVI_IFACE=nosuch0: ${out:0:200}"; return 1; }
	grep -q 'FI_XVI_IFACE=nosuch0' <<<"$out" ||
		{ fail "no message naming FI_XVI_IFACE: ${out:0:300}"; return 1; }
}

# shellcheck disable=SC2034 # read by t_main
CASES=(
	info		case_info	"fi_info lists xvi (DGRAM on xv0) and xvi;ofi_rxd (RDM)"
	dgram		case_dgram	"fi_pingpong -p xvi -e dgram -c -S all, a -> b"
	rdm		case_rdm	"fi_pingpong -p 'xvi;ofi_rxd' -e rdm -c -S all, a -> b"
	mpi		case_mpi	"Open MPI, 2 ranks (a, b), OFI MTL on xvi;ofi_rxd: mpi_check"
	cq		case_cq		"fi_check: sread, readfrom, iovecs, cancel, truncation"
	bad_iface	case_bad_iface	"FI_XVI_IFACE naming no interface: refused, named"
)

t_main "$@"
