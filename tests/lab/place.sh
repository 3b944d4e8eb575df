#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# place.sh: direct placement (docs/EXTENSIONS.md, "Direct placement").  A
# receiver on b (tests/lab/place.c) opens an endpoint, loads the placement
# handler for it and maps the handler's region; a sender on a sends a
# 64 MiB file as active messages from a kernel UDP socket.  The handler
# writes each message's data at its offset; the receiver sleeps on the
# completion event, lists what was lost after each round, and writes the
# region out: it must be the file, byte for byte.  The receiver's CPU time
# is reported, not judged.
#
# The datapath's maps are pinned in a bpffs under the lab's state
# directory (handlers need the pin, docs/EXTENSIONS.md "Lifetime").

. "$(dirname "$0")/_tap.sh"

PORT=7500
CTL=7501
PLACE=$T_B/tests/place
BPFFS=
SIZE_MB=${PLACE_MB:-64}

t_setup() {
	t_need "$XDPVI" "$PLACE" || return 1
	[ -r "$T_B/ext/place.bpf.o" ] ||
		fail "$B/ext/place.bpf.o missing: build it (make B=$B)" || return
	t_lab_up plc || return 1
	BPFFS=$LAB_STATE/$T_LAB/place-bpffs
	mkdir -p "$BPFFS" && mount -t bpf bpf "$BPFFS" ||
		fail "cannot mount a bpffs on $BPFFS" || return
	local err
	err=$(t_xdpvi b --bpffs "$BPFFS" attach "$LAB_IFACE" 2>&1 >/dev/null) ||
		fail "xdp-vi attach on node b failed: ${err//$'\n'/ }"
}

# _transfer: one transfer of $T_TMP/in into $T_TMP/out; the
# receiver's JSON line in $T_TMP/recv.json.
_transfer() {
	local pid rc err
	rm -f "$T_TMP/out" "$T_TMP/recv.json"
	t_x -T 300 b "$PLACE" recv -i "$LAB_IFACE" -a 198.18.0.2 -p "$PORT" -c "$CTL" \
		-o "$T_TMP/out" -b "$BPFFS" >"$T_TMP/recv.json" 2>"$T_TMP/recv.err" &
	pid=$!
	t_wait_grep "$T_TMP/recv.json" '^ready' ||
		{ t_stop $pid; fail "receiver not ready: $(head -c 300 "$T_TMP/recv.err")"; return 1; }
	err=$(t_x -T 300 a "$PLACE" send -a 198.18.0.2 -p "$PORT" -c "$CTL" -f "$T_TMP/in" 2>&1) ||
		{ t_stop $pid; fail "sender: $err"; return 1; }
	wait $pid && rc=0 || rc=$?
	[ $rc -eq 0 ] || fail "receiver exit $rc: $(head -c 300 "$T_TMP/recv.err")"
}

case_place_64m() {
	local a b
	head -c $((SIZE_MB << 20)) /dev/urandom >"$T_TMP/in" || fail "no input file" || return
	_transfer || return
	a=$(sha256sum <"$T_TMP/in") && b=$(sha256sum <"$T_TMP/out") || fail "sha256sum" || return
	[ "$a" = "$b" ] || fail "placed bytes differ: sha256 ${b%% *} != ${a%% *}" || return
	t_log "placed: $(grep '^{' "$T_TMP/recv.json")"
}

# The handler went with the receiver: nothing listed, the copy path
# (no handler) works on the same endpoint port.
case_unloaded() {
	local out
	out=$(t_xdpvi b --bpffs "$BPFFS" ext list "$LAB_IFACE" --json 2>&1)
	[ "$out" = "[]" ] || fail "handlers left after the receiver exited: $out"
}

case_nothing_left() {
	local err
	err=$(t_xdpvi b --bpffs "$BPFFS" detach "$LAB_IFACE" 2>&1 >/dev/null) ||
		fail "detach failed: $err" || return
	umount "$BPFFS" || fail "cannot unmount $BPFFS"
}

# shellcheck disable=SC2034 # read by t_main
CASES=(
	place_64m	case_place_64m		"a 64 MiB file placed byte-exact by the handler on b"
	unloaded	case_unloaded		"the receiver's handler is gone after it exits"
	nothing_left	case_nothing_left	"detach, bpffs unmounted"
)
# shellcheck disable=SC2034 # read by t_main
CASES_ALWAYS=(nothing_left)

t_main "$@"
