#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# multiq.sh: one UDP port spread over the receive queues of a 2-queue veth
# (XVI_EP_SPREAD), one endpoint and thread per queue.
#
#   node a: flows to 198.18.0.2:P          <--xv0 (2 queues)--xv0-->  node b: xdp-vi,
#           xvi-perf tp --threads 2                                     xvi-perf server
#           (queue i -> b's queue i), or                                --threads 2: one
#           32 kernel sockets (spread by hash)                          endpoint per queue
#
# Each endpoint must receive exactly the flows that arrived on its queue:
# every message of every flow arrives (counted per endpoint, by the server),
# no flow is split across endpoints or shows up where it was not sent, and
# both endpoints get traffic.  Another process, or an endpoint without the
# flag, cannot take the spread port; closing the last member leaves no
# entry in the endpoint table.  Waits are on `xdp-vi status`, bounded.

. "$(dirname "$0")/_tap.sh"

QUEUES=2
SRV_PID=
SRV_WRAP=

t_setup() {
	t_need "$XDPVI" "$XVIPERF" || return 1
	T_LAB=$(t_lab_name mq)
	lab_up --name "$T_LAB" --queues $QUEUES || { fail "lab_up --queues $QUEUES failed"; return 1; }
	lab_at_exit "_srv_stop"
	t_attach b && t_attach a
}

# _srv_start PORT [ARGS]: xvi-perf server --threads 2 [ARGS] on b; waits
# (bounded) until both endpoints are published.  Its JSON goes to
# $T_TMP/srvPORT.json.
_srv_start() {
	local port=$1 n
	shift
	rm -f "$T_TMP/srv.pid"
	# shellcheck disable=SC2016 # expanded by the inner shell
	t_x -T 60 b sh -c 'echo $$ >"$0"; exec "$@"' "$T_TMP/srv.pid" "$XVIPERF" server \
		--iface "$LAB_IFACE" --threads $QUEUES -p "$port" -t 50 --json "$@" \
		>"$T_TMP/srv$port.json" 2>"$T_TMP/srv$port.err" &
	SRV_WRAP=$!
	for _ in $(seq "$T_WAIT_TENTHS"); do
		t_xdpvi b status --json >"$T_TMP/st.json" 2>/dev/null &&
			n=$("$PY" "$T_HELPERS/xvi_status.py" "$T_TMP/st.json" endpoints |
				awk -v p="$port" '$1 == p' | wc -l) &&
			[ "$n" = $QUEUES ] && "$PY" "$T_HELPERS/xvi_status.py" "$T_TMP/st.json" live "$port" &&
			{ SRV_PID=$(<"$T_TMP/srv.pid"); return 0; }
		kill -0 "$SRV_WRAP" 2>/dev/null || break
		sleep 0.1
	done
	fail "the spread server on port $port did not come up: $(tail -3 "$T_TMP/srv$port.err")"
}

# Stop the server (SIGTERM: it prints its summaries and exits) and reap it.
_srv_stop() {
	[ -n "$SRV_PID" ] && kill -TERM "$SRV_PID" 2>/dev/null
	[ -n "$SRV_WRAP" ] && wait "$SRV_WRAP" 2>/dev/null
	SRV_PID=
	SRV_WRAP=
}

# _check PORT FLOWS [--queue-is-flow]: the server's per-endpoint counts
# against the flows' "port sent" lines.
_check() {
	local out rc
	out=$("$PY" "$T_HELPERS/spread_check.py" "$T_TMP/srv$1.json" "$2" ${3:+"$3"} 2>&1) &&
		rc=0 || rc=1
	t_log "${out//$'\n'/; }"
	[ $rc = 0 ] || fail "port $1: ${out//$'\n'/; }"
}

case_queues() {
	local n out
	for n in a b; do
		out=$(t_x "$n" ethtool -l "$LAB_IFACE" 2>&1)
		[ "$(sed -n '/Current/,$p' <<<"$out" | grep -c "^[RT]X:[[:space:]]*$QUEUES$")" = 2 ] ||
			{ fail "node $n: ethtool -l does not show $QUEUES RX and TX queues: ${out//$'\n'/ }"; return 1; }
	done
}

# docs/KERNEL.md, fact 41: kernel flows spread over b's receive queues.
case_kernel_spread() {
	local before after q moved=0 d
	before=$(t_x b ethtool -S "$LAB_IFACE" | awk '/rx_queue_[0-9]+_xdp_packets/ { print $2 }')
	t_x a "$PY" "$T_HELPERS/sp_flows.py" 198.18.0.2 7399 32 10 >/dev/null ||
		{ fail "the kernel senders failed"; return 1; }
	after=$(t_x b ethtool -S "$LAB_IFACE" | awk '/rx_queue_[0-9]+_xdp_packets/ { print $2 }')
	for q in $(seq $QUEUES); do
		d=$(( $(sed -n "${q}p" <<<"$after") - $(sed -n "${q}p" <<<"$before") ))
		t_log "queue $((q - 1)): $d frames"
		[ "$d" -gt 0 ] && moved=$((moved + 1))
	done
	[ $moved = $QUEUES ] || fail "32 kernel flows reached $moved of $QUEUES queues"
}

case_spread_xvi_flows() {
	local out
	_srv_start 7300 || return 1
	out=$(t_x -T 30 a "$XVIPERF" tp --iface "$LAB_IFACE" --threads $QUEUES -i 198.18.0.2 \
		-p 7300 -m 64 -t 0.5 --mps 20000 2>&1)
	t_log "${out//$'\n'/ | }"
	# "thread I, queue Q, port P: sent N, ..." -> "P N", in queue order
	sed -n 's/^xvi-perf: thread [0-9]*, queue [0-9]*, port \([0-9]*\): sent \([0-9]*\),.*/\1 \2/p' \
		<<<"$out" >"$T_TMP/xvi.flows"
	_wait_received 7300 "$(awk '{ s += $2 } END { print s + 0 }' "$T_TMP/xvi.flows")"
	_srv_stop
	[ "$(wc -l <"$T_TMP/xvi.flows")" = $QUEUES ] ||
		{ fail "the client did not run $QUEUES flows: $out"; return 1; }
	_check 7300 "$T_TMP/xvi.flows" --queue-is-flow
}

# Wait (bounded) until the datapath delivered N frames to PORT's endpoints
# (their rings: the server, stopped, takes what is there before it counts).
_wait_received() {
	local port=$1 want=$2 got=0
	for _ in $(seq "$T_WAIT_TENTHS"); do
		t_xdpvi b status --json >"$T_TMP/st.json" 2>/dev/null &&
			got=$("$PY" "$T_HELPERS/xvi_status.py" "$T_TMP/st.json" counters "$port" \
				rx_frames | awk '{ s += $1 } END { print s + 0 }') &&
			[ "${got:-0}" -ge "$want" ] && return 0
		sleep 0.1
	done
	t_log "port $port: the datapath delivered $got of $want"
}

case_spread_kernel_flows() {
	_srv_start 7301 || return 1
	t_x a "$PY" "$T_HELPERS/sp_flows.py" 198.18.0.2 7301 32 50 >"$T_TMP/k.flows" ||
		{ _srv_stop; fail "the kernel senders failed"; return 1; }
	_wait_received 7301 1600
	_srv_stop
	_check 7301 "$T_TMP/k.flows"
}

# A stream listener per queue: connection i leaves a's queue i, reaches b's
# queue i (fact 41), and the context of that queue owns it from its SYN on.
case_spread_streams() {
	local out rc
	_srv_start 7303 --stream || return 1
	t_x -T 60 a "$XVIPERF" tp --stream --iface "$LAB_IFACE" --threads $QUEUES \
		-i 198.18.0.2 -p 7303 -m 1000 -t 0.5 --json >"$T_TMP/scli.json" \
		2>"$T_TMP/scli.err" && rc=0 || rc=$?
	_srv_stop
	t_log "client: $(tr '\n' ' ' <"$T_TMP/scli.err")"
	[ $rc = 0 ] || { fail "the stream client exited $rc: $(tail -3 "$T_TMP/scli.err")"; return 1; }
	out=$("$PY" "$T_HELPERS/spread_stream_check.py" "$T_TMP/srv7303.json" "$T_TMP/scli.json" \
		2>&1) && rc=0 || rc=1
	t_log "${out//$'\n'/; }"
	[ $rc = 0 ] || fail "${out//$'\n'/; }"
}

case_spread_rules() {
	local out rc
	_srv_start 7302 || return 1
	out=$(t_x b "$XVIPERF" server --iface "$LAB_IFACE" -p 7302 -t 1 2>&1) && rc=0 || rc=$?
	t_log "not spread: ${out//$'\n'/ | }"
	if [ $rc = 0 ] || [[ $out != *"pid $SRV_PID"* ]]; then
		_srv_stop
		fail "an endpoint without XVI_EP_SPREAD on the spread port: exit $rc: $out"
		return 1
	fi
	out=$(t_x b "$XVIPERF" server --iface "$LAB_IFACE" --threads 2 --queue 0 -p 7302 -t 1 2>&1) &&
		rc=0 || rc=$?
	t_log "other process: ${out//$'\n'/ | }"
	_srv_stop
	if [ $rc = 0 ] || [[ $out != *"spread over queues by pid $SRV_PID"* ]]; then
		fail "another process's spread endpoint on the port: exit $rc: $out"
	fi
}

# The servers are gone: no endpoint, and no entry left in the endpoint
# table (a spread port's own entry goes with its last member).
case_nothing_left() {
	local id ids n
	_srv_stop
	t_xdpvi b status --json >"$T_TMP/st.json" 2>/dev/null || { fail "xdp-vi status failed"; return 1; }
	n=$("$PY" "$T_HELPERS/xvi_status.py" "$T_TMP/st.json" endpoints | wc -l)
	[ "$n" = 0 ] || { fail "status still lists $n endpoints"; return 1; }
	mapfile -t ids < <(t_prog_map_ids b)
	for id in "${ids[@]}"; do
		[ "$(t_map_names "$id")" = xvi_endpoints ] || continue
		n=$(bpftool -j map dump id "$id" 2>/dev/null | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)))')
		[ "$n" = 0 ] || fail "xvi_endpoints holds $n entries after the last endpoint closed"
		return
	done
	fail "no xvi_endpoints map among the program's maps (${ids[*]})"
}

# shellcheck disable=SC2034 # read by t_main
CASES=(
	queues		case_queues		"lab up --queues $QUEUES: ethtool -l shows $QUEUES RX and TX queues on a and b"
	kernel_spread	case_kernel_spread	"32 kernel UDP flows from a reach every receive queue of b"
	spread_xvi	case_spread_xvi_flows	"2 xvi flows (a's queue i -> b's queue i): each arrives whole at its queue's endpoint"
	spread_kernel	case_spread_kernel_flows "32 kernel flows: all 1600 messages arrive, each flow at one endpoint, both get some"
	spread_streams	case_spread_streams	"2 stream connections (a's queue i -> b's queue i): each listener's context carries its queue's, every byte counted"
	spread_rules	case_spread_rules	"the spread port refuses an endpoint without the flag and another process, naming the holder"
	nothing_left	case_nothing_left	"after the last member closes: no endpoint, an empty endpoint table"
)
# shellcheck disable=SC2034 # read by t_main
CASES_ALWAYS=(nothing_left)

t_main "$@"
