#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# lifetime.sh: an endpoint dies with SIGKILL (no chance to clean up); within
# 1 s `xdp-vi status` no longer shows it, its port can be opened again at
# once and works, and detach afterwards leaves nothing.

. "$(dirname "$0")/_tap.sh"

PORT=7100
PID=
MAP_IDS=

t_setup() {
	t_need "$XDPVI" "$XVICAT" || return 1
	t_lab_up lt || return 1
	t_attach b || return 1
	MAP_IDS=$(t_prog_map_ids b | tr '\n' ' ')
}

# Start xvi-cat listening on node b; its real pid (not timeout's) in $PID.
_listen() {
	local tag=$1 pidf=$T_TMP/cat-$1.pid
	rm -f "$pidf"
	t_x -T 90 b sh -c 'echo $$ >"$0"; exec "$@"' "$pidf" \
		"$XVICAT" -u --iface "$LAB_IFACE" -l 198.18.0.2 "$PORT" -c 1 -w 60 \
		>"$T_TMP/cat-$tag.out" 2>"$T_TMP/cat-$tag.err" &
	t_wait_file "$pidf" || { fail "could not start xvi-cat"; return 1; }
	PID=$(<"$pidf")
}

# The pids of every endpoint `xdp-vi status --json` lists on node b.
_status_pids() {
	t_xdpvi b status --json >"$T_TMP/st.json" 2>"$T_TMP/st.err" || return 1
	t_json_values "$T_TMP/st.json" pid
}

case_listed() {
	_listen first || return 1
	for _ in $(seq "$T_WAIT_TENTHS"); do
		_status_pids | grep -qx "$PID" && return 0
		kill -0 "$PID" 2>/dev/null ||
			fail "xvi-cat exited early: $(head -c 200 "$T_TMP/cat-first.err")" || return
		sleep 0.1
	done
	fail "xdp-vi status --json never listed the endpoint of pid $PID"
}

case_kill9_gone() {
	[ -n "$PID" ] || fail "no endpoint to kill (case listed failed)" || return
	kill -9 "$PID" 2>/dev/null || fail "pid $PID already gone before kill -9" || return
	local t0
	t0=$(date +%s%N)
	# Status garbage-collects the dead owner's slot (the kernel already
	# removed its socket from the XSKMAP): poll, bounded.
	for _ in $(seq "$T_WAIT_TENTHS"); do
		_status_pids >"$T_TMP/pids" || { sleep 0.1; continue; }
		if ! grep -qx "$PID" "$T_TMP/pids"; then
			t_log "endpoint gone from status after $((($(date +%s%N) - t0) / 1000000)) ms"
			return 0
		fi
		sleep 0.1
	done
	fail "status --json still lists pid $PID after kill -9"
}

case_reopen() {
	local tok
	_listen second || return 1
	tok="reopen-$RANDOM$RANDOM"
	t_wait_endpoint_port b "$PORT" ||
		fail "port $PORT never reopened after kill -9: $(head -c 200 "$T_TMP/cat-second.err")" ||
		return
	t_x -T 30 a "$PY" "$T_HELPERS/udp_send.py" 198.18.0.2 "$PORT" --message "$tok"
	# xvi-cat exits after its one datagram (-c 1).
	for _ in $(seq "$T_WAIT_TENTHS"); do
		kill -0 "$PID" 2>/dev/null || break
		sleep 0.1
	done
	grep -q "$tok" "$T_TMP/cat-second.out" ||
		fail "port $PORT reopened after kill -9 but got nothing:" \
			"$(head -c 200 "$T_TMP/cat-second.err")" || return
}

case_detach_clean() {
	local err left
	err=$(t_xdpvi b detach "$LAB_IFACE" 2>&1 >/dev/null) || fail "xdp-vi detach failed: $err" || return
	[ "$(t_xdp_of b)" = none ] || fail "XDP program still on xv0 after detach" || return
	# shellcheck disable=SC2086
	left=$(t_ids_gone map $MAP_IDS) || fail "maps alive after detach: ids$left" || return
}

# shellcheck disable=SC2034 # read by t_main
CASES=(
	listed		case_listed		"an xvi-cat endpoint shows in status --json with its pid"
	kill9_gone	case_kill9_gone		"after kill -9 the endpoint leaves status within 1 s"
	reopen		case_reopen		"the same port opens again at once and receives"
	detach_clean	case_detach_clean	"detach after a killed endpoint leaves nothing"
)

t_main "$@"
