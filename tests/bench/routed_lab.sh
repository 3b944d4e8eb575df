# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# tests/bench/routed_lab.sh: sourced by the benchmarks that need a routed
# three-node lab (netns-lab/lib.sh sourced first).  Node m stops the relay
# and routes between two subnets with the kernel's forwarding:
#
#   a 198.18.1.1/24 -- xva  m  xvb -- 198.18.2.2/24 b
#                   198.18.1.254  198.18.2.254
#
# Nothing is attached and the veths keep their default settings; each
# benchmark adds what it measures.

# routed_lab_up NAME: build it, or fail with a message on stderr.
routed_lab_up() {
	local name=$1 n

	_rx() { lab_exec --name "$name" -T 30 "$@"; }
	lab_up --name "$name" --nodes 3 >&2 || { echo "routed lab: lab_up failed" >&2; return 1; }
	lab_relay_stop --name "$name"
	for n in a b; do
		_rx "$n" -- ip addr flush dev xv0 || return 1
	done
	_rx a -- ip addr add 198.18.1.1/24 dev xv0 &&
		_rx a -- ip route add default via 198.18.1.254 &&
		_rx b -- ip addr add 198.18.2.2/24 dev xv0 &&
		_rx b -- ip route add default via 198.18.2.254 &&
		_rx m -- ip link set xva promisc off && _rx m -- ip link set xvb promisc off &&
		_rx m -- ip addr add 198.18.1.254/24 dev xva &&
		_rx m -- ip addr add 198.18.2.254/24 dev xvb &&
		_rx m -- sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1 ||
		{ echo "routed lab: could not build the routed lab" >&2; return 1; }
}

# routed_lab_ipv6 NAME: the same lab routed for IPv6 too, as the router's
# lab test has it (the lab disables IPv6 on m's veths):
#
#   a 2001:2:1::1/64 -- xva  m  xvb -- 2001:2:2::2/64 b
#                 2001:2:1::fe  2001:2:2::fe
routed_lab_ipv6() {
	local name=$1

	_rx() { lab_exec --name "$name" -T 30 "$@"; }
	_rx m -- sysctl -qw net.ipv6.conf.xva.disable_ipv6=0 net.ipv6.conf.xvb.disable_ipv6=0 &&
		_rx m -- ip addr add 2001:2:1::fe/64 dev xva nodad &&
		_rx m -- ip addr add 2001:2:2::fe/64 dev xvb nodad &&
		_rx a -- ip addr add 2001:2:1::1/64 dev xv0 nodad &&
		_rx a -- ip -6 route add default via 2001:2:1::fe &&
		_rx b -- ip addr add 2001:2:2::2/64 dev xv0 nodad &&
		_rx b -- ip -6 route add default via 2001:2:2::fe ||
		{ echo "routed lab: could not route IPv6" >&2; return 1; }
}

# routed_lab_kfwd NAME: the datagrams m's kernel forwarded so far, IPv4
# (ForwDatagrams) and IPv6 (Ip6OutForwDatagrams) summed.
routed_lab_kfwd() {
	lab_exec --name "$1" -T 30 m -- cat /proc/net/snmp /proc/net/snmp6 | awk '
		/^Ip: [A-Za-z]/ { for (i = 2; i <= NF; i++) if ($i == "ForwDatagrams") c = i }
		/^Ip: [0-9]/ { s += $c }
		$1 == "Ip6OutForwDatagrams" { s += $2 }
		END { print s + 0 }'
}
