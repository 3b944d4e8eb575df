#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# sockperf.sh: wire compatibility with an unmodified sockperf 3.7.
#   - sockperf ping-pong (node a, kernel) against xvi-perf server (node b);
#   - xvi-perf ping-pong (node b, xvi endpoint) against sockperf server (a);
#   - xvi-perf --kernel against sockperf server, for comparison.
# A case fails when no reply came back (sockperf itself exits 0 then).

. "$(dirname "$0")/_tap.sh"

t_setup() {
	t_need "$XDPVI" "$XVIPERF" || return 1
	command -v sockperf >/dev/null || { fail "sockperf not installed (make deps)"; return 1; }
	t_lab_up sp || return 1
	t_attach b
}

# Received messages in a sockperf client's output (its [Valid Duration]
# line), 0 if none; colour escapes stripped.
_sockperf_received() {
	sed -e 's/\x1b\[[0-9;]*m//g' "$1" |
		sed -n 's/.*\[Valid Duration\].*ReceivedMessages=\([0-9]*\).*/\1/p' | head -1
}

case_sockperf_to_xvi() {
	local srv=$T_TMP/xvi-server.json cli=$T_TMP/sockperf-client.out n obs
	t_x -T 90 b "$XVIPERF" server --iface "$LAB_IFACE" -i 198.18.0.2 -p 11111 -t 80 --json \
		>"$srv" 2>"$srv.err" &
	local pid=$!
	t_wait_endpoint_port b 11111 || { _lab_kill_ns "$(_lab_ns "$T_LAB" b)"; wait $pid
		fail "xvi-perf server never came up: $(head -c 200 "$srv.err")"; return 1; }
	t_x -T 30 a sockperf ping-pong -i 198.18.0.2 -p 11111 -t 2 >"$cli" 2>&1
	# SIGTERM makes the server print its summary and exit.
	_lab_kill_ns "$(_lab_ns "$T_LAB" b)"
	wait $pid
	sed -e 's/\x1b\[[0-9;]*m//g' "$cli" >&2
	n=$(_sockperf_received "$cli")
	obs=$(sed -e 's/\x1b\[[0-9;]*m//g' "$cli" | sed -n 's/.*Total \([0-9]*\) observations.*/\1/p')
	if [ "${n:-0}" -le 0 ] || [ "${obs:-0}" -le 0 ]; then
		fail "sockperf got no replies from xvi-perf server" \
			"($(grep -m1 -iE 'no messages|error' "$cli")) server: $(head -c 200 "$srv.err")"
		return 1
	fi
	t_is_json "$srv" || fail "xvi-perf server --json output is not JSON: $(head -c 200 "$srv")" ||
		return
	n=$(t_json_values "$srv" received | head -1)
	[ "${n:-0}" -gt 0 ] || fail "xvi-perf server reports received=${n:-none}" || return
	t_log "sockperf -> xvi-perf server: $obs observations, server received $n"
}

# xvi-perf ping-pong against a sockperf server on node a; $@ = extra options.
_xviperf_to_sockperf() {
	local port=$1 out=$T_TMP/xvi-client-$1.json n
	shift
	t_x -T 90 a sockperf server -i 198.18.0.1 -p "$port" >"$T_TMP/sockperf-srv-$port.out" 2>&1 &
	local pid=$!
	t_wait_udp_port a "$port" || { _lab_kill_ns "$(_lab_ns "$T_LAB" a)"; wait $pid 2>/dev/null
		fail "sockperf server never listened on $port"; return 1; }
	t_x -T 30 b "$XVIPERF" ping-pong -i 198.18.0.1 -p "$port" -t 2 --json "$@" \
		>"$out" 2>"$out.err"
	local rc=$?
	# The server runs until killed; stop it (and only it) now.
	_lab_kill_ns "$(_lab_ns "$T_LAB" a)"
	wait $pid 2>/dev/null
	t_is_json "$out" ||
		fail "xvi-perf ping-pong (exit $rc) printed no JSON: $(head -c 200 "$out.err")" ||
		return
	n=$(t_json_values "$out" received | head -1)
	[ "${n:-0}" -gt 0 ] ||
		fail "xvi-perf ping-pong got no replies from sockperf server: $(head -c 200 "$out.err")" ||
		return
	[ $rc -eq 0 ] || fail "xvi-perf ping-pong exit $rc with $n replies" || return
	t_log "xvi-perf $* -> sockperf server: received $n," \
		"p50 $(t_json_values "$out" p50 | head -1) usec"
}

case_xvi_to_sockperf() { _xviperf_to_sockperf 11112 --iface "$LAB_IFACE"; }
case_kernel_to_sockperf() { _xviperf_to_sockperf 11113 --kernel; }

# shellcheck disable=SC2034 # read by t_main
CASES=(
	sockperf_to_xvi		case_sockperf_to_xvi	"sockperf ping-pong (a) -> xvi-perf server (b)"
	xvi_to_sockperf		case_xvi_to_sockperf	"xvi-perf ping-pong --iface xv0 (b) -> sockperf server (a)"
	kernel_to_sockperf	case_kernel_to_sockperf	"xvi-perf ping-pong --kernel (b) -> sockperf server (a)"
)

t_main "$@"
