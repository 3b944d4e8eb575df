# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# shellcheck shell=bash
#
# netns-lab/lib.sh: the two- and three-node labs as bash functions.  Sourced
# by netns-lab/lab (the command), by tests/lab/*.sh and by netns-lab/demo.
# See netns-lab/lab for the topology drawings and docs/LAB.md for usage.
#
#   lab_up    [--name NAME] [--nodes 2|3] [--impair SPEC] [--tune]
#             [--queues N]                  build a lab, set $LAB
#   lab_exec  [--name NAME] [-T SEC] NODE -- CMD...
#   lab_shell [--name NAME] NODE
#   lab_status [--name NAME] [--json]
#   lab_down  [--name NAME]                 idempotent, never fails
#   lab_list
#   lab_impair [--name NAME] SPEC           3 nodes: restart the relay with SPEC
#   lab_relay_stop [--name NAME]            3 nodes: stop the relay (final
#                                           counters stay in the stats file)
#   lab_relay_stats [--name NAME] [--json]  3 nodes: the relay's counters
#
# Library mode: lab_up registers the lab for teardown on EXIT, INT and TERM
# (lab_at_exit adds more cleanup commands, run before the labs go down).
#
# Every name the lab creates is derived from the lab name alone, so that
# lab_down can clean a half-built lab even when its state directory is gone:
#   namespaces  NAME-a, NAME-b (and NAME-m with --nodes 3)
#   veth        NAMEa (in NAME-a), NAMEb (in NAME-b), renamed to xv0 inside;
#               3 nodes: their peers NAMEma, NAMEmb in NAME-m, renamed xva, xvb
#   relay       3 nodes: xvi-relay in NAME-m, pid in $LAB_STATE/NAME/relay.pid,
#               counters in relay.stats, output in relay.log
# Nothing is ever created in, attached to or moved through the root namespace.

LAB_STATE=${XVI_LAB_STATE:-/run/xdp-vi-lab}
LAB_IFACE=xv0
# The middle node's two interfaces (3 nodes): xva faces node a, xvb node b.
LAB_M_IFACES=(xva xvb)
_lab_lib_dir=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
# Default bound for lab_exec (seconds); -T overrides per call.
LAB_EXEC_TIMEOUT=${LAB_EXEC_TIMEOUT:-60}

# Node letter -> host index: a=1, b=2.  Addresses from the benchmarking
# ranges only (198.18.0.0/15, 2001:2::/48).
_lab_idx() { case $1 in a) echo 1 ;; b) echo 2 ;; *) return 1 ;; esac; }
lab_addr4() { echo "198.18.0.$(_lab_idx "$1")"; }
lab_addr6() { echo "2001:2::$(_lab_idx "$1")"; }
_lab_letters() { local n=$1 l=(a b m); echo "${l[@]:0:n}"; }
# Nodes of an existing lab: a b, plus m when its namespace exists.
_lab_nodes_of() {
	if ip netns list 2>/dev/null | grep -qE "^$1-m( |$)"; then echo "a b m"; else echo "a b"; fi
}

_lab_err() { echo "lab: $*" >&2; }

# Lab names end up in veth names (NAME + node letter <= 15 chars, IFNAMSIZ)
# and in paths, so keep them short and plain.
_lab_check_name() {
	if [[ ! $1 =~ ^[A-Za-z0-9][A-Za-z0-9_]{0,11}$ ]]; then
		_lab_err "bad lab name '$1': use 1-12 letters, digits or '_'" \
			"(it prefixes interface names, which are limited to 15 chars)"
		return 1
	fi
}

# Which lab: --name, else $LAB (library mode), else the last one `up` made.
_lab_pick() {
	local name=${1:-${LAB:-}}
	if [ -z "$name" ] && [ -r "$LAB_STATE/last" ]; then
		name=$(<"$LAB_STATE/last")
	fi
	if [ -z "$name" ]; then
		_lab_err "no lab given and none is up: run 'lab up' or pass --name NAME"
		return 1
	fi
	_lab_check_name "$name" || return 1
	echo "$name"
}

_lab_ns() { echo "$1-$2"; }
_lab_veth() { echo "$1$2"; }

# Run a setup step; on failure say which one and why.
_lab_try() {
	local out
	if ! out=$("$@" 2>&1); then
		_lab_err "failed: $* :: ${out:-no message}"
		return 1
	fi
}

_lab_build() {
	local name=$1 nodes=$2 impair=${3:-} tune=${4:-0} queues=${5:-1} dir=$LAB_STATE/$1 n ns
	# veth takes its queue counts at creation only (ethtool -L cannot add
	# queues past them): the same N receive and transmit queues on both ends.
	local -a mq=(numtxqueues "$queues" numrxqueues "$queues")
	local letters
	read -r -a letters <<<"$(_lab_letters "$nodes")"

	mkdir -p "$dir" && chmod 0700 "$dir" || return 1
	# Written first: `down` can clean whatever exists even if we die next.
	{
		echo "LAB_NAME=$name"
		echo "LAB_NODES='${letters[*]}'"
		echo "LAB_IFACE=$LAB_IFACE"
		echo "LAB_CREATED=$(date +%s)"
		echo "LAB_TUNED=$tune"
		echo "LAB_QUEUES=$queues"
		for n in "${letters[@]}"; do
			if [ "$n" = m ]; then
				echo "LAB_NS_m=$(_lab_ns "$name" m)"
				echo "LAB_IFACES_m='${LAB_M_IFACES[*]}'"
				echo "LAB_VETH_ma=$(_lab_veth "$name" ma)"
				echo "LAB_VETH_mb=$(_lab_veth "$name" mb)"
				echo "LAB_IMPAIR=$(printf '%q' "$impair")"
				continue
			fi
			echo "LAB_NS_$n=$(_lab_ns "$name" "$n")"
			echo "LAB_VETH_$n=$(_lab_veth "$name" "$n")"
			echo "LAB_ADDR4_$n=$(lab_addr4 "$n")/24"
			echo "LAB_ADDR6_$n=$(lab_addr6 "$n")/64"
		done
	} >"$dir/env"

	for n in "${letters[@]}"; do
		ns=$(_lab_ns "$name" "$n")
		_lab_try ip netns add "$ns" || return 1
		_lab_try ip -n "$ns" link set lo up || return 1
	done

	# Both ends are created directly inside their namespaces: the pair never
	# exists in the root namespace, even for a moment.
	if [ "$nodes" = 2 ]; then
		_lab_try ip link add "$(_lab_veth "$name" a)" netns "$(_lab_ns "$name" a)" \
			"${mq[@]}" type veth peer name "$(_lab_veth "$name" b)" \
			netns "$(_lab_ns "$name" b)" "${mq[@]}" || return 1
	else
		for n in a b; do
			_lab_try ip link add "$(_lab_veth "$name" "$n")" \
				netns "$(_lab_ns "$name" "$n")" "${mq[@]}" type veth \
				peer name "$(_lab_veth "$name" "m$n")" \
				netns "$(_lab_ns "$name" m)" "${mq[@]}" || return 1
		done
		_lab_build_m "$name" || return 1
	fi

	for n in a b; do
		ns=$(_lab_ns "$name" "$n")
		_lab_try ip -n "$ns" link set "$(_lab_veth "$name" "$n")" name "$LAB_IFACE" ||
			return 1
		# Keep the unique name visible as an altname, for people reading
		# `ip link` output; a kernel without altnames is fine too.
		ip -n "$ns" link property add dev "$LAB_IFACE" \
			altname "$(_lab_veth "$name" "$n")" 2>/dev/null || true
		_lab_try ip -n "$ns" addr add "$(lab_addr4 "$n")/24" dev "$LAB_IFACE" || return 1
		# nodad: the address is usable at once, no 1-2 s of "tentative".
		_lab_try ip -n "$ns" -6 addr add "$(lab_addr6 "$n")/64" dev "$LAB_IFACE" nodad ||
			return 1
		# 3 nodes: no router solicitations (the lab has no router, and
		# they recur for ever with backoff): after the first second the
		# wire carries only what a and b's programs send, so a seeded
		# relay sees identical input when the traffic is identical.
		if [ "$nodes" = 3 ]; then
			_lab_try ip netns exec "$ns" sysctl -qw \
				"net.ipv6.conf.$LAB_IFACE.router_solicitations=0" || return 1
		fi
		_lab_try ip -n "$ns" link set "$LAB_IFACE" up || return 1
		# The veth ends keep the kernel's defaults (TX checksum offload
		# on, GRO off), as container networking has them: xdp-vi must
		# work there.  --tune is for measurements that want the old
		# settings (GRO on, checksums completed by the sender).
		if [ "$tune" = 1 ]; then
			_lab_try ip netns exec "$ns" ethtool -K "$LAB_IFACE" gro on tx off ||
				return 1
		fi
		[ "$queues" = 1 ] || _lab_spread_tx "$ns" "$queues" || return 1
	done

	# Carrier comes up once both ends are up; wait for it (bounded).
	local state
	for n in a b; do
		for _ in $(seq 50); do
			state=$(ip -n "$(_lab_ns "$name" "$n")" -o link show dev "$LAB_IFACE" \
				2>/dev/null)
			[[ $state == *LOWER_UP* ]] && break
			sleep 0.1
		done
		if [[ $state != *LOWER_UP* ]]; then
			_lab_err "$LAB_IFACE in $(_lab_ns "$name" "$n") has no carrier after 5 s"
			return 1
		fi
	done
	if [ "$nodes" = 3 ]; then
		_lab_relay_start "$name" "$impair" || return 1
	fi
	echo ready >"$dir/status"
}

# Multi-queue: a veth hands a frame to the peer's receive queue of the
# same index as the transmit queue the sending kernel chose (docs/KERNEL.md,
# fact 41).  Without XPS the kernel picks that queue by the flow's hash, so
# the flows of different sockets spread over every queue; a transmit queue
# with XPS CPUs would pin flows to the sending CPU instead, and a 2-core
# machine would then feed 2 queues at most.  XPS is off for every queue.
_lab_spread_tx() {
	local ns=$1 queues=$2 q
	for ((q = 0; q < queues; q++)); do
		_lab_try ip netns exec "$ns" sh -c \
			"echo 0 >/sys/class/net/$LAB_IFACE/queues/tx-$q/xps_cpus" || return 1
	done
}

# The middle node: two interfaces and no address of its own.  M forwards
# Ethernet frames unchanged (xvi-relay), so a and b share one L2 segment
# and keep their two-node addresses; raw 0x88B5 frames cross M as well.
_lab_build_m() {
	local name=$1 ns i v
	ns=$(_lab_ns "$name" m)
	for i in 0 1; do
		v=$(_lab_veth "$name" "m$([ $i = 0 ] && echo a || echo b)")
		_lab_try ip -n "$ns" link set "$v" name "${LAB_M_IFACES[i]}" || return 1
		ip -n "$ns" link property add dev "${LAB_M_IFACES[i]}" altname "$v" \
			2>/dev/null || true
		# M must not talk on the wire itself (no RS, MLD or DAD frames
		# of its own): the relay's input is a's and b's traffic only.
		_lab_try ip netns exec "$ns" sysctl -qw \
			"net.ipv6.conf.${LAB_M_IFACES[i]}.disable_ipv6=1" || return 1
		# GRO off: GRO would merge a's TCP segments into skbs larger
		# than the MTU, which the relay could not send as one frame.
		# AF_XDP TX from a or b still reaches M: copy-mode TX goes
		# through veth's ndo_start_xmit, not the XDP redirect path that
		# needs GRO or XDP on the receiver (docs/KERNEL.md, fact 7);
		# tests/lab/relay.sh checks xvi-cat -> M -> kernel both ways.
		_lab_try ip netns exec "$ns" ethtool -K "${LAB_M_IFACES[i]}" gro off || return 1
		# The relay sends complete frames (no CHECKSUM_PARTIAL from an
		# AF_PACKET socket); tx off only matters for M's own stack.
		_lab_try ip netns exec "$ns" ethtool -K "${LAB_M_IFACES[i]}" tx off || return 1
		_lab_try ip -n "$ns" link set "${LAB_M_IFACES[i]}" promisc on up || return 1
	done
}

# ---- the relay on M (3 nodes) ---------------------------------------------

# XVI_RELAY, else the one the lab (arg 1, optional) started, else
# $B/bin (B relative to the source tree, default build), else PATH.
_lab_relay_bin() {
	local bd=${B:-build}
	if [ -n "${XVI_RELAY:-}" ]; then
		echo "$XVI_RELAY"
		return 0
	fi
	if [ -n "${1:-}" ] && [ -x "$(cat "$LAB_STATE/$1/relay.bin" 2>/dev/null)" ]; then
		cat "$LAB_STATE/$1/relay.bin"
		return 0
	fi
	case $bd in /*) ;; *) bd=$_lab_lib_dir/../$bd ;; esac
	if [ -x "$bd/bin/xvi-relay" ]; then
		readlink -f "$bd/bin/xvi-relay"
	elif command -v xvi-relay >/dev/null; then
		command -v xvi-relay
	else
		_lab_err "xvi-relay not found in $bd/bin or PATH: build it ('make'), or set" \
			"XVI_RELAY=/path/to/xvi-relay (B=DIR picks another build directory)"
		return 1
	fi
}

_lab_is_3() {
	if ! ip netns list 2>/dev/null | grep -qE "^$(_lab_ns "$1" m)( |$)"; then
		_lab_err "lab $1 has no middle node: 'lab up --nodes 3' builds one"
		return 1
	fi
}

# Start xvi-relay on M with SPEC; its pid goes to relay.pid once it runs.
_lab_relay_start() {
	local name=$1 spec=$2 dir=$LAB_STATE/$1 bin err pid=
	bin=$(_lab_relay_bin "$name") || return 1
	echo "$bin" >"$dir/relay.bin"
	if ! err=$("$bin" --check -s "$spec" 2>&1 >/dev/null); then
		_lab_err "--impair '$spec': ${err#xvi-relay: }"
		return 1
	fi
	printf '%s\n' "$spec" >"$dir/relay.spec"
	rm -f "$dir/relay.stats" "$dir/relay.pid"
	# setsid: the relay outlives `lab up` and the terminal's ^C; lab_down
	# stops it (it kills everything in the lab's namespaces).
	setsid ip netns exec "$(_lab_ns "$name" m)" "$bin" -s "$spec" \
		--stats-file "$dir/relay.stats" "${LAB_M_IFACES[@]}" \
		>>"$dir/relay.log" 2>&1 </dev/null &
	# The relay writes its own pid into the stats file once both sockets
	# are bound and it forwards; wait for that (bounded, 5 s).
	for _ in $(seq 50); do
		if [ -s "$dir/relay.stats" ]; then
			pid=$(sed -n 's/^pid //p' "$dir/relay.stats")
			break
		fi
		sleep 0.1
	done
	if [ -z "$pid" ]; then
		_lab_err "xvi-relay did not start on $(_lab_ns "$name" m): $(tail -3 \
			"$dir/relay.log" 2>/dev/null | paste -sd' ')"
		return 1
	fi
	echo "$pid" >"$dir/relay.pid"
}

lab_relay_stop() {
	local name="" dir pid
	while [ $# -gt 0 ]; do
		case $1 in
		--name) name=$2; shift 2 ;;
		--name=*) name=${1#--name=}; shift ;;
		*) _lab_err "relay_stop: unknown argument '$1'"; return 2 ;;
		esac
	done
	name=$(_lab_pick "$name") || return 2
	dir=$LAB_STATE/$name
	[ -r "$dir/relay.pid" ] || return 0
	pid=$(<"$dir/relay.pid")
	# Only a relay of this lab: check the pid still lives in NAME-m.
	if ip netns pids "$(_lab_ns "$name" m)" 2>/dev/null | grep -qx "$pid"; then
		kill -TERM "$pid" 2>/dev/null
		for _ in $(seq 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$pid" 2>/dev/null; then
			_lab_err "xvi-relay $pid ignored SIGTERM for 5 s: killing it"
			kill -KILL "$pid" 2>/dev/null
		fi
	fi
	rm -f "$dir/relay.pid"
}

# lab_impair [--name NAME] SPEC: restart the relay with new impairments.
# The seed restarts too: the same SPEC on the same input decides the same.
lab_impair() {
	local name="" spec
	while [ $# -gt 0 ]; do
		case $1 in
		--name) name=$2; shift 2 ;;
		--name=*) name=${1#--name=}; shift ;;
		*) break ;;
		esac
	done
	if [ $# -ne 1 ]; then
		_lab_err "usage: impair [--name NAME] SPEC (e.g. loss=5%,seed=1; 'none' for none)"
		return 2
	fi
	spec=$1
	name=$(_lab_pick "$name") || return 2
	_lab_is_3 "$name" || return 1
	lab_relay_stop --name "$name" || return 1
	_lab_relay_start "$name" "$spec"
}

# lab_relay_stats [--name NAME] [--json]: fresh counters of a running relay
# (it is asked with SIGUSR1), or the final ones of a stopped relay.
lab_relay_stats() {
	local name="" json=() bin
	while [ $# -gt 0 ]; do
		case $1 in
		--name) name=$2; shift 2 ;;
		--name=*) name=${1#--name=}; shift ;;
		--json) json=(--json); shift ;;
		*) _lab_err "relay_stats: unknown argument '$1'"; return 2 ;;
		esac
	done
	name=$(_lab_pick "$name") || return 2
	_lab_is_3 "$name" || return 1
	bin=$(_lab_relay_bin "$name") || return 1
	"$bin" --stats "$LAB_STATE/$name/relay.stats" "${json[@]}"
}

# Labs this shell built, torn down by the exit trap (library mode).
declare -a _LAB_MINE=()
declare -a _LAB_AT_EXIT=()
_LAB_TRAPPED=

lab_at_exit() { _LAB_AT_EXIT+=("$*"); }

_lab_cleanup() {
	local c l
	for c in "${_LAB_AT_EXIT[@]}"; do
		eval "$c" >/dev/null 2>&1 || true
	done
	_LAB_AT_EXIT=()
	for l in "${_LAB_MINE[@]}"; do
		lab_down --name "$l" >/dev/null 2>&1 || true
	done
	_LAB_MINE=()
}

_lab_trap() {
	[ -n "$_LAB_TRAPPED" ] && return 0
	_LAB_TRAPPED=1
	trap '_lab_cleanup' EXIT
	trap '_lab_cleanup; trap - INT; kill -INT $$' INT
	trap '_lab_cleanup; exit 143' TERM
	trap '_lab_cleanup; exit 129' HUP
}

lab_up() {
	local name="" nodes=2 impair= impair_set=0 tune=0 queues=1
	while [ $# -gt 0 ]; do
		case $1 in
		--name) name=${2:-}; shift 2 || { _lab_err "--name needs a value"; return 1; } ;;
		--name=*) name=${1#--name=}; shift ;;
		--nodes) nodes=${2:-}; shift 2 || { _lab_err "--nodes needs a value"; return 1; } ;;
		--nodes=*) nodes=${1#--nodes=}; shift ;;
		--impair) impair=${2-}; impair_set=1
			shift 2 || { _lab_err "--impair needs a SPEC"; return 1; } ;;
		--impair=*) impair=${1#--impair=}; impair_set=1; shift ;;
		--tune) tune=1; shift ;;
		--queues) queues=${2:-}; shift 2 || { _lab_err "--queues needs a value"; return 1; } ;;
		--queues=*) queues=${1#--queues=}; shift ;;
		*) _lab_err "up: unknown argument '$1'"; return 1 ;;
		esac
	done
	[ -n "$name" ] || name="xvi$$"
	_lab_check_name "$name" || return 1
	if [ "$nodes" != 2 ] && [ "$nodes" != 3 ]; then
		_lab_err "--nodes $nodes: give 2 (a -- b) or 3 (a -- m -- b, relay on m)"
		return 1
	fi
	if [[ ! $queues =~ ^[0-9]+$ ]] || [ "$queues" -lt 1 ] || [ "$queues" -gt 64 ]; then
		_lab_err "--queues '$queues': give 1..64 receive and transmit queues per veth"
		return 1
	fi
	if [ "$impair_set" = 1 ] && [ "$nodes" != 3 ]; then
		_lab_err "--impair needs the middle node: add --nodes 3"
		return 1
	fi
	if [ "$nodes" = 3 ]; then
		# Before building anything: no relay, no forwarding.
		_lab_relay_bin >/dev/null || return 1
	fi
	if [ "$(id -u)" -ne 0 ]; then
		_lab_err "must run as root (namespaces and veths need CAP_SYS_ADMIN)"
		return 1
	fi
	if [ -e "$LAB_STATE/$name" ] || ip netns list | grep -qE "^$name-[a-z]( |$)"; then
		_lab_err "lab '$name' exists: use it, or 'lab down --name $name' first"
		return 1
	fi
	mkdir -p "$LAB_STATE" || return 1
	# Register before building: a signal during the build still cleans up.
	if [ "${_LAB_LIBRARY:-1}" = 1 ]; then
		_LAB_MINE+=("$name")
		_lab_trap
	fi
	if ! _lab_build "$name" "$nodes" "$impair" "$tune" "$queues"; then
		lab_down --name "$name" >/dev/null 2>&1
		_lab_err "up: lab '$name' not created (partial state removed)"
		return 1
	fi
	echo "$name" >"$LAB_STATE/last.tmp" && mv -f "$LAB_STATE/last.tmp" "$LAB_STATE/last"
	LAB=$name
}

# lab_exec [--name NAME] [-T SEC] NODE -- CMD...
# Runs CMD in the node's namespace with plain `ip netns exec`, as a user
# would: nothing is mounted for it (xdp-vi needs no bpffs).  The command is
# exec'ed, so $! of a backgrounded lab_exec (without -T 0...) is the
# timeout process; use lab_pid_of or a pid file for the real one.
lab_exec() {
	local name="" tmo=$LAB_EXEC_TIMEOUT node ns
	while [ $# -gt 0 ]; do
		case $1 in
		--name) name=$2; shift 2 ;;
		--name=*) name=${1#--name=}; shift ;;
		-T) tmo=$2; shift 2 ;;
		*) break ;;
		esac
	done
	node=${1:-}
	shift || true
	[ "${1:-}" = "--" ] && shift
	if [ -z "$node" ] || [ $# -eq 0 ]; then
		_lab_err "usage: exec [--name NAME] [-T SEC] NODE -- CMD..."
		return 2
	fi
	name=$(_lab_pick "$name") || return 2
	if [[ " $(_lab_nodes_of "$name") " != *" $node "* ]]; then
		_lab_err "no node '$node' in lab $name (nodes: $(_lab_nodes_of "$name"))"
		return 2
	fi
	ns=$(_lab_ns "$name" "$node")
	if ! ip netns list | grep -qE "^$ns( |$)"; then
		_lab_err "lab $name has no namespace $ns: is the lab up? ('lab status --name $name')"
		return 2
	fi
	local -a pre=()
	# -T 0 = no bound (interactive shell).
	[ "$tmo" != 0 ] && pre=(timeout -k 5 "$tmo")
	"${pre[@]}" ip netns exec "$ns" env XVI_LAB="$name" XVI_LAB_NODE="$node" \
		XVI_LAB_IFACE="$LAB_IFACE" "$@"
}

lab_shell() {
	local name="" node rc
	while [ $# -gt 0 ]; do
		case $1 in
		--name) name=$2; shift 2 ;;
		--name=*) name=${1#--name=}; shift ;;
		*) break ;;
		esac
	done
	node=${1:-}
	name=$(_lab_pick "$name") || return 2
	[ -n "$node" ] || { _lab_err "usage: shell [--name NAME] NODE"; return 2; }
	rc=$LAB_STATE/$name/bashrc-$node
	cat >"$rc" <<-EOF
		[ -r ~/.bashrc ] && . ~/.bashrc
		PS1='[lab $name:$node \W]\\$ '
	EOF
	lab_exec --name "$name" -T 0 "$node" -- bash --rcfile "$rc" -i
}

# The XDP program on a node's lab interface, as "mode:id", or "none".
_lab_xdp_of() {
	local out
	out=$(ip -n "$1" -d -o link show dev "$LAB_IFACE" 2>/dev/null) || { echo none; return; }
	if [[ $out =~ prog/(xdp[a-z]*)\ id\ ([0-9]+) ]]; then
		echo "${BASH_REMATCH[1]}:${BASH_REMATCH[2]}"
	elif [[ $out =~ (xdp[a-z]*)/id:([0-9]+) ]]; then
		echo "${BASH_REMATCH[1]}:${BASH_REMATCH[2]}"
	else
		echo none
	fi
}

lab_status() {
	local name="" json=0 n ns up mac state xdp sep="" letters=(a b)
	while [ $# -gt 0 ]; do
		case $1 in
		--name) name=$2; shift 2 ;;
		--name=*) name=${1#--name=}; shift ;;
		--json) json=1; shift ;;
		*) _lab_err "status: unknown argument '$1'"; return 2 ;;
		esac
	done
	name=$(_lab_pick "$name") || return 2
	[ -r "$LAB_STATE/$name/env" ] || ip netns list | grep -qE "^$name-[a-z]( |$)" || {
		_lab_err "no lab '$name' (see 'lab list')"
		return 1
	}
	local healthy=1
	[ "$json" = 1 ] && printf '{"name":"%s","state_dir":"%s","iface":"%s","nodes":[' \
		"$name" "$LAB_STATE/$name" "$LAB_IFACE"
	[ "$json" = 1 ] || echo "lab $name (state $LAB_STATE/$name)"
	for n in "${letters[@]}"; do
		ns=$(_lab_ns "$name" "$n")
		up=false mac="" state=absent xdp=none
		if ip netns list | grep -qE "^$ns( |$)"; then
			up=true
			local l
			l=$(ip -n "$ns" -o link show dev "$LAB_IFACE" 2>/dev/null)
			if [ -n "$l" ]; then
				[[ $l == *LOWER_UP* ]] && state=up || state=down
				[[ $l =~ link/ether\ ([0-9a-f:]+) ]] && mac=${BASH_REMATCH[1]}
			fi
			xdp=$(_lab_xdp_of "$ns")
		fi
		[ "$up" = true ] && [ "$state" = up ] || healthy=0
		if [ "$json" = 1 ]; then
			printf '%s{"node":"%s","netns":"%s","exists":%s,"iface":"%s",' \
				"$sep" "$n" "$ns" "$up" "$LAB_IFACE"
			printf '"veth":"%s","link":"%s","mac":"%s",' \
				"$(_lab_veth "$name" "$n")" "$state" "$mac"
			printf '"ipv4":"%s","ipv4_prefix":"%s/24","ipv6":"%s","ipv6_prefix":"%s/64",' \
				"$(lab_addr4 "$n")" "$(lab_addr4 "$n")" "$(lab_addr6 "$n")" \
				"$(lab_addr6 "$n")"
			printf '"xdp":%s}' \
				"$([ "$xdp" = none ] && echo null ||
					printf '{"mode":"%s","prog_id":%s}' "${xdp%%:*}" "${xdp#*:}")"
			sep=,
		else
			printf '  node %s: netns %-10s iface %s (veth %s) link %-6s mac %s\n' \
				"$n" "$ns" "$LAB_IFACE" "$(_lab_veth "$name" "$n")" "$state" "${mac:--}"
			printf '          %s/24 %s/64  xdp %s\n' \
				"$(lab_addr4 "$n")" "$(lab_addr6 "$n")" "$xdp"
		fi
	done
	[ "$json" = 1 ] && printf ']'
	if [[ " $(_lab_nodes_of "$name") " == *" m "* ]]; then
		_lab_status_m "$name" "$json" || healthy=0
	fi
	if [ "$json" = 1 ]; then
		printf ',"healthy":%s}\n' "$([ $healthy = 1 ] && echo true || echo false)"
	else
		[ $healthy = 1 ] && echo "  healthy" || echo "  NOT healthy: 'lab down --name $name' and up again"
	fi
	[ $healthy = 1 ]
}

# The middle node and its relay: a "relay" member in JSON, after "nodes"
# (which keeps the two end nodes only, as in a two-node lab).
_lab_status_m() {
	local name=$1 json=$2 ns dir pid= running=false spec= v l st ifs="" ok=0
	ns=$(_lab_ns "$name" m)
	dir=$LAB_STATE/$name
	[ -r "$dir/relay.pid" ] && pid=$(<"$dir/relay.pid")
	[ -n "$pid" ] && ip netns pids "$ns" 2>/dev/null | grep -qx "$pid" && running=true
	[ -r "$dir/relay.spec" ] && spec=$(<"$dir/relay.spec")
	for v in "${LAB_M_IFACES[@]}"; do
		l=$(ip -n "$ns" -o link show dev "$v" 2>/dev/null)
		st=absent
		[ -n "$l" ] && { [[ $l == *LOWER_UP* ]] && st=up || st=down; }
		[ "$st" = up ] || ok=1
		ifs+="${ifs:+ }$v:$st"
	done
	[ "$running" = true ] || ok=1
	if [ "$json" = 1 ]; then
		printf ',"relay":{"node":"m","netns":"%s","ifaces":"%s","pid":%s,' "$ns" "$ifs" \
			"${pid:-null}"
		printf '"running":%s,"spec":"%s","stats_file":"%s/relay.stats"' "$running" \
			"${spec//\"/}" "$dir"
		printf ',"log":"%s/relay.log"}' "$dir"
	else
		printf '  node m: netns %-10s %s  relay pid %s (%s)\n' "$ns" "$ifs" "${pid:--}" \
			"$([ "$running" = true ] && echo running || echo 'NOT running')"
		printf '          impair %s  stats %s/relay.stats\n' "${spec:-none}" "$dir"
	fi
	return $ok
}

# Kill what runs in a namespace: TERM, then KILL, each bounded to ~2 s.
_lab_kill_ns() {
	local ns=$1 sig pids
	for sig in TERM KILL; do
		pids=$(ip netns pids "$ns" 2>/dev/null) || return 0
		[ -n "$pids" ] || return 0
		# shellcheck disable=SC2086
		kill -s $sig $pids 2>/dev/null
		for _ in $(seq 20); do
			[ -z "$(ip netns pids "$ns" 2>/dev/null)" ] && return 0
			sleep 0.1
		done
	done
	pids=$(ip netns pids "$ns" 2>/dev/null)
	[ -z "$pids" ] || _lab_err "processes survive in $ns: $pids"
}

lab_down() {
	local name="" n ns v
	while [ $# -gt 0 ]; do
		case $1 in
		--name) name=$2; shift 2 ;;
		--name=*) name=${1#--name=}; shift ;;
		*) _lab_err "down: unknown argument '$1'"; return 0 ;;
		esac
	done
	name=$(_lab_pick "$name") || return 0
	# The relay first, gracefully: its final counters land in relay.stats.
	[ -r "$LAB_STATE/$name/relay.pid" ] && lab_relay_stop --name "$name" >/dev/null 2>&1
	for n in a b m; do
		ns=$(_lab_ns "$name" "$n")
		ip netns list 2>/dev/null | grep -qE "^$ns( |$)" || continue
		_lab_kill_ns "$ns"
		# Detach whatever XDP is there (ours or a test's), then delete the
		# interface explicitly: a namespace that something still pins would
		# otherwise keep its devices and programs alive after `netns del`.
		for v in "$LAB_IFACE" "$(_lab_veth "$name" "$n")" "${LAB_M_IFACES[@]}" \
			"$(_lab_veth "$name" "${n}a")" "$(_lab_veth "$name" "${n}b")"; do
			ip -n "$ns" link show dev "$v" >/dev/null 2>&1 || continue
			ip -n "$ns" link set dev "$v" xdp off 2>/dev/null
			ip -n "$ns" link set dev "$v" xdpgeneric off 2>/dev/null
			ip -n "$ns" link del dev "$v" 2>/dev/null
		done
		ip netns del "$ns" 2>/dev/null || _lab_err "could not delete netns $ns"
	done
	# Never expected (the pair is created inside the namespaces), but if an
	# old lab left a veth of ours in the root namespace, remove it.
	for n in a b ma mb; do
		v=$(_lab_veth "$name" "$n")
		ip -o link show dev "$v" type veth >/dev/null 2>&1 && ip link del dev "$v" 2>/dev/null
	done
	# Whatever a user or a test mounted in the lab's state directory (a
	# bpffs shared by its nodes, say) goes before the directory does.
	local m
	while read -r m; do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null ||
			_lab_err "could not unmount $m"
	done < <(awk -v d="$LAB_STATE/$name/" 'index($2, d) == 1 {print $2}' /proc/self/mounts |
		sort -r)
	[ -d "$LAB_STATE/$name" ] && rm -rf --one-file-system "${LAB_STATE:?}/${name:?}"
	if [ -r "$LAB_STATE/last" ] && [ "$(<"$LAB_STATE/last")" = "$name" ]; then
		rm -f "$LAB_STATE/last"
	fi
	[ "${LAB:-}" = "$name" ] && LAB=
	return 0
}

lab_list() {
	local d name last=""
	[ -r "$LAB_STATE/last" ] && last=$(<"$LAB_STATE/last")
	for d in "$LAB_STATE"/*/; do
		[ -d "$d" ] || continue
		name=$(basename "$d")
		if ip netns list | grep -qE "^$name-a( |$)"; then
			printf '%s%s\n' "$name" "$([ "$name" = "$last" ] && echo ' (last)')"
		else
			printf '%s (broken: no namespace; lab down --name %s)\n' "$name" "$name"
		fi
	done
}
