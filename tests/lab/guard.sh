#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# guard.sh: what a protected endpoint's pair lets in and out, attacked by
# unprivileged users.
#
#   node a (kernel sockets, tcpdump)  <--xv0--xv0-->  node b (xdp-vi + xdp-vid)
#   MTU 9000 on both                                  xvh<ifx>-<slot> ~veth~ xvc<ifx>-<slot>
#                                                     clients and attackers:
#                                                     setpriv --reuid 4xxxx
#                                                     --inh-caps=-all
#
# In: a second uid sends from an ordinary socket bound (SO_BINDTODEVICE) to
# an endpoint's host end, to 255.255.255.255 with SO_BROADCAST and
# SO_NO_CHECK; the endpoint never sees it, whether the host end's egress
# program stops it or, without that program, the client end's.  A wildcard
# endpoint does not get datagrams for an address node b only routes to: the
# kernel forwards them.
# Out: frames the endpoint's own identity may not carry by default (group
# destinations, IPv4 options, DSCP CS6, a control protocol's port, longer
# than the capped MTU) are dropped by the guard, counted, and absent from
# node a's wire.  Nothing is left behind.

. "$(dirname "$0")/_tap.sh"

XVID=$T_B/bin/xdp-vid
MBTOOL=$T_B/tests/mbtool
RUN=$T_TMP/run			# XVI_RUN_DIR of daemon and clients
BIN=$T_TMP/bin			# the binaries, where the plain uids may run them
UHELPERS=$BIN/helpers		# tests/lab/helpers, where the plain uids can read them
MTU=9000
VIDPID=
VIDJOB=
BEFORE=
# Plain uids without capabilities, unique to this run (a segment counts
# against its uid's RLIMIT_MEMLOCK, and other suites run meanwhile).
OWNER=$((40000 + $$ % 20000))
ATTACKER=$((OWNER + 1))
AS_OWNER=(setpriv --reuid=$OWNER --regid=65534 --clear-groups --inh-caps=-all)
AS_ATTACKER=(setpriv --reuid=$ATTACKER --regid=65534 --clear-groups --inh-caps=-all)
UPY=/usr/bin/python3

_counts() {
	echo "veths $(t_x b ip -o link show type veth | wc -l)"
	echo "xdp $(t_x b ip -o link show | grep -c 'prog/xdp')"
	echo "tc $(t_x b bpftool -j net show 2>/dev/null | "$PY" "$T_HELPERS/bpftool_json.py" \
		tc-prog-ids | wc -l)"
}

# xdp-vid removes its endpoints and exits on SIGTERM; t_x bounds the wait.
_stop_vid() {
	[ -n "$VIDPID" ] || return 0
	kill -TERM "$VIDPID" 2>/dev/null
	wait "$VIDJOB" 2>/dev/null
	VIDPID=
}

t_setup() {
	t_need "$XDPVI" "$XVICAT" "$XVID" "$MBTOOL" || return 1
	chmod 0755 "$T_TMP"
	mkdir -p "$RUN" "$BIN" && chmod 0755 "$RUN" "$BIN"
	cp "$XVICAT" "$MBTOOL" "$BIN/" && cp -r "$T_HELPERS" "$UHELPERS" &&
		chmod 0755 "$BIN"/* && chmod -R a+rX "$UHELPERS" || return 1
	t_lab_up gd || return 1
	lab_at_exit "_stop_vid"
	t_x a ip link set "$LAB_IFACE" mtu $MTU && t_x b ip link set "$LAB_IFACE" mtu $MTU ||
		{ fail "cannot set MTU $MTU on the lab's veth"; return 1; }
	t_attach b || return 1
	BEFORE=$(_counts)
	printf '%s\n' "# guard.sh" "allow * udp 1024-65535 addr iface" >"$T_TMP/policy"
	t_x -T 600 b sh -c 'echo $$ >"$0"; exec "$@"' "$T_TMP/vid.pid" \
		env XVI_RUN_DIR="$RUN" "$XVID" -v --policy "$T_TMP/policy" "$LAB_IFACE" \
		>"$T_TMP/vid.log" 2>&1 &
	VIDJOB=$!
	t_wait_file "$T_TMP/vid.pid" || { fail "xdp-vid did not start"; return 1; }
	VIDPID=$(<"$T_TMP/vid.pid")
	# xdp-vid says where it serves once its socket listens
	for _ in $(seq "$T_WAIT_TENTHS"); do
		grep -q "serving protected endpoints" "$T_TMP/vid.log" && break
		sleep 0.1
	done
	grep -q "serving protected endpoints" "$T_TMP/vid.log" ||
		{ fail "xdp-vid is not serving: $(tail -3 "$T_TMP/vid.log")"; return 1; }
	MAC_A=$(t_x a cat "/sys/class/net/$LAB_IFACE/address")
	MAC_B=$(t_x b cat "/sys/class/net/$LAB_IFACE/address")
}

# _ep PORT KEY: from `xdp-vi status --json`, for the endpoint on PORT:
# KEY is "host", "mtu" (of the host end) or a guard counter.
_ep() {
	local name
	case $2 in
	host) name=host_end.ifname ;;
	mtu) name=host_end.mtu ;;
	*) name=guard.$2 ;;
	esac
	t_xdpvi b status --json >"$T_TMP/ep.json" 2>/dev/null
	"$PY" "$T_HELPERS/xvi_status.py" "$T_TMP/ep.json" field "$1" "$name"
}

# _wait_count PORT COUNTER N: until the endpoint's COUNTER is at least N.
_wait_count() {
	local v
	for _ in $(seq "$T_WAIT_TENTHS"); do
		v=$(_ep "$1" "$2")
		[ "${v:-0}" -ge "$3" ] && return 0
		sleep 0.1
	done
	t_log "$2 of the endpoint on $1 is ${v:-absent}, waited for $3"
	return 1
}

# _listen ADDR PORT: the owner's xvi-cat takes one datagram (pid LPID, its
# job LJOB, output $T_TMP/l-PORT.out), once its endpoint is live.  It exits
# after that datagram, or after 30 s without one (the bound of a broken run).
_listen() {
	local pidf=$T_TMP/l-$2.pid
	rm -f "$pidf"
	t_x -T 60 b sh -c 'echo $$ >"$0"; exec "$@"' "$pidf" env XVI_RUN_DIR="$RUN" \
		"${AS_OWNER[@]}" "$BIN/xvi-cat" -u --iface "$LAB_IFACE" -l "$1" "$2" -w 30 -c 1 \
		>"$T_TMP/l-$2.out" 2>"$T_TMP/l-$2.err" &
	LJOB=$!
	t_wait_file "$pidf" || return 1
	LPID=$(<"$pidf")
	t_wait_endpoint_port b "$2"
}

# A kernel socket on node a sends "TOKEN" to 198.18.0.2:PORT (or DST:PORT).
_send_from_a() {
	t_x -T 20 a "$PY" "$T_HELPERS/udp_send.py" "${3:-198.18.0.2}" "$2" --message "$1" \
		--no-newline
}

# _inject PORT COUNTER: inject 3 datagrams into the endpoint on PORT, wait
# until COUNTER counted them, then send the endpoint a datagram from node a:
# its listener (one datagram) must get that one and not the injected ones.
_inject() {
	local port=$1 counter=$2 host tok="INJECT-$RANDOM" ok="LEGIT-$RANDOM" out
	host=$(_ep "$port" host)
	[ -n "$host" ] || { fail "no host end for the endpoint on $port"; return 1; }
	# the reproduced injection, as the second uid: an ordinary UDP socket
	# bound to the host end, broadcast allowed, no checksum
	out=$(t_x -T 20 b "${AS_ATTACKER[@]}" "$UPY" "$UHELPERS/udp_send.py" 255.255.255.255 \
		"$port" --message "$tok" --no-newline --count 3 --device "$host" --broadcast \
		--no-checksum 2>&1) ||
		{ fail "uid $ATTACKER could not send on $host: ${out//$'\n'/ }"; return 1; }
	_wait_count "$port" "$counter" 3 || { kill "$LPID" 2>/dev/null
		fail "the injected datagrams were not counted in $counter"; return 1; }
	_send_from_a "$ok" "$port"
	wait "$LJOB" || { fail "the listener never got its datagram"; return 1; }
	! grep -q "$tok" "$T_TMP/l-$port.out" ||
		{ fail "the endpoint received the injected datagram"; return 1; }
	grep -q "$ok" "$T_TMP/l-$port.out" ||
		fail "the endpoint missed node a's datagram: $(cat "$T_TMP/l-$port.out")"
}

# The datapath's frames reach the endpoint through the host end with
# xvi_host_egress on its TC egress: redirected frames never pass it.
case_rx_past_egress() {
	local tok="RX-$RANDOM" host
	_listen 198.18.0.2 7800 || fail "listener: $(cat "$T_TMP/l-7800.err")" || return
	host=$(_ep 7800 host)
	t_x b tc filter show dev "$host" egress | grep -q xvi_host_egress ||
		{ kill "$LPID"; fail "no xvi_host_egress at TC egress of $host"; return; }
	_send_from_a "$tok" 7800
	wait "$LJOB" || { fail "the listener got nothing"; return; }
	grep -q "$tok" "$T_TMP/l-7800.out" || fail "got '$(cat "$T_TMP/l-7800.out")', not $tok"
}

case_inject() {
	_listen 0.0.0.0 7810 || fail "listener: $(cat "$T_TMP/l-7810.err")" || return
	_inject 7810 drop_host_egress
}

# Without the host end's egress program, the client end's still refuses
# frames that lack the datapath's metadata for the slot.
case_inject_past_egress() {
	local host
	_listen 0.0.0.0 7811 || fail "listener: $(cat "$T_TMP/l-7811.err")" || return
	host=$(_ep 7811 host)
	t_x b tc filter del dev "$host" egress ||
		{ kill "$LPID"; fail "cannot remove the egress program of $host"; return; }
	_inject 7811 drop_client_meta
}

# _frames MODE TOKEN PORT [FRAME_BYTES]: what the owner posts for a guard
# case, hex frames one a line for mbtool's frames command: 3 of MODE from
# 198.18.0.2:PORT, a plain one ("FENCE-TOKEN") that the guard lets out
# behind them, and the empty line on which mbtool waits for the sends.
_frames() {
	local mode=$1 tok=$2 port=$3 dst=198.18.0.1 dmac=$MAC_A dport=9400 more=() f
	case $mode in
	bcast) dst=255.255.255.255 dmac=ff:ff:ff:ff:ff:ff ;;
	mcast) dst=239.255.255.250 dmac=01:00:5e:7f:ff:fa ;;
	options) more=(--ip-options 01010100) ;;	# NOP NOP NOP EOL
	dscp) more=(--tos $((48 << 2))) ;;		# CS6
	ctlport) dport=1985 ;;				# HSRP
	esac
	[ -n "${4:-}" ] && more+=(--fill-to "$4")
	f=$(_frame "$port" --dst "$dst" --dst-mac "$dmac" --dport "$dport" --payload "$tok" \
		"${more[@]}") || return
	printf '%s\n' "$f" "$f" "$f"
	_frame "$port" --dst 198.18.0.1 --dst-mac "$MAC_A" --dport 9400 --payload "FENCE-$tok"
	echo
}

# _frame PORT ARGS...: in hex, a frame the owner's endpoint on
# 198.18.0.2:PORT may post to node a (udp4_frame.py ARGS say the rest).
_frame() {
	local port=$1
	shift
	"$PY" "$T_HELPERS/udp4_frame.py" --src 198.18.0.2 --sport "$port" --src-mac "$MAC_B" --df \
		--hex "$@"
}

# _attack MODE COUNTER PORT [FRAME_BYTES]: the owner opens 198.18.0.2:PORT
# and posts _frames's frames (XVI_TX_FRAME) to node a, captured there.  The
# guard's COUNTER must count all 3 of MODE and node a must see none of them
# (MODE "max": all 3) but the fence behind them, which shows that anything
# the guard let out would have arrived.
_attack() {
	local mode=$1 counter=$2 port=$3 tok="GUARD-$1-$RANDOM" hold=$T_TMP/hold-$1 seen want=0
	local counted=
	[ "$mode" = max ] && want=3
	t_x -T 60 a tcpdump -i "$LAB_IFACE" -n -A -l -s 0 udp >"$T_TMP/cap-$mode" \
		2>"$T_TMP/cap-$mode.err" &
	local cpid=$!
	for _ in $(seq "$T_WAIT_TENTHS"); do
		grep -q "listening on" "$T_TMP/cap-$mode.err" 2>/dev/null && break
		sleep 0.1
	done
	# mbtool holds its endpoint (and so the counters) until the fifo closes
	rm -f "$hold" && mkfifo "$hold" && chmod 0666 "$hold"
	t_x -T 60 b env XVI_RUN_DIR="$RUN" "${AS_OWNER[@]}" "$BIN/mbtool" -x -i "$LAB_IFACE" \
		-l 198.18.0.2 -p "$port" frames <"$hold" >"$T_TMP/mb-$mode.out" \
		2>"$T_TMP/mb-$mode.err" &
	local mpid=$!
	exec 8>"$hold"
	_frames "$mode" "$tok" "$port" ${4:+"$4"} >&8
	_wait_count "$port" "$counter" 3 && counted=1
	for _ in $(seq "$T_WAIT_TENTHS"); do
		grep -q "FENCE-$tok" "$T_TMP/cap-$mode" && break
		sleep 0.1
	done
	exec 8>&-
	wait "$mpid"
	t_stop "$cpid"
	seen=$(grep -v "FENCE-$tok" "$T_TMP/cap-$mode" | grep -c "$tok")
	t_log "$mode: $seen on node a's wire; guard $counter counted 3: ${counted:-no}"
	grep -q "FENCE-$tok" "$T_TMP/cap-$mode" ||
		{ fail "$mode: the fence frame never reached node a: $(tr '\n' ' ' \
			<"$T_TMP/mb-$mode.err")"; return 1; }
	[ -n "$counted" ] || { fail "$mode: the guard did not count 3 in $counter"; return 1; }
	[ "$seen" = "$want" ] || fail "$mode: $seen frame(s) on node a's wire, want $want"
}

case_bcast() { _attack bcast drop_guard_group 7820; }
case_mcast() { _attack mcast drop_guard_group 7821; }
case_options() { _attack options drop_guard_ip_options 7822; }
case_dscp() { _attack dscp drop_guard_dscp 7823; }
case_ctlport() { _attack ctlport drop_guard_ctl_port 7824; }

# 2048-byte frames hold 2048 - 256 - 14 = 1778 bytes of IP: the pair's MTU
# on a 9000-byte interface.  A frame of MTU + 18 still enters the host end
# (the kernel's allowance for a VLAN tag); the guard drops it.
case_mtu() {
	local mtu
	_listen 198.18.0.2 7830 || fail "listener: $(cat "$T_TMP/l-7830.err")" || return
	mtu=$(_ep 7830 mtu)
	kill "$LPID"
	[ "$mtu" = 1778 ] || fail "host end MTU '$mtu', want 1778 (2048-byte frames)" || return
	_attack max tx_guard_pass 7831 $((1778 + 14)) || return
	_attack long drop_guard_len 7832 $((1778 + 18)) || return
	# 4096-byte frames would hold 3826, more than a page holds for a
	# single-buffer XDP program on a veth: the kernel's bound applies
	local hold=$T_TMP/hold-4k
	rm -f "$hold" && mkfifo "$hold" && chmod 0666 "$hold"
	t_x -T 60 b env XVI_RUN_DIR="$RUN" "${AS_OWNER[@]}" "$BIN/mbtool" -x -f 4096 \
		-i "$LAB_IFACE" -l 198.18.0.2 -p 7833 frames <"$hold" >/dev/null \
		2>"$T_TMP/mb-4k.err" &
	local mpid=$!
	exec 8>"$hold"
	t_wait_endpoint_port b 7833 && mtu=$(_ep 7833 mtu)
	exec 8>&-
	wait "$mpid" || fail "4096-byte frames: $(tr '\n' ' ' <"$T_TMP/mb-4k.err")" || return
	t_log "host end MTU with 4096-byte frames: $mtu"
	[ "${mtu:-0}" -gt 1778 ] && [ "$mtu" -le 3826 ] ||
		fail "host end MTU '$mtu' with 4096-byte frames, want 1779-3826"
}

# Node b routes 198.19.7.0/24 to a network behind it (a veth pair inside
# node b standing for a container's), node a routes it via node b.  A
# wildcard endpoint on b gets a datagram to b's own address there
# (198.19.7.1), not one to 198.19.7.7, which the kernel forwards.
case_wildcard_not_local() {
	local tok="NOTLOCAL-$RANDOM" ok="LOCAL-$RANDOM" before after cpid
	t_x b ip link add xgc0 type veth peer name xgc1 &&
		t_x b ip addr add 198.19.7.1/24 dev xgc0 && t_x b ip link set xgc0 up &&
		t_x b ip link set xgc1 up && t_x b sysctl -qw net.ipv4.ip_forward=1 &&
		t_x b ip neigh replace 198.19.7.7 lladdr 02:00:00:00:07:07 dev xgc0 &&
		t_x a ip route replace 198.19.7.0/24 via 198.18.0.2 ||
		fail "cannot build the routed network" || return
	# the claim reads the host's addresses: 198.19.7.1 is one now
	_listen 0.0.0.0 7840 || fail "listener: $(cat "$T_TMP/l-7840.err")" || return
	t_x -T 60 b tcpdump -i xgc1 -n -A -l udp >"$T_TMP/cap-fwd" 2>"$T_TMP/cap-fwd.err" &
	cpid=$!
	for _ in $(seq "$T_WAIT_TENTHS"); do
		grep -q "listening on" "$T_TMP/cap-fwd.err" 2>/dev/null && break
		sleep 0.1
	done
	t_xdpvi b status --json >"$T_TMP/nl.json"
	before=$(t_json_values "$T_TMP/nl.json" not_local | head -1)
	_send_from_a "$tok" 7840 198.19.7.7
	for _ in $(seq "$T_WAIT_TENTHS"); do
		grep -q "$tok" "$T_TMP/cap-fwd" && break
		sleep 0.1
	done
	_send_from_a "$ok" 7840 198.19.7.1
	wait "$LJOB"
	t_stop "$cpid"
	t_xdpvi b status --json >"$T_TMP/nl.json"
	after=$(t_json_values "$T_TMP/nl.json" not_local | head -1)
	t_x b ip link del xgc0
	t_x a ip route del 198.19.7.0/24
	t_log "not_local $before -> $after"
	grep -q "$tok" "$T_TMP/cap-fwd" ||
		fail "the kernel did not forward the datagram for 198.19.7.7" || return
	! grep -q "$tok" "$T_TMP/l-7840.out" ||
		fail "the wildcard endpoint took a datagram for 198.19.7.7" || return
	grep -q "$ok" "$T_TMP/l-7840.out" ||
		fail "the wildcard endpoint missed its datagram for 198.19.7.1" || return
	[ "$((after - before))" -ge 1 ] || fail "not_local went $before -> $after"
}

case_no_leftovers() {
	local after
	_stop_vid
	after=$(_counts)
	[ "$after" = "$BEFORE" ] || fail "before: ${BEFORE//$'\n'/; } after: ${after//$'\n'/; }" ||
		return
	! ls "$RUN"/*.sock >/dev/null 2>&1 || fail "socket left in $RUN"
}

# shellcheck disable=SC2034 # read by t_main
CASES=(
	rx_past_egress	case_rx_past_egress	"the datapath's frames pass the host end's egress program"
	inject		case_inject		"SO_BINDTODEVICE + broadcast from another uid: dropped at the host end"
	inject_past_egress case_inject_past_egress "the same without the egress program: dropped at the client end"
	bcast		case_bcast		"to 255.255.255.255: dropped, counted, not on the wire"
	mcast		case_mcast		"to 239.255.255.250: dropped, counted, not on the wire"
	options		case_options		"IPv4 options: dropped, counted, not on the wire"
	dscp		case_dscp		"DSCP CS6: dropped, counted, not on the wire"
	ctlport		case_ctlport		"to HSRP's port: dropped, counted, not on the wire"
	mtu		case_mtu		"MTU capped at one frame; longer frames dropped, counted"
	wildcard_not_local case_wildcard_not_local "a wildcard endpoint gets no datagram for a routed address"
	no_leftovers	case_no_leftovers	"veths, XDP and TC programs as before; no socket left"
)

t_main "$@"
