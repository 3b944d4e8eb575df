#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# shared.sh: many direct endpoints on one interface queue in one process,
# sharing one segment (XDP_SHARED_UMEM).  The lab veth has one queue.
#
#   node a: kernel UDP sockets, one per port  <--xv0--xv0-->  node b: xdp-vi,
#           send "port=P seq=S ..." and check                  tests/lab/shared.c
#           the "R" + datagram replies                         (16 endpoints on
#                                                              queue 0, 4 threads)
#
# Every endpoint must receive exactly its own datagrams (content checked)
# and answer them; half of them close while the others keep working; a
# second process asking for the queue gets EBUSY naming the holder and the
# fixes (and with XVI_OPEN_AUTO and xdp-vid running, a protected endpoint);
# endpoints that do not fit the segment are refused; multi-buffer endpoints
# and endpoints with TX metadata (hand-made sockets) share a segment too;
# nothing is left behind.  Waits are on files and
# `xdp-vi status`, bounded; no fixed sleeps before traffic.

. "$(dirname "$0")/_tap.sh"

SHARED=$T_B/tests/shared
XSKSHARE=$T_B/tests/xskshare
XVID=$T_BIN/xdp-vid
N=16				# endpoints
K=8				# of which close after phase 1
P0=7200				# their ports: P0 .. P0+N-1
D=$T_TMP/drv			# the driver's files
DRV_PID=
DRV_WRAP=
VID_WRAP=
HOLD_WRAP=

t_setup() {
	t_need "$XDPVI" "$SHARED" "$XSKSHARE" "$XVICAT" "$XVID" || return 1
	t_lab_up sh || return 1
	lab_at_exit "_stop_all"
	t_attach b
}

_stop() {	# pid-file wrapper-pid: stop a program started with _bg
	local p
	p=$(cat "$1" 2>/dev/null)
	[ -n "$p" ] && kill -TERM "$p" 2>/dev/null
	[ -n "$2" ] && wait "$2" 2>/dev/null
}
_stop_all() {
	_stop "$D.pid" "$DRV_WRAP"
	_stop "$T_TMP/hold.pid" "$HOLD_WRAP"
	_stop "$T_TMP/vid.pid" "$VID_WRAP"
}

# _bg PIDFILE LOG NODE SECS CMD...: run CMD on NODE in the background; it
# writes its own pid to PIDFILE and execs, so that pid is the program's.
# Sets BG_WRAP to the shell's job.
_bg() {
	local pidf=$1 log=$2 node=$3 secs=$4
	shift 4
	rm -f "$pidf"
	# shellcheck disable=SC2016 # expanded by the inner shell
	t_x -T "$secs" "$node" sh -c 'echo $$ >"$0"; exec "$@"' "$pidf" "$@" >"$log" 2>&1 &
	BG_WRAP=$!
}

# Endpoints `xdp-vi status --json` lists on node b: "port pid queue mode" lines.
_endpoints() {
	t_xdpvi b status --json >"$T_TMP/st.json" 2>/dev/null || return 1
	"$PY" "$T_HELPERS/xvi_status.py" "$T_TMP/st.json" endpoints
}

# Wait (bounded, ~5 s) until _endpoints prints exactly the lines of $1.
_wait_endpoints() {
	local want=$1 got
	for _ in $(seq 50); do
		got=$(_endpoints | sort)
		[ "$got" = "$want" ] && return 0
		sleep 0.1
	done
	fail "xdp-vi status lists [${got//$'\n'/, }], expected [${want//$'\n'/, }]"
}

# _client PORT0 NPORTS COUNT WINDOW JUMBO: kernel sockets on node a send
# "port=P seq=S ..." datagrams to NPORTS ports from PORT0 on, in rounds of
# WINDOW per port, COUNT per port in all (jumbo sizes if JUMBO is 1); each
# endpoint must answer every one with "R" + the datagram.
_client() {
	local out
	out=$(t_x -T 120 a "$PY" "$T_HELPERS/udp_echo_client.py" 198.18.0.2 "$@" 2>&1)
	t_log "client $*: $out"
	[ "${out%% *}" = ok ] || fail "kernel client: $out"
}

# The driver's per-endpoint verdict file: "port got bad dup in_flight"
# lines, all got = $2, bad = dup = 0, and no send left in flight (every
# completion came back to the endpoint that sent it).
_check_verdict() {
	local f=$1 want=$2 nlines=$3 bad
	[ "$(wc -l <"$f")" = "$nlines" ] || { fail "$f has $(wc -l <"$f") lines, expected $nlines"; return 1; }
	bad=$(awk -v w="$want" '$2 != w || $3 != 0 || $4 != 0 || $5 != 0' "$f")
	[ -z "$bad" ] || fail "endpoints with the wrong count, bad or repeated datagrams or sends in flight (port got bad dup in_flight): ${bad//$'\n'/; }"
}

case_kernel_facts() {
	local r=$T_TMP/facts.ready out rc
	rm -f "$r"
	_bg "$T_TMP/facts.pid" "$T_TMP/facts.out" b 30 "$XSKSHARE" -i "$LAB_IFACE" -p 7190 -r "$r"
	local w=$BG_WRAP
	t_wait_file "$r" 100 || { wait "$w"; fail "xskshare never got to its receive fact: $(tail -3 "$T_TMP/facts.out")"; return 1; }
	t_x -T 10 a "$PY" "$T_HELPERS/udp_send.py" 198.18.0.2 7190 --message facts --no-newline
	wait "$w" && rc=0 || rc=$?
	out=$(cat "$T_TMP/facts.out")
	t_log "${out//$'\n'/ | }"
	[ $rc = 0 ] || { fail "xskshare: $(grep -m3 FAIL <<<"$out" | tr '\n' ' ')(exit $rc)"; return 1; }
}

case_open16() {
	local want p
	mkdir -p "$D"
	_bg "$D.pid" "$T_TMP/drv.log" b 200 "$SHARED" -i "$LAB_IFACE" -a 198.18.0.2 -p $P0 \
		-n $N -k $K -t 4 -c 50 -C 300 -w 90 -d "$D"
	DRV_WRAP=$BG_WRAP
	t_wait_file "$D/open" 100 ||
		{ fail "the driver did not open $N endpoints: $(tail -3 "$T_TMP/drv.log")"; return 1; }
	DRV_PID=$(<"$D.pid")
	[ "$(grep -c '^[0-9]* [0-9]* 0x[0-9a-f]*$' "$D/open")" = $N ] || { fail "driver: $(cat "$D/open")"; return 1; }
	want=$(for p in $(seq $P0 $((P0 + N - 1))); do echo "$p $DRV_PID 0 direct"; done | sort)
	_wait_endpoints "$want"
}

case_other_process() {
	local out rc
	[ -n "$DRV_PID" ] || { fail "no driver (open16 failed)"; return 1; }
	out=$(t_x -T 20 b "$SHARED" -i "$LAB_IFACE" -a 198.18.0.2 -p 7300 -o 2>&1) && rc=0 || rc=$?
	t_log "$out"
	[ $rc = 3 ] || { fail "a second process on queue 0: exit $rc, expected 3 (EBUSY): $out"; return 1; }
	[[ $out == *"pid $DRV_PID"* ]] || { fail "the message does not name the holder pid $DRV_PID: $out"; return 1; }
	[[ $out == *XVI_OPEN_PROTECTED* && $out == *"another queue"* ]] ||
		fail "the message does not name the fixes (xdp-vid, another queue): $out"
}

case_traffic16() {
	[ -n "$DRV_PID" ] || { fail "no driver (open16 failed)"; return 1; }
	_client $P0 $N 50 4 0 || return 1
	t_wait_file "$D/phase1" 100 || { fail "the driver did not finish phase 1: $(tail -3 "$T_TMP/drv.log")"; return 1; }
	_check_verdict "$D/phase1" 50 $N
}

case_close_some() {
	local want p
	[ -n "$DRV_PID" ] || { fail "no driver (open16 failed)"; return 1; }
	# Traffic to the endpoints that stay while the others close.
	_client $((P0 + K)) $((N - K)) 300 8 0 || return 1
	t_wait_file "$D/closed" 100 || { fail "the driver did not close $K endpoints: $(tail -3 "$T_TMP/drv.log")"; return 1; }
	t_wait_file "$D/phase2" 100 || { fail "the driver did not finish phase 2: $(tail -3 "$T_TMP/drv.log")"; return 1; }
	_check_verdict "$D/phase2" 300 $((N - K)) || return 1
	# The closed ports are gone from the datapath; the kernel has them back.
	want=$(for p in $(seq $((P0 + K)) $((P0 + N - 1))); do echo "$p $DRV_PID 0 direct"; done | sort)
	_wait_endpoints "$want"
}

case_nothing_left() {
	local rc
	[ -n "$DRV_WRAP" ] || { fail "no driver (open16 failed)"; return 1; }
	: >"$D/finish"
	wait "$DRV_WRAP" && rc=0 || rc=$?
	DRV_WRAP=
	[ $rc = 0 ] || { fail "driver exit $rc: $(tail -3 "$T_TMP/drv.log")"; return 1; }
	[ "$(cat "$D/done" 2>/dev/null)" = ok ] || { fail "driver: $(cat "$D/done" 2>/dev/null)"; return 1; }
	_wait_endpoints ""
}

case_join_rules() {
	local out rc
	out=$(t_x -T 20 b "$SHARED" -i "$LAB_IFACE" -a 198.18.0.2 -p 7400 -J 2>&1) && rc=0 || rc=$?
	t_log "$out"
	[ $rc = 0 ] || { fail "join rules (exit $rc): $out"; return 1; }
	[[ $out == *".frame_size 2048"* && $out == *"XVI_EP_MULTI_BUFFER"* ]] ||
		fail "the refusals do not name the mismatch and the fix: $out"
}

case_auto_protected() {
	local out rc
	mkdir -p "$T_TMP/run" && chmod 0755 "$T_TMP/run"
	printf '%s\n' "allow * udp 1024-65535 addr iface" >"$T_TMP/policy"
	_bg "$T_TMP/vid.pid" "$T_TMP/vid.log" b 60 env XVI_RUN_DIR="$T_TMP/run" "$XVID" \
		--policy "$T_TMP/policy" "$LAB_IFACE"
	VID_WRAP=$BG_WRAP
	# Another process holds queue 0.
	_bg "$T_TMP/hold.pid" "$T_TMP/hold.log" b 60 "$XVICAT" -u --iface "$LAB_IFACE" -l 7500 -w 50
	HOLD_WRAP=$BG_WRAP
	for _ in $(seq 50); do
		ls "$T_TMP/run"/*.sock >/dev/null 2>&1 && _endpoints | grep -q '^7500 ' && break
		sleep 0.1
	done
	ls "$T_TMP/run"/*.sock >/dev/null 2>&1 || { fail "xdp-vid did not start: $(tail -2 "$T_TMP/vid.log")"; return 1; }
	out=$(t_x -T 20 b env XVI_RUN_DIR="$T_TMP/run" "$SHARED" -i "$LAB_IFACE" -a 198.18.0.2 \
		-p 7501 -o -A 2>&1) && rc=0 || rc=$?
	t_log "$out"
	_stop "$T_TMP/hold.pid" "$HOLD_WRAP"
	_stop "$T_TMP/vid.pid" "$VID_WRAP"
	HOLD_WRAP=''
	VID_WRAP=''
	[ $rc = 0 ] || { fail "XVI_OPEN_AUTO on a held queue with xdp-vid running: exit $rc: $out"; return 1; }
	[[ $out == *"opening through xdp-vid"* && $out == *"pid "* ]] ||
		fail "the switch to the protected path was not logged: $out"
}

# The hand-made socket path (a UMEM registered with TX metadata, as for a
# device with AF_XDP checksum offload) joins too: XVI_TX_CSUM=sw-offload
# takes it on veth, the kernel computes the requested checksums, and node
# a's kernel drops any datagram whose checksum is wrong.
case_tx_metadata() {
	local d=$T_TMP/md rc w
	mkdir -p "$d"
	_bg "$d.pid" "$T_TMP/md.log" b 120 env XVI_TX_CSUM=sw-offload "$SHARED" -i "$LAB_IFACE" \
		-a 198.18.0.2 -p 7700 -n 4 -k 2 -t 2 -c 20 -C 20 -w 60 -d "$d"
	w=$BG_WRAP
	t_wait_file "$d/open" 100 || { wait "$w"; fail "4 endpoints with TX metadata did not open: $(tail -3 "$T_TMP/md.log")"; return 1; }
	# XVI_INFO_TX_CSUM_OFFLOAD (0x4) on every one of them.
	local port flags md=0
	while read -r port _ flags; do
		[ "$port" != pid ] && (( flags & 4 )) && md=$((md + 1))
	done <"$d/open"
	[ $md = 4 ] || { : >"$d/finish"; wait "$w"
		fail "not every endpoint took the TX metadata path: $(cat "$d/open")"; return 1; }
	_client 7700 4 20 4 0 && _client 7702 2 20 4 0 && rc=0 || rc=1
	: >"$d/finish"
	wait "$w" || rc=1
	[ $rc = 0 ] || { [ -n "$T_REASON" ] || fail "driver: $(tail -3 "$T_TMP/md.log")"; return 1; }
	_check_verdict "$d/phase1" 20 4 && _check_verdict "$d/phase2" 20 2
}

# Tear the case's own lab down and go back to the suite's.
_lab_back() {
	lab_down --name "$T_LAB" >/dev/null 2>&1
	T_LAB=$1
}

case_multibuf() {
	local lab=$T_LAB d=$T_TMP/mb rc
	# A lab of its own: MTU 9000 before the datapath is attached.
	t_lab_up sm || return 1
	if ! { t_x a ip link set "$LAB_IFACE" mtu 9000 && t_x b ip link set "$LAB_IFACE" mtu 9000 &&
		t_attach b; }; then
		_lab_back "$lab"
		return 1
	fi
	mkdir -p "$d"
	_bg "$d.pid" "$T_TMP/mb.log" b 120 "$SHARED" -i "$LAB_IFACE" -a 198.18.0.2 -p 7600 \
		-n 4 -k 2 -t 2 -c 20 -C 20 -m -w 60 -d "$d"
	local w=$BG_WRAP
	t_wait_file "$d/open" 100 || { wait "$w"; _lab_back "$lab"; fail "4 multi-buffer endpoints did not open: $(tail -3 "$T_TMP/mb.log")"; return 1; }
	_client 7600 4 20 2 1 && _client 7602 2 20 2 1 && rc=0 || rc=1
	: >"$d/finish"
	wait "$w" || rc=1
	_lab_back "$lab"
	[ $rc = 0 ] || { [ -n "$T_REASON" ] || fail "multi-buffer driver: $(tail -3 "$T_TMP/mb.log")"; return 1; }
	_check_verdict "$d/phase1" 20 4 && _check_verdict "$d/phase2" 20 2
}

# shellcheck disable=SC2034 # read by t_main
CASES=(
	kernel_facts	case_kernel_facts	"xskshare: the AF_XDP shared-UMEM facts docs/KERNEL.md relies on"
	open16		case_open16		"one process opens $N direct endpoints on queue 0; status lists them all"
	other_process	case_other_process	"a second process on queue 0 gets EBUSY naming the holder's pid and the fixes"
	traffic16	case_traffic16		"kernel sockets on a: each endpoint receives exactly its own datagrams and answers"
	close_some	case_close_some		"$K endpoints close while the other $((N - K)) receive and answer 300 datagrams each"
	nothing_left	case_nothing_left	"the driver exits cleanly and status lists no endpoint"
	join_rules	case_join_rules		"an endpoint that does not fit the segment (frame size, multi-buffer) is refused"
	auto_protected	case_auto_protected	"XVI_OPEN_AUTO on a queue another process holds goes through xdp-vid, and says so"
	tx_metadata	case_tx_metadata	"endpoints with TX metadata (hand-made sockets) share a segment; checksums verify on a"
	multibuf	case_multibuf		"multi-buffer endpoints share a segment: jumbo datagrams to and from 4 endpoints"
)

t_main "$@"
