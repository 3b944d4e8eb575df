#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# nobpffs.sh: xdp-vi where no bpffs is mounted and `ip netns exec` hides
# /sys/fs/bpf anyway, every step its own plain `ip netns exec` command with
# nothing mounted by hand: attach, status, an endpoint receiving from a
# kernel socket, detach.  Then a bpffs shared by two namespaces whose
# interfaces have the same name (pins must not collide), and a process
# without CAP_SYS_ADMIN, which can only reach the maps through pins.

. "$(dirname "$0")/_tap.sh"

PORT=7300
SHARED=		# a bpffs both nodes see, for the shared-bpffs cases
COUNT_EXT=$T_B/ext/count.bpf.o	# a handler that counts and delivers

# Plain `ip netns exec` on a node, bounded (NX_T seconds, default 30): no
# lab helper in between.
_nx() {
	local node=$1
	shift
	timeout -k 5 "${NX_T:-30}" ip netns exec "$(_lab_ns "$T_LAB" "$node")" "$@"
}

# Same, with the shared bpffs bind-mounted on /sys/fs/bpf inside the
# command (the mount lives in the command's own mount namespace).
_nx_shared() {
	local node=$1
	shift
	timeout -k 5 "${NX_T:-30}" ip netns exec "$(_lab_ns "$T_LAB" "$node")" \
		sh -c 'mount --bind "$0" /sys/fs/bpf || exit 125; exec "$@"' "$SHARED" "$@"
}

_netns_ino() { _nx "$1" stat -L -c %i /proc/self/ns/net; }

# SHARED set, and a bpffs mounted there unless one is already (the lab's
# teardown unmounts it).
_shared_up() {
	SHARED=$LAB_STATE/$T_LAB/shared-bpffs
	mountpoint -q "$SHARED" || { mkdir -p "$SHARED" && mount -t bpf bpf "$SHARED"; }
}

# _nx_bg NAME NODE CMD...: _nx in the background (_nx_shared with
# BG_SHARED=1); the program's own pid, not the subshell's, in
# $T_TMP/NAME.pid for _kill_bg NAME.
_nx_bg() {
	local pidf=$T_TMP/$1.pid node=$2 run=_nx
	shift 2
	[ "${BG_SHARED:-0}" = 1 ] && run=_nx_shared
	rm -f "$pidf"
	NX_T=${NX_T:-120} "$run" "$node" sh -c 'echo $$ >"$0"; exec "$@"' "$pidf" "$@" &
	t_wait_file "$pidf"
}

# Until what _nx_bg NAME started exits by itself (bounded).
_wait_bg() {
	for _ in $(seq 600); do
		kill -0 "$(cat "$T_TMP/$1.pid")" 2>/dev/null || return 0
		sleep 0.1
	done
	return 1
}

# Stop what _nx_bg NAME started and wait until it is gone.
_kill_bg() {
	local pid
	pid=$(cat "$T_TMP/$1.pid" 2>/dev/null) || return 0
	kill "$pid" 2>/dev/null
	for _ in $(seq "$T_WAIT_TENTHS"); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -9 "$pid" 2>/dev/null
}

# How many PROG_ARRAYs (map_type 3) the process whose pid is in
# $T_TMP/NAME.pid holds open.
_tables_held() {
	local d
	d=/proc/$(cat "$T_TMP/$1.pid")/fdinfo
	[ -d "$d" ] || { echo "no process"; return; }
	grep -l '^map_type:[[:space:]]*3$' "$d"/* 2>/dev/null | wc -l
}

# Until status, in a command of its own, lists the live endpoint on PORT.
_wait_listed() {
	local i
	for i in $(seq "$T_WAIT_TENTHS"); do
		_nx b "$XDPVI" status --json 2>/dev/null >"$T_TMP/wl.json" &&
			grep -q "\"udp4 [0-9.]*:$PORT\"" "$T_TMP/wl.json" &&
			! grep -q '"bind": "pending"' "$T_TMP/wl.json" && return 0
		sleep 0.1
	done
	return 1
}

t_setup() {
	t_need "$XDPVI" "$XVICAT" || return 1
	t_lab_up nb || return 1
	# What this suite may not change: the root namespace's mounts.
	_root_mounts >"$T_TMP/mounts.before"
}

# The root namespace's mounts, without the labs' own (namespace files,
# state directories), which other test runs may add or remove meanwhile.
_root_mounts() {
	awk -v st="$LAB_STATE/" 'index($2, "/run/netns/") != 1 && index($2, st) != 1' \
		/proc/self/mounts | sort
}

# Kernel sender on a: 20 datagrams "xvi-nobpffs <i>" to PORT, 50 ms apart;
# the receiver is up before it starts (status lists it), so no sleep is a
# guess about speed.
_send20() {
	_nx a "$PY" "$T_HELPERS/udp_send.py" 198.18.0.2 "$PORT" --message 'xvi-nobpffs {i}' \
		--count 20 --gap 0.05
}

case_root_bpffs_untouched() {
	# The machine's own state: this suite runs with none of the lab's
	# help, and checks first that it has none to give.
	mount | grep -q ' /sys/fs/bpf ' && t_log "(the root namespace has a bpffs; fine)"
	_nx b sh -c 'mount | grep " /sys/fs/bpf "' >/dev/null &&
		fail "a bpffs is visible on /sys/fs/bpf inside ip netns exec; the case needs none" ||
		return 0
}

case_attach() {
	local err
	err=$(_nx b "$XDPVI" attach "$LAB_IFACE" 2>&1) || fail "attach failed: $err" || return
	[ "$(t_xdp_of b)" != none ] || fail "attach printed '$err' but no program is on xv0" || return
}

case_status() {
	local out=$T_TMP/st.json
	_nx b "$XDPVI" status --json >"$out" 2>"$T_TMP/st.err" ||
		fail "status failed: $(head -c 300 "$T_TMP/st.err")" || return
	t_json_values "$out" ifname | grep -qx "$LAB_IFACE" ||
		fail "status lists no $LAB_IFACE: $(head -c 300 "$out")" || return
	t_json_values "$out" maps_from | grep -qx program ||
		fail "status did not find the maps through the program: $(head -c 300 "$out")" ||
		return
}

case_endpoint() {
	local out=$T_TMP/ep.out n
	_nx_bg ep b "$XVICAT" -u --iface "$LAB_IFACE" -w 60 -c 20 -l "$PORT" >"$out" \
		2>"$T_TMP/ep.err"
	_wait_listed || { _kill_bg ep; fail "endpoint never listed: $(tail -2 "$T_TMP/ep.err")"
		return; }
	# No pin holds the datapath's PROG_ARRAYs here (attach's bpffs went
	# with its command): opening one by id could leak it for good.
	n=$(_tables_held ep)
	[ "$n" = 0 ] || { _kill_bg ep
		fail "the endpoint holds $n PROG_ARRAYs opened by id, with no pin on them"
		return; }
	_send20 || { _kill_bg ep; fail "kernel sender on a failed"
		return; }
	# xvi-cat exits after its 20 datagrams; a lost one ends it by its
	# silence bound, and the count below says so.
	_wait_bg ep
	_kill_bg ep
	n=$(grep -c '^xvi-nobpffs [0-9]*$' "$out")
	[ "$n" -ge 1 ] || fail "the endpoint received nothing ($(tail -2 "$T_TMP/ep.err"))" ||
		return
	t_log "endpoint received $n of 20 datagrams"
}

# An unmodified sockperf client on a, an unprivileged xvi-perf server on b
# through xdp-vid: each a plain ip netns exec of its own.
case_sockperf_protected() {
	local run=$T_TMP/run bin=$T_TMP/bin n
	mkdir -p "$run" "$bin" && chmod 0755 "$T_TMP" "$run" "$bin"
	cp "$T_BIN/xvi-perf" "$bin/" && chmod 0755 "$bin/xvi-perf" || return 1
	# the built-in policy admits only group xdp-vi, which a fresh machine lacks
	echo "allow uid:65534 udp $PORT" >"$T_TMP/policy"
	_nx_bg vid b env XVI_RUN_DIR="$run" "$T_BIN/xdp-vid" --policy "$T_TMP/policy" \
		"$LAB_IFACE" >"$T_TMP/vid.log" 2>&1
	for _ in $(seq "$T_WAIT_TENTHS"); do
		ls "$run"/*.sock >/dev/null 2>&1 && break
		sleep 0.1
	done
	_nx_bg srv b env XVI_RUN_DIR="$run" setpriv --reuid=65534 --regid=65534 --clear-groups \
		--inh-caps=-all "$bin/xvi-perf" server --iface "$LAB_IFACE" -i 198.18.0.2 -p "$PORT" \
		-t 100 >"$T_TMP/srv.out" 2>&1
	if ! _wait_listed; then
		_kill_bg srv; _kill_bg vid
		fail "the unprivileged server never came up: $(tail -2 "$T_TMP/srv.out") $(tail -2 \
			"$T_TMP/vid.log")"
		return
	fi
	_nx a sockperf ping-pong -i 198.18.0.2 -p "$PORT" -t 2 >"$T_TMP/sp.out" 2>&1
	_kill_bg srv
	_kill_bg vid
	n=$(sed -n 's/.*ReceivedMessages=\([0-9]*\).*/\1/p' "$T_TMP/sp.out" | head -1)
	[ "${n:-0}" -gt 0 ] || fail "sockperf got no replies through xdp-vid: $(grep -m1 -iE \
		'no messages|error' "$T_TMP/sp.out")" || return
	t_log "sockperf -> unprivileged xvi-perf through xdp-vid: $n replies"
}

case_detach() {
	local ids err left
	ids=$(t_prog_map_ids b | tr '\n' ' ')
	err=$(_nx b "$XDPVI" detach "$LAB_IFACE" 2>&1) || fail "detach failed: $err" || return
	[ "$(t_xdp_of b)" = none ] || fail "program still on xv0 after detach" || return
	# shellcheck disable=SC2086
	left=$(t_ids_gone map $ids) || fail "maps alive after detach: ids$left" || return
	_nx b "$XDPVI" status 2>&1 | grep -q "no interface" ||
		fail "status after detach does not say nothing runs" || return
}

case_root_mounts_unchanged() {
	_root_mounts >"$T_TMP/mounts.after"
	local diff
	diff=$(comm -3 "$T_TMP/mounts.before" "$T_TMP/mounts.after")
	[ -z "$diff" ] || fail "the root namespace's mounts changed: ${diff//$'\n'/; }" || return
}

# Two namespaces, one bpffs, both interfaces called xv0: the pins of one
# must not be the other's.
case_shared_bpffs() {
	local na nb err n
	_shared_up || fail "cannot mount a bpffs on $SHARED" || return
	for n in a b; do
		err=$(_nx_shared "$n" "$XDPVI" attach "$LAB_IFACE" 2>&1) ||
			fail "attach on $n with the shared bpffs failed: $err" || return
	done
	na=$(_netns_ino a) nb=$(_netns_ino b)
	[ "$na" != "$nb" ] || fail "both nodes report netns $na" || return
	for n in "$na" "$nb"; do
		[ -e "$SHARED/xdp-vi/$n/$LAB_IFACE/xvi_endpoints" ] ||
			fail "no pins under xdp-vi/$n/$LAB_IFACE: $(find "$SHARED" | head -20)" ||
			return
	done
	err=$(_nx_shared b "$XDPVI" detach "$LAB_IFACE" 2>&1) ||
		fail "detach on b failed: $err" || return
	[ ! -e "$SHARED/xdp-vi/$nb" ] || fail "b's pins survived its detach" || return
	[ -e "$SHARED/xdp-vi/$na/$LAB_IFACE/xvi_endpoints" ] ||
		fail "detach on b removed a's pins" || return
	[ "$(t_xdp_of a)" != none ] || fail "detach on b removed a's program" || return
	err=$(_nx_shared a "$XDPVI" detach "$LAB_IFACE" 2>&1) ||
		fail "detach on a failed: $err" || return
	[ ! -e "$SHARED/xdp-vi" ] || fail "pins left: $(find "$SHARED/xdp-vi" | head)" || return
}

# Handlers loaded where the pins are visible, for an endpoint that does not
# see them: when that endpoint dies, the claim that collects its slot must
# unload them (opening the table by id, which the pins hold), or a later
# owner of the slot would get its messages handled by them.
case_handlers_out_of_sight() {
	local slot key tab err
	_shared_up || fail "cannot mount a bpffs on $SHARED" || return
	err=$(_nx_shared b "$XDPVI" attach "$LAB_IFACE" 2>&1) || fail "attach failed: $err" ||
		return
	tab=$SHARED/xdp-vi/$(_netns_ino b)/$LAB_IFACE/xvi_ext_progs
	_nx_bg dead b "$XVICAT" -u --iface "$LAB_IFACE" -w 120 -l "$PORT" >/dev/null \
		2>"$T_TMP/dead.err"
	_wait_listed || { _kill_bg dead
		fail "endpoint never listed: $(tail -2 "$T_TMP/dead.err")"; return; }
	[ "$(_tables_held dead)" = 0 ] || { _kill_bg dead
		fail "an endpoint out of the pins' sight opened a PROG_ARRAY"; return; }
	err=$(_nx_shared b "$XDPVI" ext load "$LAB_IFACE" "$COUNT_EXT" \
		--endpoint "0.0.0.0:$PORT" --handler 0 2>&1) || { _kill_bg dead
		fail "ext load failed: ${err//$'\n'/ }"; return; }
	slot=$("$PY" "$T_HELPERS/xvi_status.py" "$T_TMP/wl.json" field "$PORT" slot)
	key=$(printf '%d %d %d %d' $((slot * 16 % 256)) $((slot * 16 / 256)) 0 0)
	# shellcheck disable=SC2086 # the key's four bytes
	bpftool map lookup pinned "$tab" key $key >/dev/null 2>&1 || { _kill_bg dead
		fail "no handler in $tab for slot $slot after ext load"; return; }
	kill -9 "$(cat "$T_TMP/dead.pid")"
	_wait_bg dead || fail "the killed endpoint did not go" || return
	# A claim in a plain command collects the dead slot.
	_nx_bg next b "$XVICAT" -u --iface "$LAB_IFACE" -w 120 -l $((PORT + 1)) >/dev/null \
		2>"$T_TMP/next.err"
	PORT=$((PORT + 1)) _wait_listed || { _kill_bg next
		fail "second endpoint never listed: $(tail -2 "$T_TMP/next.err")"; return; }
	_kill_bg next
	# shellcheck disable=SC2086
	! bpftool map lookup pinned "$tab" key $key >/dev/null 2>&1 ||
		fail "the dead owner's handler is still in slot $slot's entry of the table" ||
		return
	_nx_shared b "$XDPVI" detach "$LAB_IFACE" >/dev/null 2>&1 || fail "detach failed" ||
		return
}

# Attaching again with --bpffs keeps the tables' pins there while it
# makes the missing ones anew: the tables come from those pins only.
case_repin() {
	local err dir m
	_shared_up || fail "cannot mount a bpffs on $SHARED" || return
	dir=$SHARED/xdp-vi/$(_netns_ino b)/$LAB_IFACE
	err=$(_nx b "$XDPVI" --bpffs "$SHARED" attach "$LAB_IFACE" 2>&1) ||
		fail "attach --bpffs failed: $err" || return
	rm -f "$dir/xvi_ep_stats"
	err=$(_nx b "$XDPVI" --bpffs "$SHARED" attach "$LAB_IFACE" 2>&1) ||
		fail "attach --bpffs again failed: $err" || return
	for m in xvi_ext_progs xvi_ext_ret xvi_port_progs xvi_ep_stats; do
		[ -e "$dir/$m" ] || fail "no pin of $m after attaching again" || return
	done
	_nx b "$XDPVI" --bpffs "$SHARED" detach "$LAB_IFACE" >/dev/null 2>&1 ||
		fail "detach failed" || return
}

# Without CAP_SYS_ADMIN a process may not open the program's maps by id:
# it reaches them through pins, and without pins it is told so.
case_pins_without_sys_admin() {
	local out=$T_TMP/cap.out err
	err=$(_nx_shared b "$XDPVI" attach "$LAB_IFACE" 2>&1) || fail "attach failed: $err" ||
		return
	BG_SHARED=1 _nx_bg cap b setpriv --bounding-set -sys_admin --inh-caps -sys_admin \
		"$XVICAT" -u --iface "$LAB_IFACE" -w 60 -c 20 -l "$PORT" >"$out" 2>"$T_TMP/cap.err"
	_wait_listed || { _kill_bg cap
		fail "endpoint without CAP_SYS_ADMIN never listed: $(tail -2 "$T_TMP/cap.err")"
		return; }
	_send20 || { _kill_bg cap; fail "kernel sender on a failed"
		return; }
	_wait_bg cap
	_kill_bg cap
	grep -q '^xvi-nobpffs [0-9]*$' "$out" ||
		fail "the endpoint without CAP_SYS_ADMIN received nothing" || return
	# No pins where it looks: the error says what to do.
	err=$(_nx b setpriv --bounding-set -sys_admin --inh-caps -sys_admin \
		"$XVICAT" -u --iface "$LAB_IFACE" -w 1 -l "$PORT" 2>&1 </dev/null) &&
		fail "an endpoint opened without CAP_SYS_ADMIN and without pins" || true
	[[ $err == *"CAP_SYS_ADMIN"* ]] ||
		fail "the refusal does not say why: '$err'" || return
	_nx_shared b "$XDPVI" detach "$LAB_IFACE" >/dev/null 2>&1 ||
		fail "detach failed" || return
}

# shellcheck disable=SC2034 # read by t_main
CASES=(
	no_bpffs	case_root_bpffs_untouched	"inside ip netns exec no bpffs is on /sys/fs/bpf"
	attach		case_attach		"xdp-vi attach, plain ip netns exec, nothing mounted by hand"
	status		case_status		"xdp-vi status in another command finds the maps through the program"
	endpoint	case_endpoint		"an endpoint opened in a third command receives from kernel UDP"
	sockperf_prot	case_sockperf_protected	"unmodified sockperf gets answers from an unprivileged xvi-perf through xdp-vid"
	detach		case_detach		"detach in a fourth command: no program, no maps"
	root_mounts	case_root_mounts_unchanged "the root namespace's mounts are as before"
	shared_bpffs	case_shared_bpffs	"two namespaces share a bpffs: pins per namespace, detach of one keeps the other's"
	no_sys_admin	case_pins_without_sys_admin "without CAP_SYS_ADMIN: the maps through pins, or an error that says so"
	ext_unseen	case_handlers_out_of_sight "a dead endpoint's handlers are unloaded by a claim that does not see the pins"
	repin		case_repin		"attach again with --bpffs: the tables' pins stay, the missing ones are made"
)

t_main "$@"
