#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# extbroker.sh: handlers loaded by unprivileged owners through xdp-vid
# (docs/EXTENSIONS.md, "Loading through xdp-vid").
#
#   node a (kernel UDP socket:     <--xv0--xv0-->  node b (xdp-vi + xdp-vid;
#   am_client.py)                                  endpoints held by xvi-cat
#                                                  as plain uids A and B,
#                                                  handlers loaded by
#                                                  `xdp-vi ext load` as them)
#
# The policy grants ext to uid A on 7400-7409 and to uid B on 7420 only,
# at most 2 handlers per uid, 200 instructions, 1024 bytes of maps.  The
# echo handler's replies leave through the endpoint's guard.  Cases build
# on each other in table order.

. "$(dirname "$0")/_tap.sh"

XVID=$T_BIN/xdp-vid
RUN=$T_TMP/run			# XVI_RUN_DIR of daemon and clients
BIN=$T_TMP/bin			# what the plain uids run and load
VIDPID=
UIDA=$((42000 + $$ % 10000))
UIDB=$((UIDA + 1))
ASA=(setpriv --reuid=$UIDA --regid=65534 --clear-groups --inh-caps=-all)
ASB=(setpriv --reuid=$UIDB --regid=65534 --clear-groups --inh-caps=-all)
EPA=198.18.0.2:7400
ECHO_ID=
COUNT_ID=
PID_A=

# xdp-vi on b as the plain uid of setpriv array $1.
_xas() {
	local -n _as=$1
	shift
	t_x -T 60 b env XVI_RUN_DIR="$RUN" "${_as[@]}" "$BIN/xdp-vi" "$@"
}

_stop_vid() {
	t_stop "$VIDPID"
	VIDPID=
	rm -f "$RUN"/*.sock
}

# (Re)start the daemon on node b with $T_TMP/policy, until it serves; its
# log in $T_TMP/vid.log (this start's only: program ids are read there).
_start_vid() {
	[ -e "$T_TMP/vid.log" ] && cat "$T_TMP/vid.log" >>"$T_TMP/vid.old.log"
	rm -f "$T_TMP/vid.pid"
	t_x -T 600 b sh -c 'echo $$ >"$0"; exec "$@"' "$T_TMP/vid.pid" env XVI_RUN_DIR="$RUN" \
		"$XVID" -v --policy "$T_TMP/policy" "$LAB_IFACE" >"$T_TMP/vid.log" 2>&1 &
	t_wait_file "$T_TMP/vid.pid" || { fail "xdp-vid did not start"; return 1; }
	VIDPID=$(<"$T_TMP/vid.pid")
	t_wait_grep "$T_TMP/vid.log" "serving protected endpoints" ||
		fail "xdp-vid does not serve: $(tail -3 "$T_TMP/vid.log")"
}

# _listen NAME PORT SETPRIV-ARRAY: an endpoint held by xvi-cat as that uid
# (printing what reaches it), pid in PID_NAME, once live.
_listen() {
	local name=$1 port=$2 pidf=$T_TMP/l-$1.pid
	local -n _who=$3
	rm -f "$pidf"
	t_x -T 300 b sh -c 'echo $$ >"$0"; exec "$@"' "$pidf" env XVI_RUN_DIR="$RUN" \
		"${_who[@]}" "$BIN/xvi-cat" -u --iface "$LAB_IFACE" -l 198.18.0.2 "$port" -w 250 \
		>"$T_TMP/l-$name.out" 2>"$T_TMP/l-$name.err" &
	t_wait_file "$pidf" || return 1
	printf -v "PID_$name" '%s' "$(<"$pidf")"
	t_wait_endpoint_port b "$port" ||
		fail "endpoint $port never came up: $(head -c 200 "$T_TMP/l-$name.err")"
}

# The endpoint's values NAME... ("ext.ext_msgs") from b's status.
_ep_field() {
	t_xdpvi b status --json >"$T_TMP/st.json" 2>/dev/null || return 1
	"$PY" "$T_HELPERS/xvi_status.py" "$T_TMP/st.json" field "$1" "${@:2}"
}

# The program id of handler $2 of endpoint $1, from xdp-vid's log.
_prog_id() {
	sed -n "s/.*handler $2 of udp4 $1 is program \([0-9]*\).*/\1/p" "$T_TMP/vid.log" | tail -1
}

t_setup() {
	t_need "$XDPVI" "$XVICAT" "$XVID" || return 1
	local o
	for o in "$T_B/ext/echo.bpf.o" "$T_B/ext/count.bpf.o" "$T_B/tests/ext_reject.bpf.o" \
		"$T_B/tests/ext_redirect.bpf.o"; do
		[ -r "$o" ] || fail "${o#"$T_ROOT"/} missing: build it (make B=${B})" || return
	done
	chmod 0755 "$T_TMP"
	mkdir -p "$RUN" "$BIN" && chmod 0755 "$RUN" "$BIN" || return 1
	cp "$XDPVI" "$XVICAT" "$T_B/ext/echo.bpf.o" "$T_B/ext/count.bpf.o" \
		"$T_B/tests/ext_reject.bpf.o" "$T_B/tests/ext_redirect.bpf.o" "$BIN/" &&
		chmod 0755 "$BIN"/* || return 1
	t_lab_up eb || return 1
	lab_at_exit "_stop_vid"
	t_attach b || return 1
	printf '%s\n' "# extbroker.sh" \
		"allow uid:$UIDA udp 7400-7409 addr iface ext" \
		"allow uid:$UIDB udp 7410-7419 addr iface" \
		"allow uid:$UIDB udp 7420 addr iface guard-allow group ext" \
		"limit ext-handlers-per-uid 2" "limit ext-insns 300" \
		"limit ext-map-bytes 1024" "limit opens-per-second 100" \
		"limit total-opens-per-second 100" >"$T_TMP/policy"
	_start_vid
}

case_no_grant() {
	local out rc
	_listen B 7410 ASB || return
	out=$(_xas ASB ext load "$LAB_IFACE" "$BIN/echo.bpf.o" --endpoint 198.18.0.2:7410 \
		--handler 1 2>&1) && rc=0 || rc=$?
	t_stop "$PID_B"
	[ $rc -ne 0 ] || fail "a handler loaded where the policy grants no ext" || return
	[[ $out == *"does not grant ext"* ]] || fail "the refusal does not say why: $out"
}

case_load_echo() {
	local out
	_listen A 7400 ASA || return
	out=$(_xas ASA ext load "$LAB_IFACE" "$BIN/echo.bpf.o" --endpoint "$EPA" --handler 1 \
		2>&1) || fail "uid A's load was refused: ${out//$'\n'/ }" || return
	ECHO_ID=$(_prog_id "$EPA" 1)
	[ -n "$ECHO_ID" ] && bpftool prog show id "$ECHO_ID" >/dev/null 2>&1 ||
		fail "no handler program after the load (id '$ECHO_ID')" || return
	# The replies leave b through the endpoint's guard (tx_guard_pass).
	local g0 g1 m0 m1
	read -r m0 g0 <<<"$(_ep_field 7400 ext.ext_msgs guard.tx_guard_pass)"
	out=$(t_x -T 60 a "$PY" "$T_HELPERS/am_client.py" 198.18.0.2 7400 1 --count 20 \
		--expect-echo 2>&1) || fail "echo: $out" || return
	read -r m1 g1 <<<"$(_ep_field 7400 ext.ext_msgs guard.tx_guard_pass)"
	[ $((m1 - m0)) -eq 20 ] || fail "ext_msgs moved by $((m1 - m0)), expected 20" || return
	[ $((g1 - g0)) -ge 20 ] || fail "the guard passed $((g1 - g0)) frames, expected 20" ||
		return
	[ ! -s "$T_TMP/l-A.out" ] || fail "the endpoint got echoed messages: $(head -c 80 "$T_TMP/l-A.out")"
}

case_other_owner() {
	local out rc
	_listen B 7420 ASB || return
	out=$(_xas ASB ext load "$LAB_IFACE" "$BIN/echo.bpf.o" --endpoint "$EPA" --handler 2 \
		2>&1) && rc=0 || rc=$?
	[ $rc -ne 0 ] || fail "uid B loaded a handler for uid A's endpoint" || return
	[[ $out == *"belongs to uid $UIDA"* ]] || fail "the refusal does not say why: $out" ||
		return
	out=$(_xas ASB ext unload "$LAB_IFACE" --endpoint "$EPA" --handler 1 2>&1) && rc=0 ||
		rc=$?
	[ $rc -ne 0 ] || fail "uid B unloaded uid A's handler" || return
	bpftool prog show id "$ECHO_ID" >/dev/null 2>&1 || fail "uid A's handler is gone"
}

# Field $3 of handler $2 of the endpoint on port $1 in the `ext list --json`
# on stdin ("" when the list has no such handler).
_list_field() {
	"$PY" -c 'import json,sys
for h in json.load(sys.stdin):
    if h["endpoint"].endswith(":" + sys.argv[1]) and h["handler"] == int(sys.argv[2]):
        print(h[sys.argv[3]])' "$@"
}

# The owner lists its handler through xdp-vid and sees its counters move;
# uid B sees none of uid A's; root sees it in ext list and status.
case_list_counts() {
	local out r0 x0 r1 x1 root
	out=$(_xas ASA ext list "$LAB_IFACE" --json 2>&1) || fail "uid A's list: $out" || return
	r0=$(_list_field 7400 1 runs <<<"$out")
	x0=$(_list_field 7400 1 reply <<<"$out")
	[ -n "$r0" ] && [ "$(_list_field 7400 1 prog_id <<<"$out")" = "$ECHO_ID" ] &&
		[ "$(_list_field 7400 1 where <<<"$out")" = client_end ] ||
		fail "uid A's list lacks its handler 1 (prog $ECHO_ID): $out" || return
	out=$(t_x -T 60 a "$PY" "$T_HELPERS/am_client.py" 198.18.0.2 7400 1 --count 10 \
		--expect-echo 2>&1) || fail "echo: $out" || return
	out=$(_xas ASA ext list "$LAB_IFACE" --json 2>&1) || fail "uid A's list: $out" || return
	r1=$(_list_field 7400 1 runs <<<"$out")
	x1=$(_list_field 7400 1 reply <<<"$out")
	[ $((r1 - r0)) -eq 10 ] && [ $((x1 - x0)) -eq 10 ] ||
		fail "runs +$((r1 - r0)), reply +$((x1 - x0)) for 10 echoed messages" || return
	# uid B (its own endpoint 7420 open, no handlers) sees nothing of A's.
	out=$(_xas ASB ext list "$LAB_IFACE" --json 2>&1) || fail "uid B's list: $out" || return
	[ "$out" = "[]" ] || fail "uid B's list shows others' handlers: $out" || return
	out=$(_xas ASB ext list "$LAB_IFACE" 2>&1) || fail "uid B's list: $out" || return
	[[ $out == *"no handlers of protected endpoints of this uid"* ]] ||
		fail "uid B's text list: $out" || return
	# root: ext list (with the uid) and status show the client end's counts.
	root=$(t_x -T 60 b env XVI_RUN_DIR="$RUN" "$XDPVI" ext list "$LAB_IFACE" --json 2>&1) ||
		fail "root's list: $root" ||
		return
	[ "$(_list_field 7400 1 uid <<<"$root")" = "$UIDA" ] &&
		[ "$(_list_field 7400 1 runs <<<"$root")" -ge "$r1" ] ||
		fail "root's list lacks uid A's handler or its runs: $root" || return
	t_x -T 60 b env XVI_RUN_DIR="$RUN" "$XDPVI" status --json >"$T_TMP/st.json" 2>/dev/null ||
		fail "status failed" || return
	out=$("$PY" -c 'import json,sys
for i in json.load(open(sys.argv[1]))["interfaces"]:
    for e in i.get("endpoints") or []:
        if e["tag"].endswith(":7400"):
            for h in e["handlers"]:
                if h["handler"] == 1:
                    print(h["runs"], h["reply"])' "$T_TMP/st.json")
	read -r r0 x0 <<<"$out"
	[ -n "$r0" ] && [ "$r0" -ge "$r1" ] && [ "$x0" -ge "$x1" ] ||
		fail "status shows no client-end counters for handler 1: '$out'"
}

case_verifier_log() {
	local out rc
	out=$(_xas ASA ext load "$LAB_IFACE" "$BIN/ext_reject.bpf.o" --endpoint "$EPA" \
		--handler 2 2>&1) && rc=0 || rc=$?
	[ $rc -ne 0 ] || fail "the verifier accepted a handler that reads past data_end" || return
	[[ $out == *"verifier log"* && $out == *"invalid access to packet"* ]] ||
		fail "no verifier log in the error: $(head -c 300 <<<"$out")"
}

case_helpers() {
	local out rc
	out=$(_xas ASA ext load "$LAB_IFACE" "$BIN/ext_redirect.bpf.o" --endpoint "$EPA" \
		--handler 2 2>&1) && rc=0 || rc=$?
	[ $rc -ne 0 ] || fail "a handler calling bpf_redirect was loaded" || return
	[[ $out == *"calls helper 23"* ]] || fail "the refusal does not name the helper: $out"
}

case_limits() {
	local out rc
	# count's map (64 x 20 bytes per CPU) is above ext-map-bytes 1024.
	out=$(_xas ASA ext load "$LAB_IFACE" "$BIN/count.bpf.o" --endpoint "$EPA" --handler 2 \
		2>&1) && rc=0 || rc=$?
	[ $rc -ne 0 ] || fail "a handler with more map memory than the limit was loaded" || return
	[[ $out == *"ext-map-bytes"* ]] || fail "the refusal does not name the limit: $out" ||
		return
	# Handlers per uid: A has 1, may have 2.
	out=$(_xas ASA ext load "$LAB_IFACE" "$BIN/echo.bpf.o" --endpoint "$EPA" --handler 2 \
		2>&1) || fail "the second handler was refused: $out" || return
	out=$(_xas ASA ext load "$LAB_IFACE" "$BIN/echo.bpf.o" --endpoint "$EPA" --handler 3 \
		2>&1) && rc=0 || rc=$?
	[ $rc -ne 0 ] || fail "a third handler was loaded past ext-handlers-per-uid 2" || return
	[[ $out == *"ext-handlers-per-uid"* ]] || fail "the refusal does not name the limit: $out" ||
		return
	out=$(_xas ASA ext unload "$LAB_IFACE" --endpoint "$EPA" --handler 2 2>&1) ||
		fail "unload of handler 2: $out"
}

case_insns() {
	local out rc
	# The echo handler has 276 instructions; the policy allows 300, then 100.
	sed -i 's/^limit ext-insns .*/limit ext-insns 100/' "$T_TMP/policy"
	_stop_vid
	_start_vid || return
	t_stop "$PID_A"
	_listen A 7400 ASA || return
	out=$(_xas ASA ext load "$LAB_IFACE" "$BIN/echo.bpf.o" --endpoint "$EPA" --handler 1 \
		2>&1) && rc=0 || rc=$?
	sed -i 's/^limit ext-insns .*/limit ext-insns 300/' "$T_TMP/policy"
	[ $rc -ne 0 ] || fail "a handler above ext-insns was loaded" || return
	[[ $out == *"ext-insns"* ]] || fail "the refusal does not name the limit: $out" || return
	_stop_vid
	_start_vid || return
	t_stop "$PID_A"
	_listen A 7400 ASA || return
	out=$(_xas ASA ext load "$LAB_IFACE" "$BIN/echo.bpf.o" --endpoint "$EPA" --handler 1 \
		2>&1) || fail "load with the limit back: $out" || return
	ECHO_ID=$(_prog_id "$EPA" 1)
}

# Replace the echo handler again and again while a's client sends one
# message at a time and waits for its echo: every message must come back
# (a message without a handler would reach the endpoint instead), and no
# dispatch may find the index empty.
case_hot_swap() {
	local out m0 m1 miss0 miss1 p0 p1 i ids=() cpid rc sent t0 ms=()
	read -r m0 miss0 <<<"$(_ep_field 7400 ext.ext_msgs ext.ext_missing)"
	rm -f "$T_TMP/stop" "$T_TMP/progress"
	t_x -T 300 a "$PY" "$T_HELPERS/am_client.py" 198.18.0.2 7400 1 --expect-echo \
		--until "$T_TMP/stop" --progress "$T_TMP/progress" >"$T_TMP/swap.out" 2>&1 &
	cpid=$!
	t_wait_file "$T_TMP/progress" || { touch "$T_TMP/stop"; wait $cpid
		fail "the client never got an echo: $(cat "$T_TMP/swap.out")"; return; }
	for i in $(seq 10); do
		p0=$(<"$T_TMP/progress")
		t0=$(date +%s%N)
		out=$(_xas ASA ext load "$LAB_IFACE" "$BIN/echo.bpf.o" --endpoint "$EPA" \
			--handler 1 --replace 2>&1) || { fail "swap $i: $out"; break; }
		ms+=("$((($(date +%s%N) - t0) / 1000000))")
		ids+=("$(_prog_id "$EPA" 1)")
		# traffic between two swaps (bounded wait for the next echo), unless
		# the client gave up (a message lost)
		for _ in $(seq "$T_WAIT_TENTHS"); do
			p1=$(<"$T_TMP/progress")
			[ "$p1" != "$p0" ] && break
			kill -0 "$cpid" 2>/dev/null || break 2
			sleep 0.1
		done
	done
	touch "$T_TMP/stop"
	wait $cpid && rc=0 || rc=$?
	out=$(<"$T_TMP/swap.out")
	[ $rc -eq 0 ] || fail "messages lost across 10 swaps: $out" || return
	sent=${out#ok }
	sent=${sent%% *}
	read -r m1 miss1 <<<"$(_ep_field 7400 ext.ext_msgs ext.ext_missing)"
	# what one replacement takes, as `xdp-vi ext load --replace` sees it (a
	# report, not a bound)
	t_log "hot swap: $sent messages, 10 swaps, ext_msgs +$((m1 - m0)), ext_missing" \
		"+$((miss1 - miss0)); load --replace ms, sorted: $(printf '%s\n' "${ms[@]}" |
		sort -n | tr '\n' ' ')"
	[ $((m1 - m0)) -eq "$sent" ] || fail "ext_msgs +$((m1 - m0)) for $sent sent" || return
	[ "$miss1" = "$miss0" ] || fail "$((miss1 - miss0)) messages found no handler" || return
	# Every replaced generation is gone.
	out=$(t_ids_gone prog "$ECHO_ID" "${ids[@]:0:9}") ||
		fail "replaced handler programs still loaded: $out" || return
	ECHO_ID=${ids[9]}
}

case_unload() {
	local out left
	out=$(_xas ASA ext unload "$LAB_IFACE" --endpoint "$EPA" --handler 1 2>&1) ||
		fail "unload: $out" || return
	left=$(t_ids_gone prog "$ECHO_ID") || fail "the handler (prog $left) is still loaded" ||
		return
	# An active message now reaches the endpoint.
	out=$(t_x -T 30 a "$PY" "$T_HELPERS/am_client.py" 198.18.0.2 7400 1 --count 1 \
		--token unloaded 2>&1) || fail "send: $out" || return
	t_wait_grep "$T_TMP/l-A.out" "xvi-am 0 unloaded" ||
		fail "the endpoint did not get the message after unload" || return
}

case_owner_exit() {
	local out left id host
	out=$(_xas ASA ext load "$LAB_IFACE" "$BIN/echo.bpf.o" --endpoint "$EPA" --handler 1 \
		2>&1) || fail "load: $out" || return
	id=$(_prog_id "$EPA" 1)
	host=$(_ep_field 7400 host_end.ifname)
	t_stop "$PID_A"
	left=$(t_ids_gone prog "$id") || fail "the handler (prog $left) outlived its owner" ||
		return
	[ -z "$(_ep_field 7400 host_end.ifname 2>/dev/null)" ] ||
		fail "the endpoint is still listed" || return
	! t_x b ip link show "$host" >/dev/null 2>&1 || fail "the veth $host is left"
}

case_no_leftovers() {
	local left
	t_stop "$PID_B"
	_stop_vid
	left=$(bpftool -j prog show 2>/dev/null | "$PY" -c 'import json,sys
print(" ".join(str(p["id"]) for p in json.load(sys.stdin)
               if p.get("name", "").startswith(("xvi_echo", "xvi_count", "xvi_ext_r", "xvi_client"))))')
	[ -z "$left" ] || left=$(t_ids_gone prog $left) ||
		fail "programs left after the broker stopped: $left"
}

# shellcheck disable=SC2034 # read by t_main
# Root's xdp-vi trace shows the handlers on protected endpoints' client
# ends with the datapath's: 10 messages that uid A's handler 1 echoes, 10
# events naming its endpoint, index 1 and reply, none lost.
case_trace_client_end() {
	local pid out rc n tr=$T_TMP/trace
	t_x -T 60 b "$XDPVI" trace "$LAB_IFACE" --count 10 --duration 30 >"$tr.out" \
		2>"$tr.err" &
	pid=$!
	t_wait_grep "$tr.err" "tracing $LAB_IFACE" ||
		{ t_stop $pid; fail "trace never started: $(head -c 300 "$tr.err")"; return 1; }
	out=$(t_x -T 60 a "$PY" "$T_HELPERS/am_client.py" 198.18.0.2 7400 1 --count 10 \
		--expect-echo 2>&1) || { t_stop $pid; fail "echo under trace: $out"; return 1; }
	wait $pid && rc=0 || rc=$?
	[ $rc -eq 0 ] || fail "trace exited $rc: $(head -c 300 "$tr.err")" || return
	grep -q "10 events, 0 lost" "$tr.err" || fail "trace summary: $(tail -1 "$tr.err")" ||
		return
	n=$(grep -c "udp4 $EPA  *handler 1  *reply " "$tr.out")
	[ "$n" -eq 10 ] ||
		fail "$n of 10 events name udp4 $EPA, handler 1, reply: $(head -3 "$tr.out")"
}

CASES=(
	no_grant	case_no_grant		"uid B, no ext in its rule: the load is refused, saying why"
	load_echo	case_load_echo		"uid A loads the echo handler; 20 replies pass the guard"
	other_owner	case_other_owner	"uid B cannot load or unload on uid A's endpoint"
	list_counts	case_list_counts	"uid A lists its handler's counts moving; uid B sees none; root sees them"
	trace_client_end case_trace_client_end	"root's xdp-vi trace shows the client end's handler"
	verifier_log	case_verifier_log	"a handler the verifier rejects: refused with its log"
	helpers		case_helpers		"a handler calling bpf_redirect (in a subprogram) is refused"
	limits		case_limits		"ext-map-bytes and ext-handlers-per-uid refuse, named"
	insns		case_insns		"ext-insns refuses a handler above it, named"
	hot_swap	case_hot_swap		"10 replacements under lockstep traffic: no message lost"
	unload		case_unload		"unload: program gone, messages reach the endpoint"
	owner_exit	case_owner_exit		"the owner exits: handler, endpoint and veth gone"
	no_leftovers	case_no_leftovers	"no handler or client program left"
)

t_main "$@"
