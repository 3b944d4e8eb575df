#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# ext.sh: active-message handlers (docs/EXTENSIONS.md) on node b's
# datapath, loaded by root with `xdp-vi ext`.  An endpoint (xvi-cat) on
# b holds 198.18.0.2:7400; node a's kernel UDP socket sends it active
# messages.  With the echo handler loaded as index 1, every message comes
# back from b's XDP and the endpoint's process receives none of them.
# Then the verifier's rejection, the unload (messages reach the endpoint
# again, counted), and nothing left behind.
#
# The datapath's maps are pinned in a bpffs under the lab's state
# directory, visible to every `ip netns exec` (which hides /sys/fs/bpf):
# loaded handlers live as long as that pin.  The cases build on each other
# in table order.

. "$(dirname "$0")/_tap.sh"

PORT=7400
EP=198.18.0.2:$PORT
ECHO=$T_B/ext/echo.bpf.o
REJECT=$T_B/tests/ext_reject.bpf.o
BPFFS=
CAT_PID=
ECHO_ID=

# xdp-vi on b with the suite's bpffs.
_xb() { t_xdpvi b --bpffs "$BPFFS" "$@"; }

# The endpoint's values NAME... ("counters.rx_frames", "ext.ext_msgs").
_ep_field() {
	_xb status --json >"$T_TMP/st.json" 2>/dev/null || return 1
	"$PY" "$T_HELPERS/xvi_status.py" "$T_TMP/st.json" field "$PORT" "$@"
}

t_setup() {
	t_need "$XDPVI" "$XVICAT" || return 1
	local o err
	for o in "$ECHO" "$REJECT"; do
		[ -r "$o" ] || fail "${o#"$T_ROOT"/} missing: build it (make B=${B})" || return
	done
	t_lab_up ext || return 1
	BPFFS=$LAB_STATE/$T_LAB/ext-bpffs
	mkdir -p "$BPFFS" && mount -t bpf bpf "$BPFFS" ||
		fail "cannot mount a bpffs on $BPFFS" || return
	err=$(_xb attach "$LAB_IFACE" 2>&1 >/dev/null) ||
		fail "xdp-vi attach on node b failed: ${err//$'\n'/ }" || return
	# A handler's XDP_TX reply crosses b's veth into a's, which takes
	# frames from XDP only while it runs XDP itself (docs/KERNEL.md,
	# fact 7): the datapath on a, which passes the replies to a's kernel.
	t_attach a
}

case_load() {
	local err
	# The endpoint: one ordinary datagram ends it (see unload).
	t_x -T 120 b "$XVICAT" -u --iface "$LAB_IFACE" -l 198.18.0.2 "$PORT" -c 1 -w 110 \
		>"$T_TMP/cat.out" 2>"$T_TMP/cat.err" &
	CAT_PID=$!
	t_wait_endpoint_port b "$PORT" ||
		fail "endpoint on b:$PORT never came up: $(head -c 200 "$T_TMP/cat.err")" || return
	err=$(_xb ext load "$LAB_IFACE" "$ECHO" --endpoint "$EP" --handler 1 2>&1) ||
		fail "ext load failed: ${err//$'\n'/ }" || return
	_xb ext list "$LAB_IFACE" --json >"$T_TMP/list.json" 2>&1 ||
		fail "ext list failed: $(head -c 200 "$T_TMP/list.json")" || return
	ECHO_ID=$("$PY" -c 'import json,sys
l = json.load(open(sys.argv[1]))
print(" ".join("%s:%d:%d:%s" % (e["endpoint"], e["handler"], e["prog_id"], e["prog_name"])
               for e in l))' "$T_TMP/list.json")
	[[ $ECHO_ID == "udp4 $EP:1:"*":xvi_echo" ]] ||
		fail "ext list shows '$ECHO_ID', expected the echo handler at index 1" || return
	ECHO_ID=${ECHO_ID#udp4 "$EP":1:}
	ECHO_ID=${ECHO_ID%%:*}
}

case_echo() {
	local out before after
	before=$(_ep_field ext.ext_msgs counters.rx_frames) || fail "no status for b:$PORT" || return
	out=$(t_x -T 60 a "$PY" "$T_HELPERS/am_client.py" 198.18.0.2 "$PORT" 1 --count 20 \
		--expect-echo 2>&1) || fail "echo: $out" || return
	after=$(_ep_field ext.ext_msgs counters.rx_frames) || fail "no status for b:$PORT" || return
	read -r m0 r0 <<<"$before"
	read -r m1 r1 <<<"$after"
	[ $((m1 - m0)) -eq 20 ] || fail "ext_msgs moved by $((m1 - m0)), expected 20" || return
	# Answered in XDP: the endpoint's socket got none of them.
	[ "$r1" = "$r0" ] || fail "the endpoint received $((r1 - r0)) of the messages" || return
	[ ! -s "$T_TMP/cat.out" ] || fail "xvi-cat printed: $(head -c 80 "$T_TMP/cat.out")"
}

# Per-handler counters in status: the echo handler's runs and replies.
_echo_counts() {
	_xb status --json >"$T_TMP/st.json" 2>/dev/null || return 1
	"$PY" "$T_HELPERS/trace_check.py" handler "$T_TMP/st.json" "$PORT" 1 runs reply other
}

# xdp-vi trace while a's kernel sends 20 active messages that the echo
# handler answers: 20 events live, in the pcap (read back by tcpdump), in
# its side file and in the SVG; tracing off again once it ends (--count).
case_trace() {
	local pid out rc before after r0 p0 r1 p1 o1
	local tr=$T_TMP/trace
	t_need "$(command -v tcpdump)" || return
	before=$(_echo_counts) || fail "no status for b:$PORT" || return
	t_x -T 120 b "$XDPVI" --bpffs "$BPFFS" trace "$LAB_IFACE" --count 20 --duration 100 \
		--pcap "$tr.pcap" --plot "$tr.svg" >"$tr.out" 2>"$tr.err" &
	pid=$!
	t_wait_grep "$tr.err" "tracing $LAB_IFACE" ||
		{ t_stop $pid; fail "trace never started: $(head -c 300 "$tr.err")"; return 1; }
	out=$(t_x -T 60 a "$PY" "$T_HELPERS/am_client.py" 198.18.0.2 "$PORT" 1 --count 20 \
		--expect-echo 2>&1) || { t_stop $pid; fail "echo under trace: $out"; return 1; }
	wait $pid && rc=0 || rc=$?
	[ $rc -eq 0 ] || fail "trace exited $rc: $(head -c 300 "$tr.err")" || return
	grep -q "20 events, 0 lost" "$tr.err" ||
		fail "trace summary: $(tail -1 "$tr.err")" || return
	tcpdump -r "$tr.pcap" -nn >"$tr.pcap.txt" 2>"$tr.tcpdump.err" ||
		fail "tcpdump -r: $(head -c 200 "$tr.tcpdump.err")" || return
	out=$("$PY" "$T_HELPERS/trace_check.py" files "$tr.out" "$tr.pcap.txt" \
		"$tr.pcap.events" "$tr.svg" --count 20 --endpoint "udp4 $EP" --handler 1 \
		--action reply --len 122 --reply-from "198.18.0.2.$PORT" 2>&1) ||
		fail "${out//$'\n'/; }" || return
	_xb status --json >"$T_TMP/st.json" 2>/dev/null
	grep -q '"tracing": false' "$T_TMP/st.json" ||
		fail "tracing still on after the trace ended" || return
	after=$(_echo_counts) || fail "no status for b:$PORT" || return
	read -r r0 p0 _ <<<"$before"
	read -r r1 p1 o1 <<<"$after"
	[ $((r1 - r0)) -eq 20 ] && [ $((p1 - p0)) -eq 20 ] && [ "$o1" -eq 0 ] ||
		fail "handler 1: runs +$((r1 - r0)) reply +$((p1 - p0)) other $o1, expected +20 +20 0"
}

# A second trace of a traced interface is refused; SIGINT ends a trace
# cleanly, tracing off.  No --count or --duration: only the signal ends it
# (t_x's timeout would, but then exits 124).
case_trace_stop() {
	local pid rc err
	local tr=$T_TMP/trace2
	t_x -T 120 b "$XDPVI" --bpffs "$BPFFS" trace "$LAB_IFACE" >"$tr.out" 2>"$tr.err" &
	pid=$!
	t_wait_grep "$tr.err" "tracing $LAB_IFACE" ||
		{ t_stop $pid; fail "trace never started: $(head -c 300 "$tr.err")"; return 1; }
	err=$(_xb trace "$LAB_IFACE" --count 1 --pcap "$tr.refused.pcap" 2>&1) && rc=0 || rc=$?
	[ $rc -ne 0 ] && [[ $err == *"a trace is running already"* ]] ||
		{ t_stop $pid; fail "second trace: exit $rc: $err"; return 1; }
	[ ! -e "$tr.refused.pcap" ] ||
		{ t_stop $pid; fail "the refused trace left its pcap file"; return 1; }
	# timeout (t_x) passes the signal on to xdp-vi.
	pkill -INT -P "$pid"
	wait $pid && rc=0 || rc=$?
	[ $rc -eq 0 ] || fail "trace exited $rc on SIGINT: $(head -c 300 "$tr.err")" || return
	grep -q "0 events, 0 lost" "$tr.err" || fail "summary: $(tail -1 "$tr.err")" || return
	_xb status --json >"$T_TMP/st.json" 2>/dev/null
	grep -q '"tracing": false' "$T_TMP/st.json" || fail "tracing still on after SIGINT"
}

case_reject() {
	local err rc
	err=$(_xb ext load "$LAB_IFACE" "$REJECT" --endpoint "$EP" --handler 2 2>&1) &&
		rc=0 || rc=$?
	[ $rc -ne 0 ] || fail "the verifier accepted a handler that reads past data_end" || return
	[[ $err == *"verifier log"* && $err == *"invalid access to packet"* ]] ||
		fail "no verifier log in the error: $(head -c 300 <<<"$err")" || return
	_xb ext list "$LAB_IFACE" --json >"$T_TMP/list.json" 2>&1
	! grep -q '"handler":2' "$T_TMP/list.json" || fail "a rejected handler is listed" || return
}

case_load_twice() {
	local err rc
	err=$(_xb ext load "$LAB_IFACE" "$ECHO" --endpoint "$EP" --handler 1 2>&1) &&
		rc=0 || rc=$?
	[ $rc -ne 0 ] || fail "a second load at a taken index succeeded" || return
	[[ $err == *"already"* ]] || fail "error does not say the index is taken: $err"
}

case_unknown_endpoint() {
	local err rc
	err=$(_xb ext load "$LAB_IFACE" "$ECHO" --endpoint 198.18.0.2:7499 --handler 1 2>&1) &&
		rc=0 || rc=$?
	[ $rc -ne 0 ] || fail "a handler loaded for an endpoint nobody holds" || return
	[[ $err == *"no endpoint 198.18.0.2:7499"* ]] || fail "error does not name it: $err"
}

case_unload() {
	local err m0 m1 rc
	err=$(_xb ext unload "$LAB_IFACE" --endpoint "$EP" --handler 1 2>&1) ||
		fail "ext unload failed: ${err//$'\n'/ }" || return
	_xb ext list "$LAB_IFACE" --json >"$T_TMP/list.json" 2>&1
	[ "$(cat "$T_TMP/list.json")" = "[]" ] ||
		fail "handlers listed after unload: $(cat "$T_TMP/list.json")" || return
	m0=$(_ep_field ext.ext_missing) || fail "no status for b:$PORT" || return
	# Now an ordinary delivery: the endpoint gets it and exits (-c 1).
	err=$(t_x -T 30 a "$PY" "$T_HELPERS/am_client.py" 198.18.0.2 "$PORT" 1 --count 1 \
		--token unloaded 2>&1) || fail "send: $err" || return
	wait "$CAT_PID" && rc=0 || rc=$?
	CAT_PID=
	grep -q "xvi-am 0 unloaded" "$T_TMP/cat.out" ||
		fail "the endpoint did not get the message (exit $rc): $(head -c 200 "$T_TMP/cat.err")" ||
		return
	m1=$(_ep_field ext.ext_missing 2>/dev/null) || m1=
	# The endpoint may be gone by now (and its counters with it).
	[ -z "$m1" ] || [ "$m1" = "$((m0 + 1))" ] || [ "$m1" = "-" ] ||
		fail "ext_missing $m0 -> $m1, expected one more" || return
}

# Node a's datapath has no pins (attached with no bpffs in sight): a handler
# would vanish with the loader, so the load is refused and says why.
case_unpinned() {
	local err rc pid
	t_x -T 60 a "$XVICAT" -u --iface "$LAB_IFACE" -l 198.18.0.1 "$PORT" -c 1 -w 50 \
		>/dev/null 2>"$T_TMP/cat-a.err" &
	pid=$!
	t_wait_endpoint_port a "$PORT" ||
		{ t_stop $pid; fail "endpoint on a:$PORT never came up: $(head -c 200 "$T_TMP/cat-a.err")"
		  return 1; }
	err=$(t_xdpvi a ext load "$LAB_IFACE" "$ECHO" --endpoint "198.18.0.1:$PORT" --handler 1 \
		2>&1) && rc=0 || rc=$?
	t_stop $pid
	[ $rc -ne 0 ] || fail "a handler was loaded into an unpinned table" || return
	[[ $err == *"not pinned"* ]] || fail "error does not say the table is not pinned: $err"
}

case_nothing_left() {
	local err
	[ -z "$CAT_PID" ] || t_stop "$CAT_PID"
	err=$(_xb detach "$LAB_IFACE" 2>&1 >/dev/null) || fail "detach failed: $err" || return
	t_xdpvi a detach "$LAB_IFACE" >/dev/null 2>&1
	t_pins_released "$BPFFS" "$ECHO_ID" "the echo handler, unloaded,"
}

# shellcheck disable=SC2034 # read by t_main
CASES=(
	load		case_load		"ext load: the echo handler for b's endpoint, listed"
	echo		case_echo		"20 active messages from a's kernel socket answered in XDP"
	trace		case_trace		"xdp-vi trace: 20 echoes live, in pcap, events file, SVG; counters"
	trace_stop	case_trace_stop		"a second trace is refused; SIGINT ends a trace, tracing off"
	reject		case_reject		"a handler the verifier rejects: refused with its log"
	load_twice	case_load_twice		"a second handler at a taken index is refused"
	unknown_endpoint case_unknown_endpoint	"a handler for an endpoint nobody holds is refused"
	unload		case_unload		"ext unload: messages reach the endpoint again, counted"
	unpinned	case_unpinned		"a load into an unpinned handler table is refused, saying why"
	nothing_left	case_nothing_left	"after unload and detach: no handler program, no pins"
)

t_main "$@"
