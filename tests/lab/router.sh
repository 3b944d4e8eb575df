#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# router.sh: the datapath's IP router (docs/EXTENSIONS.md, "IP router") on
# the three-node lab turned into a routed one: a (198.18.1.0/24,
# 2001:2:1::/64) -- m -- b (198.18.2.0/24, 2001:2:2::/64), m routing with
# `xdp-vi router enable xva xvb`.  Ping, TCP and UDP cross m; whether XDP or
# the kernel forwarded them is told by the router's rt_forwarded and the
# kernel's own forwarding counters on m (ForwDatagrams, Ip6OutForwDatagrams).
# What the router must leave to the kernel (TTL 1, m's own addresses, a
# prohibit route) still gets the kernel's answer.

. "$(dirname "$0")/_tap.sh"

XVIRELAY=$T_BIN/xvi-relay
A4=198.18.1.1 M4A=198.18.1.254 M4B=198.18.2.254 B4=198.18.2.2
A6=2001:2:1::1 M6A=2001:2:1::fe M6B=2001:2:2::fe B6=2001:2:2::2

t_setup() {
	t_need "$XDPVI" "$XVIRELAY" || return 1
	T_LAB=$(t_lab_name rt)
	lab_up --name "$T_LAB" --nodes 3 >&2 || { fail "lab_up --nodes 3 $T_LAB failed"; return 1; }
	# The lab's m bridges in user space; here m routes in the kernel.
	lab_relay_stop --name "$T_LAB"
	_readdress || return 1
	local n i err
	for n in a b; do t_attach "$n" || return 1; done
	for i in xva xvb; do
		err=$(t_xdpvi m attach "$i" 2>&1 >/dev/null) ||
			{ fail "xdp-vi attach $i on m: ${err//$'\n'/ }"; return 1; }
	done
}

_readdress() {
	local n
	for n in a b; do
		t_x "$n" ip addr flush dev "$LAB_IFACE" || { fail "flush on $n"; return 1; }
	done
	t_x a ip addr add $A4/24 dev "$LAB_IFACE" &&
	t_x a ip addr add $A6/64 dev "$LAB_IFACE" nodad &&
	t_x a ip route add default via $M4A &&
	t_x a ip -6 route add default via $M6A &&
	t_x b ip addr add $B4/24 dev "$LAB_IFACE" &&
	t_x b ip addr add $B6/64 dev "$LAB_IFACE" nodad &&
	t_x b ip route add default via $M4B &&
	t_x b ip -6 route add default via $M6B &&
	t_x m sysctl -qw net.ipv6.conf.xva.disable_ipv6=0 net.ipv6.conf.xvb.disable_ipv6=0 &&
	t_x m ip link set xva promisc off &&
	t_x m ip link set xvb promisc off &&
	t_x m ip addr add $M4A/24 dev xva &&
	t_x m ip addr add $M6A/64 dev xva nodad &&
	t_x m ip addr add $M4B/24 dev xvb &&
	t_x m ip addr add $M6B/64 dev xvb nodad &&
	t_x m sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1 ||
		{ fail "could not make m a router"; return 1; }
	# Full checksums from a and b, as from a wire: a local kernel's
	# partial ones are the kernel's to forward (case partial).
	t_x a ethtool -K "$LAB_IFACE" tx off >/dev/null &&
	t_x b ethtool -K "$LAB_IFACE" tx off >/dev/null ||
		{ fail "cannot turn checksum offload off on a and b"; return 1; }
}

# _rt KEY [IFACE...]: KEY summed over m's interfaces, both unless named
# (xdp-vi router status --json).
_rt() {
	local key=$1
	shift
	[ $# -gt 0 ] || set -- xva xvb
	t_xdpvi m router status "$@" --json >"$T_TMP/rt.json" || return 1
	t_json_values "$T_TMP/rt.json" "$key" | awk '{ s += $1 } END { print s + 0 }'
}

# The egress interfaces of m's IFACE, one a line, sorted.
_egress() {
	t_xdpvi m router status "$1" | sed -n '1s/.*egress://p' | tr ' ' '\n' | sed '/^$/d' | sort
}

# Datagrams m's kernel forwarded, IPv4 plus IPv6.
_kfwd() {
	t_x m cat /proc/net/snmp /proc/net/snmp6 | awk '
		/^Ip: [A-Za-z]/ { for (i = 2; i <= NF; i++) if ($i == "ForwDatagrams") c = i }
		/^Ip: [0-9]/ { s += $c }
		$1 == "Ip6OutForwDatagrams" { s += $2 }
		END { print s + 0 }'
}

_pings() {	# NODE DST COUNT [ping args]: every echo answered
	local node=$1 dst=$2 n=$3
	shift 3
	t_x -T 20 "$node" ping -n -q -c "$n" -i 0.05 -W 2 "$@" "$dst" >"$T_TMP/ping.out" 2>&1 &&
		grep -q " $n received" "$T_TMP/ping.out"
}

case_refuse() {
	local err rc
	err=$(t_xdpvi m router enable xva nosuch 2>&1) && rc=0 || rc=$?
	[ $rc -ne 0 ] || fail "enable with an unknown interface succeeded" || return
	[[ $err == *nosuch* ]] || fail "error does not name the interface: $err" || return
	err=$(t_xdpvi m router enable xva lo 2>&1) && rc=0 || rc=$?
	[ $rc -ne 0 ] || fail "enable on an interface without the datapath succeeded" || return
	[[ $err == *"lo has no xdp-vi datapath"*"xdp-vi attach lo"* ]] ||
		fail "error does not name the problem and the fix: $err" || return
	# Nothing half done: xva does not route.
	t_xdpvi m router status xva --json >"$T_TMP/st.json" || fail "router status failed" ||
		return
	[ "$(t_json_values "$T_TMP/st.json" routing)" = False ] ||
		fail "xva routes after a refused enable: $(cat "$T_TMP/st.json")"
}

case_enable() {
	local err
	err=$(t_xdpvi m router enable xva xvb 2>&1) || fail "router enable: $err" || return
	t_xdpvi m router status xva xvb --json >"$T_TMP/st.json" || fail "status failed" || return
	[ "$(t_json_values "$T_TMP/st.json" routing | sort -u)" = True ] ||
		fail "not routing: $(cat "$T_TMP/st.json")" || return
	# Attaching again (a MAC refresh) keeps routing on.
	err=$(t_xdpvi m attach xva 2>&1 >/dev/null) || fail "attach again: $err" || return
	t_xdpvi m router status xva --json >"$T_TMP/st.json" || fail "status failed" || return
	[ "$(t_json_values "$T_TMP/st.json" routing)" = True ] ||
		fail "attach again turned routing off: $(cat "$T_TMP/st.json")"
}

# The first echo of each family may find no neighbour yet (passed to the
# kernel, which resolves it); after that, m's kernel forwards nothing.
case_ping() {
	local f0 f1 k0 k1
	_pings a $B4 3 && _pings a $B6 3 || fail "ping a -> b: $(cat "$T_TMP/ping.out")" || return
	f0=$(_rt rt_forwarded) k0=$(_kfwd)
	_pings a $B4 20 || fail "ping a -> $B4: $(cat "$T_TMP/ping.out")" || return
	_pings b $A6 20 || fail "ping b -> $A6: $(cat "$T_TMP/ping.out")" || return
	f1=$(_rt rt_forwarded) k1=$(_kfwd)
	t_log "80 ICMP frames: rt_forwarded +$((f1 - f0)), kernel forwarded +$((k1 - k0))"
	[ $((f1 - f0)) -ge 80 ] || fail "XDP forwarded $((f1 - f0)) frames, expected >= 80" || return
	[ $((k1 - k0)) -eq 0 ] || fail "m's kernel forwarded $((k1 - k0)) datagrams"
}

case_tcp() {
	local f0 f1 k0 k1 spid
	t_x -T 30 b iperf3 -s -1 -B $B4 -p 5201 >"$T_TMP/iperf-s.out" 2>&1 &
	spid=$!
	t_wait_tcp_port b 5201 || { t_stop $spid
		fail "iperf3 server on b did not start: $(cat "$T_TMP/iperf-s.out")"; return 1; }
	f0=$(_rt rt_forwarded) k0=$(_kfwd)
	t_x -T 30 a iperf3 -c $B4 -p 5201 -n 32M -J >"$T_TMP/iperf.json" 2>"$T_TMP/iperf.err" ||
		{ t_stop $spid; fail "iperf3 a -> b: $(cat "$T_TMP/iperf.err") $(grep error "$T_TMP/iperf.json")"; return 1; }
	t_stop $spid
	f1=$(_rt rt_forwarded) k1=$(_kfwd)
	t_log "TCP 32 MiB: $(t_json_values "$T_TMP/iperf.json" bits_per_second | tail -1) bit/s," \
		"rt_forwarded +$((f1 - f0)), kernel forwarded +$((k1 - k0))"
	# 32 MiB is more than 20000 full frames, plus the ACKs.
	[ $((f1 - f0)) -ge 20000 ] || fail "XDP forwarded only $((f1 - f0)) frames" || return
	[ $((k1 - k0)) -le 5 ] || fail "m's kernel forwarded $((k1 - k0)) datagrams"
}

case_udp() {
	local f0 f1 got rpid ready=$T_TMP/udp.ready
	t_x -T 40 b "$PY" "$T_HELPERS/udp_recv.py" $B4 7400 --ready "$ready" --count 500 \
		--idle 5 --max 30 --format '{len}' >"$T_TMP/udp.out" 2>"$T_TMP/udp.err" &
	rpid=$!
	t_wait_file "$ready" || { t_stop $rpid; fail "receiver on b did not start"; return 1; }
	f0=$(_rt rt_forwarded)
	t_x -T 30 a "$PY" "$T_HELPERS/udp_send.py" $B4 7400 --message 'x' --fill-to 1000 \
		--count 500 --gap 0.001 || { t_stop $rpid; fail "udp_send failed"; return 1; }
	wait $rpid
	f1=$(_rt rt_forwarded)
	got=$(wc -l <"$T_TMP/udp.out")
	[ "$got" -eq 500 ] || fail "b received $got of 500 datagrams: $(head -3 "$T_TMP/udp.err")" ||
		return
	[ $((f1 - f0)) -ge 500 ] || fail "XDP forwarded $((f1 - f0)) of 500 datagrams"
}

# a's kernel offloads the UDP checksum: on the veth the frame carries only
# the pseudo-header sum.  The router leaves it to m's kernel, which
# completes it; every datagram arrives.
case_partial() {
	local p0 p1 got rpid ready=$T_TMP/p.ready
	t_x a ethtool -K "$LAB_IFACE" tx on >/dev/null || fail "ethtool tx on" || return
	t_x -T 40 b "$PY" "$T_HELPERS/udp_recv.py" $B4 7401 --ready "$ready" --count 50 \
		--idle 5 --max 30 --format '{len}' >"$T_TMP/p.out" 2>"$T_TMP/p.err" &
	rpid=$!
	t_wait_file "$ready" || { t_stop $rpid; fail "receiver on b did not start"; return 1; }
	p0=$(_rt rt_pass_csum_partial)
	t_x -T 30 a "$PY" "$T_HELPERS/udp_send.py" $B4 7401 --message 'p' --fill-to 200 \
		--count 50 --gap 0.001
	wait $rpid
	p1=$(_rt rt_pass_csum_partial)
	t_x a ethtool -K "$LAB_IFACE" tx off >/dev/null
	got=$(wc -l <"$T_TMP/p.out")
	[ "$got" -eq 50 ] || fail "b received $got of 50 datagrams" || return
	[ $((p1 - p0)) -ge 50 ] || fail "rt_pass_csum_partial moved by $((p1 - p0)), expected 50"
}

case_ttl() {
	local t0 t1
	t0=$(_rt rt_pass_ttl)
	t_x -T 10 a ping -n -c 1 -W 2 -t 1 $B4 >"$T_TMP/ttl.out" 2>&1
	grep -q "From $M4A.*Time to live exceeded" "$T_TMP/ttl.out" ||
		fail "no time exceeded from m: $(cat "$T_TMP/ttl.out")" || return
	t_x -T 10 a ping -n -c 1 -W 2 -t 1 $B6 >"$T_TMP/ttl.out" 2>&1
	grep -q "From $M6A.*Time exceeded" "$T_TMP/ttl.out" ||
		fail "no IPv6 time exceeded from m: $(cat "$T_TMP/ttl.out")" || return
	t1=$(_rt rt_pass_ttl)
	[ $((t1 - t0)) -ge 2 ] || fail "rt_pass_ttl moved by $((t1 - t0)), expected 2"
}

# m's own addresses, also the one on the far interface: the kernel's.
case_local() {
	local l0 l1
	l0=$(_rt rt_pass_local)
	_pings a $M4B 5 && _pings a $M6B 5 ||
		fail "m's own address unreachable: $(cat "$T_TMP/ping.out")" || return
	l1=$(_rt rt_pass_local)
	[ $((l1 - l0)) -ge 10 ] || fail "rt_pass_local moved by $((l1 - l0)), expected >= 10"
}

# The kernel's routing table decides, at once: a prohibit route on m stops
# the flow (the kernel answers), deleting it brings the flow back.
case_route_change() {
	local o0 o1
	o0=$(_rt rt_pass_other)
	t_x m ip route add prohibit $B4/32 || fail "cannot add the route" || return
	t_x -T 10 a ping -n -c 1 -W 2 $B4 >"$T_TMP/pr.out" 2>&1
	t_x m ip route del prohibit $B4/32
	grep -q "From $M4A.*Packet filtered" "$T_TMP/pr.out" ||
		fail "the prohibit route did not take effect: $(cat "$T_TMP/pr.out")" || return
	o1=$(_rt rt_pass_other)
	[ $((o1 - o0)) -ge 1 ] || fail "rt_pass_other did not move" || return
	_pings a $B4 3 || fail "no way through after the route went: $(cat "$T_TMP/ping.out")"
}

case_disable() {
	local err f0 f1 k0 k1
	err=$(t_xdpvi m router disable xva xvb 2>&1) || fail "router disable: $err" || return
	f0=$(_rt rt_forwarded) k0=$(_kfwd)
	_pings a $B4 10 || fail "ping a -> b with routing off: $(cat "$T_TMP/ping.out")" || return
	f1=$(_rt rt_forwarded) k1=$(_kfwd)
	[ "$f1" = "$f0" ] || fail "XDP forwarded $((f1 - f0)) frames with routing off" || return
	[ $((k1 - k0)) -ge 20 ] || fail "m's kernel forwarded $((k1 - k0)), expected >= 20"
}

# Both routing again, then xvb detached: detach takes it out of xva's
# egress interfaces, so what a sends to b is passed on xva
# (rt_pass_no_egress) to m's kernel, which forwards it, as it does b's
# replies arriving on xvb, which no longer runs XDP.  Left in xva's map,
# xvb would still get a's frames redirected (and dropped if b's end ran no
# XDP, docs/KERNEL.md, fact 7).
case_detach() {
	local err eg f0 f1 n0 n1 k0 k1
	err=$(t_xdpvi m router enable xva xvb 2>&1) || fail "router enable: $err" || return
	eg=$(_egress xva | tr '\n' ' ')
	[ "$eg" = "xva xvb " ] || fail "xva's egress before the detach: $eg" || return
	_pings a $B4 3 || fail "ping a -> b routed again: $(cat "$T_TMP/ping.out")" || return
	err=$(t_xdpvi m detach xvb 2>&1 >/dev/null) || fail "detach xvb: $err" || return
	eg=$(_egress xva | tr '\n' ' ')
	[ "$eg" = "xva " ] || fail "xva's egress after detaching xvb: $eg" || return
	f0=$(_rt rt_forwarded xva) n0=$(_rt rt_pass_no_egress xva) k0=$(_kfwd)
	_pings a $B4 10 || fail "ping a -> b after detaching xvb: $(cat "$T_TMP/ping.out")" ||
		return
	f1=$(_rt rt_forwarded xva) n1=$(_rt rt_pass_no_egress xva) k1=$(_kfwd)
	t_log "10 echoes after detaching xvb: rt_forwarded +$((f1 - f0))," \
		"rt_pass_no_egress +$((n1 - n0)), kernel forwarded +$((k1 - k0))"
	[ "$f1" = "$f0" ] || fail "xva forwarded $((f1 - f0)) frames to the detached xvb" || return
	[ $((n1 - n0)) -ge 10 ] || fail "rt_pass_no_egress moved by $((n1 - n0)), expected >= 10" ||
		return
	[ $((k1 - k0)) -ge 20 ] || fail "m's kernel forwarded $((k1 - k0)), expected >= 20"
}

# xvb went in case detach.
case_nothing_left() {
	local i err
	err=$(t_xdpvi m detach xva 2>&1 >/dev/null) || fail "detach xva: $err" || return
	for i in a b; do t_xdpvi "$i" detach "$LAB_IFACE" >/dev/null 2>&1; done
	[ -z "$(t_x m ip -d link show | grep -E 'prog/xdp')" ] ||
		fail "XDP left on m: $(t_x m ip -d link show | grep -E 'prog/xdp')"
}

# shellcheck disable=SC2034 # read by t_main
CASES=(
	refuse		case_refuse		"enable names a missing interface or datapath, changes nothing"
	enable		case_enable		"router enable xva xvb on m: both route, and keep routing across attach"
	ping		case_ping		"ping a <-> b through m, IPv4 and IPv6, forwarded by XDP"
	tcp		case_tcp		"iperf3 TCP a -> b through m, forwarded by XDP"
	udp		case_udp		"500 UDP datagrams a -> b through m, none lost"
	partial		case_partial		"partial UDP checksums from a local kernel: forwarded by m's kernel"
	ttl		case_ttl		"TTL / hop limit 1: the kernel on m sends time exceeded"
	local		case_local		"m's own addresses still reach m's kernel"
	route_change	case_route_change	"a prohibit route on m takes effect, and its removal"
	disable		case_disable		"router disable: the kernel forwards again"
	detach		case_detach		"xvb detached: out of xva's egress, m's kernel forwards a -> b"
	nothing_left	case_nothing_left	"detach leaves no XDP program on m"
)

t_main "$@"
