# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# shellcheck shell=bash
#
# tests/lab/_tap.sh: sourced by every tests/lab/*.sh (tests/run skips files
# starting with '_').  A case table, TAP-like output and lab helpers.
#
# A suite defines functions and a table, then calls t_main "$@":
#
#   t_setup() { t_lab_up dp && t_attach b; }     # optional
#   case_ping4() { t_ping a 198.18.0.2 || return 1; }
#   CASES=(
#       ping4   case_ping4   "node a pings node b over IPv4"
#   )
#   t_main "$@"
#
# NAME.sh runs every case in table order, NAME.sh CASE... only those (after
# t_setup, which always runs), NAME.sh -l lists the cases, NAME.sh -l
# CASE... the ones NAME.sh CASE... runs.  Some suites' cases build on the
# ones before them (their header says so): run alone, such a case fails as
# it would after its predecessor failed.  A case that checks what every
# case must leave behind is named in CASES_ALWAYS: it runs, after the
# chosen ones, whichever cases are chosen.
#
# A case function returns 0 (ok), 1 (not ok, reason from `fail MSG`) or 77
# (skip, reason from `skip MSG`; only for a kernel feature that is truly
# absent).  stdout is TAP (tests/lib/tap.sh), read by tests/run:
#   1..N
#   ok 1 - NAME
#   not ok 2 - NAME
#   # reason
#   ok 3 - NAME # SKIP reason
# Everything else (diagnostics) goes to stderr.
#
# Environment: B (build dir, default build), XVI_TEST_LAB_PREFIX (lab name
# prefix; tests/run sets a unique one), PYTHON (default python3).

set -u -o pipefail

T_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
B=${B:-build}
case $B in /*) T_B=$B ;; *) T_B=$T_ROOT/$B ;; esac
T_BIN=$T_B/bin
XDPVI=$T_BIN/xdp-vi
# shellcheck disable=SC2034 # used by the suites
XVICAT=$T_BIN/xvi-cat
# shellcheck disable=SC2034
XVIPERF=$T_BIN/xvi-perf
PY=${PYTHON:-python3}
# The Python programs the suites run (tests/lab/helpers/*.py: each says in
# its docstring what it does and how to call it).
T_HELPERS=$T_ROOT/tests/lab/helpers
# No __pycache__ in the tree from importing inet_csum.py.
export PYTHONDONTWRITEBYTECODE=1
T_SUITE=$(basename "$0" .sh)
# Cases run whichever cases are chosen (see above); a suite sets it after
# sourcing this file.
CASES_ALWAYS=()

# shellcheck source=netns-lab/lib.sh
. "$T_ROOT/netns-lab/lib.sh"
# shellcheck source=tests/lib/tap.sh
. "$T_ROOT/tests/lib/tap.sh"

T_TMP=$(mktemp -d "/tmp/xvi-lab-$T_SUITE.XXXXXX")
lab_at_exit "rm -rf '$T_TMP'"
_lab_trap

# Bound of every wait on a condition (tenths of a second): it only stops a
# broken run, a fast machine never waits that long.
T_WAIT_TENTHS=${T_WAIT_TENTHS:-300}

T_REASON=
fail() { T_REASON="$*"; return 1; }
skip() { T_REASON="$*"; return 77; }
t_log() { echo "# $T_SUITE: $*" >&2; }

# Lab names: <prefix><suite tag>, at most 12 characters (see lib.sh).
t_lab_name() {
	local p=${XVI_TEST_LAB_PREFIX:-xt$$z}
	echo "${p:0:10}$1"
}

T_LAB=
t_lab_up() {
	T_LAB=$(t_lab_name "$1")
	lab_up --name "$T_LAB" || fail "lab_up $T_LAB failed"
}

# Run on a node of this suite's lab, bounded (default 20 s).
t_x() {
	local tmo=20
	[ "$1" = -T ] && { tmo=$2; shift 2; }
	local node=$1
	shift
	lab_exec --name "$T_LAB" -T "$tmo" "$node" -- "$@"
}

# Ports for t_stream_xfer, one per transfer.
T_XFER_PORT=${T_XFER_PORT:-7100}

# t_stream_xfer LAB FILE SECONDS [extra xvi-cat args]: an xvi-cat stream
# listener on b writes to $T_TMP/out, a sender on a reads FILE; both must
# exit 0 within SECONDS and the copy must be byte-exact.  Sets XFER_MS.
t_stream_xfer() {
	local lab=$1 in=$2 tmo=$3 rl rs t0 port=$((T_XFER_PORT++))
	shift 3
	rm -f "$T_TMP/out"
	lab_exec --name "$lab" -T "$tmo" b -- "$XVICAT" -v --iface "$LAB_IFACE" -w 10 "$@" \
		-l "$port" >"$T_TMP/out" 2>"$T_TMP/l.err" &
	local lpid=$!
	t_wait_endpoint_port_in "$lab" b "$port" || { kill "$lpid" 2>/dev/null; wait "$lpid"
		fail "listener on b:$port never came up: $(tail -2 "$T_TMP/l.err")"; return 1; }
	t0=$(date +%s%3N)
	lab_exec --name "$lab" -T "$tmo" a -- "$XVICAT" -v --iface "$LAB_IFACE" -w 10 "$@" \
		198.18.0.2 "$port" <"$in" 2>"$T_TMP/s.err" && rs=0 || rs=$?
	wait "$lpid" && rl=0 || rl=$?
	XFER_MS=$(($(date +%s%3N) - t0))
	cat "$T_TMP/s.err" "$T_TMP/l.err" | sed 's/^/# /' >&2
	[ "$rs" = 0 ] || { fail "sender exit $rs: $(tail -1 "$T_TMP/s.err")"; return 1; }
	[ "$rl" = 0 ] || { fail "listener exit $rl: $(tail -1 "$T_TMP/l.err")"; return 1; }
	local want got
	want=$(sha256sum <"$in" | cut -d' ' -f1)
	got=$(sha256sum <"$T_TMP/out" | cut -d' ' -f1)
	[ "$want" = "$got" ] || { fail "copy differs: sha256 $got, want $want ($(stat -c %s \
		"$T_TMP/out") of $(stat -c %s "$in") bytes)"; return 1; }
}

# Like t_wait_endpoint_port, for any lab.
t_wait_endpoint_port_in() {
	local save=$T_LAB rc
	T_LAB=$1
	t_wait_endpoint_port "$2" "$3" && rc=0 || rc=1
	T_LAB=$save
	return $rc
}

t_need() {
	local b
	for b; do
		[ -x "$b" ] || { fail "${b#"$T_ROOT"/} missing: build it (make B=${B})"; return 1; }
	done
}

# Is file $1 valid JSON?
t_is_json() { "$PY" -m json.tool "$1" >/dev/null 2>&1; }

# Print the values of every key named $2 anywhere in JSON file $1, one a line.
t_json_values() { "$PY" "$T_HELPERS/json_values.py" "$1" "$2"; }

# Kernel XDP program on a node's xv0 ("mode:id" or "none").
t_xdp_of() { _lab_xdp_of "$(_lab_ns "$T_LAB" "$1")"; }

# IDs of the maps of the xdp-vi program on a node's xv0, one a line (none if
# no program is attached).  Attach binds every datapath map to the program.
t_prog_map_ids() {
	local x
	x=$(t_xdp_of "$1")
	[ "$x" != none ] || return 0
	bpftool -j prog show id "${x#*:}" 2>/dev/null | "$PY" "$T_HELPERS/bpftool_json.py" map-ids
}

# Names of the maps with the given IDs, one a line.
t_map_names() {
	local id
	for id; do
		bpftool -j map show id "$id" 2>/dev/null | "$PY" "$T_HELPERS/bpftool_json.py" map-name
	done
}

# Wait (bounded, ~3 s) until none of the given map/prog IDs exists any more:
# the kernel frees them asynchronously once the last reference is gone.
# Asked without opening them: `bpftool map show id` on a PROG_ARRAY being
# freed would leak it (docs/KERNEL.md, fact 49).
t_ids_gone() {
	local kind=$1 i left
	shift
	for i in $(seq 30); do
		left=$("$PY" "$T_HELPERS/bpf_ids.py" alive "$kind" "$@") || return 1
		[ -z "$left" ] && return 0
		sleep 0.1
	done
	echo " ${left//$'\n'/ }"
	return 1
}

# ping that works with or without iputils: 3 echo requests, 1 s each,
# success if any reply comes back.
t_ping() {
	local node=$1 dst=$2
	if command -v ping >/dev/null; then
		t_x -T 10 "$node" ping -n -c 3 -i 0.2 -W 1 "$dst" >&2
	else
		t_x -T 10 "$node" "$PY" "$T_HELPERS/icmp_ping.py" "$dst" >&2
	fi
}

# Wait until a file exists and is non-empty, polling for up to
# T_WAIT_TENTHS tenths of a second (see t_wait_endpoint_port).
t_wait_file() {
	local f=$1 tenths=${2:-$T_WAIT_TENTHS} i
	for i in $(seq "$tenths"); do
		[ -s "$f" ] && return 0
		sleep 0.1
	done
	return 1
}

# Wait until file $1 has a line matching $2, for up to $3 (default
# T_WAIT_TENTHS) tenths of a second.
t_wait_grep() {
	local i
	for i in $(seq "${3:-$T_WAIT_TENTHS}"); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# Stop process $1 and its children: SIGTERM, up to 3 s to exit, then
# SIGKILL; then reap it.  For `t_x ... &`, $! is the shell that runs t_x and
# the command is its child (timeout, which passes the signal on): killing
# only $! would leave the command running until its timeout, holding every
# fd the test shell had open (an endpoint's fifo would never see EOF).
# Children first: once their parent is gone, pkill -P cannot find them.
t_stop() {
	[ -n "$1" ] || return 0
	pkill -TERM -P "$1" 2>/dev/null
	kill -TERM "$1" 2>/dev/null
	for _ in $(seq 30); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	pkill -KILL -P "$1" 2>/dev/null
	kill -9 "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	return 0
}

# xdp-vi on a node, bounded.
t_xdpvi() {
	local node=$1
	shift
	t_x -T 20 "$node" "$XDPVI" "$@"
}

# Wait until `xdp-vi status --json` on NODE lists a live endpoint for UDP
# port PORT: its tag ("udp4 198.18.0.2:7000") ends in :PORT and its socket
# is published (bind is not "pending"), so traffic sent now reaches it.
# Polls for up to T_WAIT_TENTHS tenths of a second (default 300): the bound
# only stops a broken run, a fast machine returns at once.
t_wait_endpoint_port() {
	local node=$1 port=$2 i
	for i in $(seq "$T_WAIT_TENTHS"); do
		t_xdpvi "$node" status --json >"$T_TMP/st.json" 2>/dev/null &&
			"$PY" "$T_HELPERS/xvi_status.py" "$T_TMP/st.json" live "$port" && return 0
		sleep 0.1
	done
	return 1
}

# Wait until a kernel UDP socket on NODE listens on PORT (`ss`): a server
# program is ready for traffic.  Bounded like t_wait_file.
t_wait_udp_port() { _t_wait_port -uln "$@"; }

# The same for a TCP listener.
t_wait_tcp_port() { _t_wait_port -tln "$@"; }

_t_wait_port() {
	local opt=$1 node=$2 port=$3 i
	for i in $(seq "$T_WAIT_TENTHS"); do
		[ -n "$(t_x "$node" ss -H "$opt" "sport = :$port" 2>/dev/null)" ] && return 0
		sleep 0.1
	done
	return 1
}

# Attach the datapath on a node's xv0 (setup helper).
t_attach() {
	t_need "$XDPVI" || return 1
	local err
	err=$(t_xdpvi "$1" attach "$LAB_IFACE" 2>&1 >/dev/null) ||
		fail "xdp-vi attach $LAB_IFACE on node $1 failed: ${err//$'\n'/ }"
}

# The index in CASES of the row of case $1.
_t_case_row() {
	local i
	for ((i = 0; i < ${#CASES[@]}; i += 3)); do
		[ "${CASES[i]}" = "$1" ] && { echo "$i"; return 0; }
	done
	return 1
}

t_main() {
	local i n=0 name fn rc failed=0 setup_err='' rows=() names=() list=0
	[ "${1:-}" = -l ] && { list=1; shift; }
	if [ $# -eq 0 ]; then
		for ((i = 0; i < ${#CASES[@]}; i += 3)); do rows+=("$i"); done
	else
		set -- "$@" "${CASES_ALWAYS[@]}"
	fi
	for name; do
		i=$(_t_case_row "$name") || {
			for ((i = 0; i < ${#CASES[@]}; i += 3)); do names+=("${CASES[i]}"); done
			echo "$T_SUITE: no case '$name'; the cases are: ${names[*]}" >&2
			return 2
		}
		# an always-run case also chosen by name runs once, where named
		[[ " ${rows[*]} " == *" $i "* ]] || rows+=("$i")
	done
	if [ $list = 1 ]; then
		for i in "${rows[@]}"; do
			printf '%s\t%s\n' "${CASES[i]}" "${CASES[i + 2]}"
		done
		return 0
	fi
	if [ "$(id -u)" -ne 0 ]; then
		tap_plan 0 "needs root (network namespaces, XDP)"
		return 0
	fi
	tap_plan ${#rows[@]}
	if declare -F t_setup >/dev/null; then
		T_REASON=
		t_setup || setup_err="setup failed: ${T_REASON:-see stderr}"
	fi
	for i in "${rows[@]}"; do
		name=${CASES[i]}
		fn=${CASES[i + 1]}
		n=$((n + 1))
		if [ -n "$setup_err" ] && [ "${CASES_NEED_SETUP:-1}" = 1 ]; then
			tap_result "$n" "$name" fail "$setup_err"
			failed=1
			continue
		fi
		T_REASON=
		t_log "case $name: ${CASES[i + 2]}"
		"$fn" && rc=0 || rc=$?
		case $rc in
		0) tap_result "$n" "$name" ok ;;
		77) tap_result "$n" "$name" skip "${T_REASON:-skipped}" ;;
		*) tap_result "$n" "$name" fail "${T_REASON:-exit status $rc}"; failed=1 ;;
		esac
	done
	return $failed
}

# t_pins_released DIR [PROG_ID WHAT]: after detach, the program PROG_ID
# (WHAT, a handler) is gone, no xvi_* pin is left in the bpffs DIR, and DIR
# is unmounted.
t_pins_released() {
	local dir=$1 id=${2:-} what=${3:-}
	[ -z "$id" ] || t_ids_gone prog "$id" >/dev/null ||
		{ fail "$what (prog $id) is still loaded after detach"; return 1; }
	[ -z "$(find "$dir" -mindepth 1 -name 'xvi_*' 2>/dev/null)" ] ||
		{ fail "pins left: $(find "$dir" -mindepth 1 | head)"; return 1; }
	umount "$dir" || fail "cannot unmount $dir"
}
