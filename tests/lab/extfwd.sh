#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# extfwd.sh: a handler forwarding active messages out of another interface
# (xvi_ext_forward, docs/EXTENSIONS.md "Forwarding").  The three-node lab
# with m routing in the kernel instead of its relay: a (198.18.0.1) -- xva
# m xvb -- b (198.18.0.2); m holds 198.18.0.254 and a host route to each
# side.  An endpoint (xvi-cat) on m's xva holds 198.18.0.254:7500; the
# tests' ext_fwd handler at its index 1 sends each message on to the
# address in its arg[1], b, out of xvb (the kernel's route and neighbour).
# b's kernel socket on 198.18.0.2:7500 must get every message byte for
# byte, while the handler's counters show the forwards.  Before root
# allows xvb (`xdp-vi ext forward xva xvb`) the forward is refused and the
# endpoint on m gets the message; so it is after xvb is detached.  The
# cases build on each other in table order.

. "$(dirname "$0")/_tap.sh"

PORT=7500
M4=198.18.0.254 A4=198.18.0.1 B4=198.18.0.2
EP=$M4:$PORT
FWD=$T_B/tests/ext_fwd.bpf.o
BPFFS=
CAT_PID=
FWD_ID=

# xdp-vi on m with the suite's bpffs.
_xm() { t_xdpvi m --bpffs "$BPFFS" "$@"; }

t_setup() {
	t_need "$XDPVI" "$XVICAT" || return 1
	[ -r "$FWD" ] || fail "${FWD#"$T_ROOT"/} missing: build it (make B=${B})" || return
	T_LAB=$(t_lab_name fw)
	lab_up --name "$T_LAB" --nodes 3 >&2 || { fail "lab_up --nodes 3 $T_LAB failed"; return 1; }
	# The lab's m bridges in user space; here its kernel routes.
	lab_relay_stop --name "$T_LAB"
	t_x m ip link set xva promisc off &&
	t_x m ip link set xvb promisc off &&
	t_x m ip addr add $M4/32 dev xva &&
	t_x m ip route add $A4/32 dev xva &&
	t_x m ip route add $B4/32 dev xvb &&
	t_x m sysctl -qw net.ipv4.ip_forward=1 ||
		{ fail "could not address m"; return 1; }
	BPFFS=$LAB_STATE/$T_LAB/extfwd-bpffs
	mkdir -p "$BPFFS" && mount -t bpf bpf "$BPFFS" ||
		fail "cannot mount a bpffs on $BPFFS" || return
	local i err
	for i in xva xvb; do
		err=$(_xm attach "$i" 2>&1 >/dev/null) ||
			{ fail "xdp-vi attach $i on m: ${err//$'\n'/ }"; return 1; }
	done
	# A frame redirected into m's xvb reaches b only while b runs XDP
	# (docs/KERNEL.md, fact 7): the datapath, which passes it to b's kernel.
	t_attach b || return 1
	# m's neighbour for b, so that the handler's first lookup finds it.
	t_x m ping -n -q -c 1 -W 2 $B4 >/dev/null ||
		{ fail "m cannot ping b"; return 1; }
}

# The handler's counters NAME... (xdp-vi status on m).
_counts() {
	_xm status xva --json >"$T_TMP/st.json" 2>/dev/null || return 1
	"$PY" "$T_HELPERS/trace_check.py" handler "$T_TMP/st.json" "$PORT" 1 "$@"
}

case_load() {
	local err
	t_x -T 300 m "$XVICAT" -u --iface xva -l $M4 "$PORT" -w 280 \
		>"$T_TMP/cat.out" 2>"$T_TMP/cat.err" &
	CAT_PID=$!
	t_wait_endpoint_port m "$PORT" ||
		fail "endpoint on m:$PORT never came up: $(head -c 200 "$T_TMP/cat.err")" || return
	err=$(_xm ext load xva "$FWD" --endpoint "$EP" --handler 1 2>&1) ||
		fail "ext load failed: ${err//$'\n'/ }" || return
	_xm ext list xva --json >"$T_TMP/list.json" 2>&1 || fail "ext list failed" || return
	FWD_ID=$(t_json_values "$T_TMP/list.json" prog_id) ||
		fail "no handler listed: $(cat "$T_TMP/list.json")"
}

# One message for b with TOKEN refused: an error of the handler, and m's
# endpoint gets it.
_refused() {
	local token=$1 out before after
	before=$(_counts runs forward error deliver) || fail "no status for m:$PORT" || return
	out=$(t_x -T 30 a "$PY" "$T_HELPERS/am_client.py" $M4 "$PORT" 1 --count 1 \
		--arg1 $B4 --token "$token" 2>&1) || fail "send: $out" || return
	t_wait_grep "$T_TMP/cat.out" "xvi-am 0 $token" ||
		fail "m's endpoint did not get the refused message: $(head -c 200 "$T_TMP/cat.err")" ||
		return
	after=$(_counts runs forward error deliver) || fail "no status for m:$PORT" || return
	read -r r0 f0 e0 d0 <<<"$before"
	read -r r1 f1 e1 d1 <<<"$after"
	[ $((r1 - r0)) -eq 1 ] && [ "$f1" = "$f0" ] && [ $((e1 - e0)) -eq 1 ] &&
		[ $((d1 - d0)) -eq 1 ] ||
		fail "runs +$((r1 - r0)) forward +$((f1 - f0)) error +$((e1 - e0)) deliver" \
			"+$((d1 - d0)), expected +1 +0 +1 +1"
}

# Not allowed yet.
case_refused() {
	_refused refused
}

case_allow() {
	local out err rc
	# Only interfaces that run the datapath; nothing changed on a refusal.
	err=$(_xm ext forward xva lo 2>&1) && rc=0 || rc=$?
	[ $rc -ne 0 ] && [[ $err == *"lo has no xdp-vi datapath"*"xdp-vi attach lo"* ]] ||
		fail "forward to lo: exit $rc: $err" || return
	err=$(_xm ext forward xva nosuch0 2>&1) && rc=0 || rc=$?
	[ $rc -ne 0 ] && [[ $err == *"no interface nosuch0"* ]] ||
		fail "forward to nosuch0: exit $rc: $err" || return
	# IFACE itself: a missing one is named as missing, not as unattached.
	err=$(_xm ext forward nosuch0 xvb 2>&1) && rc=0 || rc=$?
	[ $rc -ne 0 ] && [[ $err == *"no interface nosuch0"* ]] &&
		[[ $err != *"no xdp-vi datapath"* ]] ||
		fail "forward on nosuch0: exit $rc: $err" || return
	err=$(_xm ext forward lo xvb 2>&1) && rc=0 || rc=$?
	[ $rc -ne 0 ] && [[ $err == *"lo has no xdp-vi datapath"* ]] ||
		fail "forward on lo: exit $rc: $err" || return
	out=$(_xm ext forward xva --json 2>&1) || fail "ext forward xva: $out" || return
	[ "$out" = '{"ifname":"xva","forward_to":[]}' ] || fail "before: $out" || return
	out=$(_xm ext forward xva xvb 2>&1) || fail "ext forward xva xvb: $out" || return
	[ "$out" = "xva: handlers may forward to: xvb" ] || fail "after: $out"
}

# N messages from a's kernel socket, forwarded by m's handler to b's: every
# one arrives byte for byte, the handler counts N forwards, m's endpoint
# gets none of them.
_forward() {
	local n=$1 tag=$2 out ready=$T_TMP/recv-$2.ready rpid before after got
	before=$(_counts runs forward error) || fail "no status for m:$PORT" || return
	t_x -T 60 b "$PY" "$T_HELPERS/udp_recv.py" $B4 "$PORT" --ready "$ready" --count "$n" \
		--max 50 --format '{src} {hex}' >"$T_TMP/recv-$tag.out" 2>"$T_TMP/recv-$tag.err" &
	rpid=$!
	t_wait_file "$ready" || { t_stop $rpid; fail "receiver on b did not start"; return 1; }
	out=$(t_x -T 30 a "$PY" "$T_HELPERS/am_client.py" $M4 "$PORT" 1 --count "$n" \
		--arg1 $B4 --token "$tag" --sent "$T_TMP/sent-$tag" 2>&1) ||
		{ t_stop $rpid; fail "send: $out"; return 1; }
	wait $rpid
	got=$(wc -l <"$T_TMP/recv-$tag.out")
	[ "$got" -eq "$n" ] || fail "b's kernel socket got $got of $n messages:" \
		"$(head -c 200 "$T_TMP/recv-$tag.err")" || return
	# From a's address: the handler changed only the destination.
	sed "s/^/$A4 /" "$T_TMP/sent-$tag" | diff -q - "$T_TMP/recv-$tag.out" >/dev/null ||
		fail "what b received differs from what a sent: $(diff <(sed "s/^/$A4 /" \
			"$T_TMP/sent-$tag") "$T_TMP/recv-$tag.out" | head -c 300)" || return
	after=$(_counts runs forward error) || fail "no status for m:$PORT" || return
	read -r r0 f0 e0 <<<"$before"
	read -r r1 f1 e1 <<<"$after"
	t_log "$n messages: runs +$((r1 - r0)) forward +$((f1 - f0)) error +$((e1 - e0))"
	[ $((r1 - r0)) -eq "$n" ] && [ $((f1 - f0)) -eq "$n" ] && [ "$e1" = "$e0" ] ||
		fail "runs +$((r1 - r0)) forward +$((f1 - f0)) error +$((e1 - e0)), expected" \
			"+$n +$n +0" || return
	! grep -q "$tag" "$T_TMP/cat.out" || fail "m's endpoint received forwarded messages"
}

# Full checksums from a (as from a wire): the handler updates them.
case_forward() {
	t_x a ethtool -K "$LAB_IFACE" tx off >/dev/null || fail "ethtool on a" || return
	_forward 50 full
}

# a's kernel's partial checksums (veth defaults): the handler zeroes them.
case_forward_partial() {
	t_x a ethtool -K "$LAB_IFACE" tx on >/dev/null || fail "ethtool on a" || return
	_forward 20 partial
}

# Taken back: refused again, delivered to m's endpoint.
case_remove() {
	local out err rc
	# All or nothing: one bad name and nothing is taken out.
	err=$(_xm ext forward xva xvb nosuch0 --remove 2>&1) && rc=0 || rc=$?
	[ $rc -ne 0 ] && [[ $err == *"no interface nosuch0"* ]] ||
		fail "--remove xvb nosuch0: exit $rc: $err" || return
	out=$(_xm ext forward xva 2>&1) || fail "ext forward xva: $out" || return
	[ "$out" = "xva: handlers may forward to: xvb" ] ||
		fail "after a refused --remove: $out" || return
	out=$(_xm ext forward xva xvb --remove 2>&1) || fail "--remove: $out" || return
	[ "$out" = "xva: handlers may forward to: none" ] || fail "after --remove: $out" ||
		return
	out=$(t_x -T 30 a "$PY" "$T_HELPERS/am_client.py" $M4 "$PORT" 1 --count 1 \
		--arg1 $B4 --token removed 2>&1) || fail "send: $out" || return
	t_wait_grep "$T_TMP/cat.out" "xvi-am 0 removed" ||
		fail "m's endpoint did not get the message refused after --remove"
}

# Allowed, then the target detached: detach takes it out of xva's targets,
# and the forward is refused again.
case_detached() {
	local out err
	out=$(_xm ext forward xva xvb 2>&1) || fail "ext forward xva xvb: $out" || return
	err=$(_xm detach xvb 2>&1 >/dev/null) || fail "detach xvb: $err" || return
	out=$(_xm ext forward xva 2>&1) || fail "ext forward xva: $out" || return
	[ "$out" = "xva: handlers may forward to: none" ] ||
		fail "after detaching xvb: $out" || return
	_refused detached
}

# Interface names in --json are JSON strings: a name with a quote and a
# backslash (both legal in a name) parses back as itself.
case_json_names() {
	local name='q"\x' out err ok
	# A veth pair inside m (the kernel here has no dummy driver).
	t_x m ip link add "$name" type veth peer name xvq && t_x m ip link set "$name" up ||
		fail "cannot add a veth on m" || return
	err=$(_xm attach "$name" --mode generic 2>&1 >/dev/null) &&
		out=$(_xm ext forward xva "$name" --json 2>&1) || err="$err$out"
	ok=$(printf '%s' "$out" | "$PY" -c 'import json, sys
d = json.load(sys.stdin)
print(d["forward_to"] == [sys.argv[1]] and d["ifname"] == "xva")' "$name" 2>&1)
	_xm detach "$name" >/dev/null 2>&1
	t_x m ip link del "$name"
	[ -z "$err" ] || fail "attach or ext forward on $name: ${err//$'\n'/ }" || return
	[ "$ok" = True ] || fail "ext forward --json: $out: $ok"
}

case_nothing_left() {
	local err
	[ -z "$CAT_PID" ] || t_stop "$CAT_PID"
	err=$(_xm detach xva 2>&1 >/dev/null) || fail "detach xva: $err" || return
	t_xdpvi b detach "$LAB_IFACE" >/dev/null 2>&1
	t_pins_released "$BPFFS" "$FWD_ID" "the handler"
}

# shellcheck disable=SC2034 # read by t_main
CASES=(
	load		case_load		"ext load: the forwarding handler for m's endpoint on xva"
	refused		case_refused		"xvb not allowed yet: refused, an error, delivered to m's endpoint"
	allow		case_allow		"ext forward xva xvb; lo (no datapath) and unknown names refused"
	forward		case_forward		"50 messages a -> m's handler -> b's socket, byte-exact, forward +50"
	forward_partial	case_forward_partial	"the same with a's partial checksums, zeroed by the handler"
	remove		case_remove		"ext forward --remove: refused again, delivered to m's endpoint"
	detached	case_detached		"xvb allowed, then detached: out of xva's targets, refused again"
	json_names	case_json_names		"ext forward --json escapes a name with a quote and a backslash"
	nothing_left	case_nothing_left	"after detach: no handler program, no pins"
)

t_main "$@"
