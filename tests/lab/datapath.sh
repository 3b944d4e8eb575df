#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# datapath.sh: `xdp-vi attach/detach/status/stats` on node b's xv0, and the
# kernel's own traffic (ICMP, TCP) untouched while the datapath is attached.
# Cases run in table order and build on each other (attach first, detach
# last).

. "$(dirname "$0")/_tap.sh"
# The NAPI cases expect attach's own default.
unset XVI_NAPI

PROG_ID=		# kernel prog id on xv0 after attach
MAP_IDS=		# ids of the maps of the attached program

t_setup() {
	t_need "$XDPVI" || return 1
	t_lab_up dp
}

case_attach() {
	t_attach b || return 1
	local x
	x=$(t_xdp_of b)
	[ "$x" != none ] || fail "attach returned 0 but ip link shows no XDP program on xv0" || return
	PROG_ID=${x#*:}
	MAP_IDS=$(t_prog_map_ids b | tr '\n' ' ')
	# Every map the control plane uses belongs to the program, the ones
	# the program never reads (xvi_owners) included: no pin keeps them.
	local names m
	# shellcheck disable=SC2086
	names=" $(t_map_names $MAP_IDS | tr '\n' ' ') "
	for m in xvi_endpoints xvi_xsks xvi_ep_stats xvi_global_stat xvi_owners xvi_devs \
		xvi_config; do
		[[ $names == *" $m "* ]] ||
			fail "map $m is not among the program's maps:$names" || return
	done
	t_log "prog $x, map ids: $MAP_IDS"
}

case_attach_again() {
	local err x
	err=$(t_xdpvi b attach "$LAB_IFACE" 2>&1 >/dev/null) ||
		fail "second attach failed (must be idempotent): ${err}" || return
	x=$(t_xdp_of b)
	[ "${x#*:}" = "$PROG_ID" ] ||
		fail "second attach replaced the program: id $PROG_ID before, $x after" || return
}

case_ping4() {
	t_ping a 198.18.0.2 || fail "a -> b 198.18.0.2: no echo reply with the datapath attached" || return
	t_ping b 198.18.0.1 || fail "b -> a 198.18.0.1: no echo reply with the datapath attached" || return
}

case_ping6() {
	t_ping a 2001:2::2 || fail "a -> b 2001:2::2: no echo reply with the datapath attached" || return
	t_ping b 2001:2::1 || fail "b -> a 2001:2::1: no echo reply with the datapath attached" || return
}

# 4 MiB of random bytes a -> b over TCP; the receiver's SHA-256 must match.
case_tcp() {
	rm -f "$T_TMP/tcp.ready"
	t_x -T 20 b "$PY" "$T_HELPERS/tcp_recv.py" 198.18.0.2 5201 "$T_TMP/tcp.ready" \
		>"$T_TMP/tcp.recv" 2>&1 &
	local rpid=$!
	t_wait_file "$T_TMP/tcp.ready" || { wait $rpid; fail "TCP receiver did not start"; return 1; }
	local sent got
	sent=$(t_x -T 20 a "$PY" "$T_HELPERS/tcp_send.py" 198.18.0.2 5201 --bytes $((4 << 20)) \
		2>&1) || {
		wait $rpid
		fail "TCP send a -> b failed: $sent" || return
		return 1
	}
	wait $rpid
	got=$(<"$T_TMP/tcp.recv")
	[ "$sent" = "$got" ] || fail "TCP a -> b: sent '$sent', received '$got'" || return
}

# Attach leaves a veth's NAPI alone; attached again with --napi thread,
# the NAPI is threaded (its receive work leaves the sending core), and
# status says so each time.
_napi_of() { t_x "$1" cat "/sys/class/net/$LAB_IFACE/threaded"; }
# _napi_is WANT(0|1): the threaded file and status --json agree on WANT.
_napi_is() {
	local out=$T_TMP/napi.json err v want=False
	[ "$1" = 1 ] && want=True
	v=$(_napi_of b) || fail "cannot read $LAB_IFACE's threaded file" || return
	[ "$v" = "$1" ] || fail "$LAB_IFACE's threaded file says $v, want $1" || return
	err=$(t_xdpvi b status "$LAB_IFACE" --json 2>&1 >"$out") ||
		fail "xdp-vi status --json failed: $err" || return
	v=$(t_json_values "$out" napi_threaded)
	[ "$v" = $want ] || fail "status --json says napi_threaded '$v', want $want" || return
}
case_napi_threaded() {
	local err
	_napi_is 0 || return
	err=$(t_xdpvi b attach --napi thread "$LAB_IFACE" 2>&1) ||
		fail "attach --napi thread failed: $err" || return
	[[ $err == *"NAPI threaded"* ]] || fail "attach --napi thread did not say so: $err" || return
	_napi_is 1 || return
	# Its thread runs SCHED_FIFO; a kernel before 6.8 cannot name it.
	# Only b's veth has a NAPI in this lab.
	if ! printf '%s\n6.8\n' "$(uname -r | cut -d- -f1)" | sort -V -C -r; then
		t_log "kernel $(uname -r) names no NAPI thread: $err"
		return 0
	fi
	local pids p
	pids=$(pgrep "^napi/$LAB_IFACE-") ||
		fail "no napi/$LAB_IFACE thread after attach --napi thread: $err" || return
	# shellcheck disable=SC2086 # one pid a word
	_napi_fifo $pids || return
	# Attach again puts a thread that lost it (a link flap makes new
	# ones at SCHED_OTHER) back to SCHED_FIFO.
	for p in $pids; do chrt -o -p 0 "$p"; done
	err=$(t_xdpvi b attach --napi thread "$LAB_IFACE" 2>&1) ||
		fail "second attach --napi thread failed: $err" || return
	# shellcheck disable=SC2086
	_napi_fifo $pids
}
_napi_fifo() {
	local p
	for p in "$@"; do
		chrt -p "$p" | grep -q SCHED_FIFO ||
			fail "NAPI thread $p is not SCHED_FIFO: $(chrt -p "$p" | tr '\n' ' ')" || return
	done
}

case_status_json() {
	local out=$T_TMP/status.json err
	err=$(t_xdpvi b status --json 2>&1 >"$out") || fail "xdp-vi status --json failed: $err" || return
	t_is_json "$out" || fail "status --json is not valid JSON: $(head -c 200 "$out")" || return
	grep -q "\"$LAB_IFACE\"" "$out" || fail "status --json does not name $LAB_IFACE" || return
	grep -q 'xvi_demux' "$out" || t_json_values "$out" prog_id | grep -qx "$PROG_ID" ||
		fail "status --json lists neither xvi_demux nor prog id $PROG_ID" || return
	err=$(t_xdpvi b status "$LAB_IFACE" --json 2>&1 >"$out") ||
		fail "xdp-vi status $LAB_IFACE --json failed: $err" || return
	t_is_json "$out" || fail "status $LAB_IFACE --json is not valid JSON" || return
}

case_stats_json() {
	local out=$T_TMP/stats.json err v
	err=$(t_xdpvi b stats "$LAB_IFACE" --json 2>&1 >"$out") ||
		fail "xdp-vi stats --json failed: $err" || return
	t_is_json "$out" || fail "stats --json is not valid JSON: $(head -c 200 "$out")" || return
	# The pings and the TCP transfer went through the program.
	v=$(t_json_values "$out" rx_frames | sort -n | tail -1)
	[ "${v:-0}" -gt 0 ] 2>/dev/null ||
		fail "stats --json shows no rx_frames > 0 after ping and TCP through xv0" || return
}

case_detach() {
	local err left
	err=$(t_xdpvi b detach "$LAB_IFACE" 2>&1 >/dev/null) || fail "xdp-vi detach failed: $err" || return
	[ "$(t_xdp_of b)" = none ] || fail "XDP program still on xv0 after detach: $(t_xdp_of b)" || return
	# shellcheck disable=SC2086
	left=$(t_ids_gone map $MAP_IDS) || fail "maps still alive after detach: ids$left" || return
	[ -z "$PROG_ID" ] || left=$(t_ids_gone prog "$PROG_ID") ||
		fail "program $PROG_ID still loaded after detach" || return
	return 0
}

# Detach made the NAPI softirq again; XVI_NAPI=thread threads it too.
case_napi_restored() {
	local v err rc
	v=$(_napi_of b) || fail "cannot read $LAB_IFACE's threaded file" || return
	[ "$v" = 0 ] || fail "detach left $LAB_IFACE's NAPI threaded ($v)" || return
	err=$(t_x b env XVI_NAPI=thread "$XDPVI" attach "$LAB_IFACE" 2>&1 >/dev/null) ||
		fail "attach with XVI_NAPI=thread failed: $err" || return
	v=$(_napi_of b)
	t_xdpvi b detach "$LAB_IFACE" >/dev/null 2>&1 || fail "detach after XVI_NAPI=thread failed" ||
		return
	[ "$v" = 1 ] || fail "attach with XVI_NAPI=thread left the NAPI in softirq ($v)" || return
	v=$(_napi_of b)
	[ "$v" = 0 ] || fail "detach left the NAPI that XVI_NAPI=thread made threaded ($v)" ||
		return
	err=$(t_x b env XVI_NAPI=sometimes "$XDPVI" attach "$LAB_IFACE" 2>&1 >/dev/null) && rc=0 ||
		rc=$?
	[ $rc != 0 ] || fail "attach with XVI_NAPI=sometimes succeeded" || return
	[[ $err == *XVI_NAPI=sometimes* ]] || fail "bad XVI_NAPI not named: '$err'" || return
	[ "$(t_xdp_of b)" = none ] || fail "attach refused for XVI_NAPI left a program" || return
}

# Under `ip netns exec a` then `nsenter --net` into b, /sys is a's, and
# both xv0 are ifindex 2: attach on b must not thread a's NAPI (which has
# one: a is attached too), and says why it leaves b's alone.
case_napi_other_ns() {
	local err rc=0 v
	t_attach a || return
	err=$(timeout -k 5 20 ip netns exec "$(_lab_ns "$T_LAB" a)" \
		nsenter --net="/run/netns/$(_lab_ns "$T_LAB" b)" \
		"$XDPVI" attach --napi thread "$LAB_IFACE" 2>&1) || rc=$?
	v=$(_napi_of a)
	t_xdpvi b detach "$LAB_IFACE" >/dev/null 2>&1
	t_xdpvi a detach "$LAB_IFACE" >/dev/null 2>&1
	[ $rc = 0 ] || fail "attach through nsenter failed: $err" || return
	[ "$v" = 0 ] || fail "attach on b threaded a's NAPI (a's threaded: $v)" || return
	[[ $err == *"another network namespace"* ]] ||
		fail "attach did not say /sys is another namespace's: $err" || return
}

case_attach_missing() {
	local err rc
	err=$(t_xdpvi b attach nosuch0 2>&1 >/dev/null) && rc=0 || rc=$?
	[ $rc -ne 0 ] || fail "attach to a missing interface succeeded" || return
	[ $rc -ne 124 ] || fail "attach to a missing interface hung (timeout)" || return
	[[ $err == *nosuch0* ]] || fail "error message does not name the interface: '$err'" || return
	# A map outlives the command only through an attached program (or a
	# pin, in a bpffs that dies with the command here); tests/run counts
	# maps globally too.
	[ "$(t_xdp_of b)" = none ] || fail "failed attach left a program on xv0" || return
}

# shellcheck disable=SC2034 # read by t_main
CASES=(
	attach		case_attach		"xdp-vi attach xv0 on node b: program on, every map bound to it"
	attach_again	case_attach_again	"a second attach is idempotent (exit 0, same program)"
	ping4		case_ping4		"IPv4 ping a <-> b with the datapath attached"
	ping6		case_ping6		"IPv6 ping a <-> b with the datapath attached"
	tcp		case_tcp		"4 MiB TCP transfer a -> b, checksum compared"
	napi_threaded	case_napi_threaded	"attach keeps a veth's NAPI; --napi thread threads it (SCHED_FIFO); status says so"
	status_json	case_status_json	"xdp-vi status --json is valid and lists the program"
	stats_json	case_stats_json		"xdp-vi stats --json is valid and counted the traffic"
	detach		case_detach		"detach leaves no program and no maps"
	napi_restored	case_napi_restored	"detach makes the NAPI softirq again; XVI_NAPI=thread, a bad XVI_NAPI"
	napi_other_ns	case_napi_other_ns	"attach under another namespace's /sys threads no NAPI, and says why"
	attach_missing	case_attach_missing	"attach to a missing interface fails, names it, leaves nothing"
)

t_main "$@"
