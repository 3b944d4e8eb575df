# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# shellcheck shell=bash
#
# tests/lab/_streams.sh: sourced by the suites that run TCP programs under
# xvi-run --streams (after _tap.sh): the kernel's TCP counters and the
# preload's --stats.

# --stream-timeout of a client whose connects must go over xvi: the
# peer's answer decides, not how fast a busy machine gets the SYN out and
# the answer back (the default 300 ms is for the rows that fall back).
# A row sets STREAM_MS to it (local) for the helpers that take it.
XVI_MS=5000

# "ActiveOpens PassiveOpens" of the kernel's TCP in NODE's namespace.
_tcp_opens() {
	t_x "$1" cat /proc/net/snmp | awk '$1 == "Tcp:" && $6 ~ /^[0-9]+$/ { print $6, $7 }'
}

# Counter NAME of the first line starting with KIND in --stats FILE.
_stat() {
	sed -n "s/^$2 .* $3=\([0-9]*\).*/\1/p" "$1" 2>/dev/null | head -1
}

# _srv_ready MODE PORT PID WHAT: the server WHAT (process PID, its stderr
# in $T_TMP/srv-PORT.err) on b listens on TCP PORT and, for MODE xvi, its
# xvi stream listener's endpoint is live; else it is stopped and the case
# fails with the start of its log.
_srv_ready() {
	local mode=$1 port=$2 pid=$3 what=$4 log=$T_TMP/srv-$2.err
	t_wait_tcp_port b "$port" || { t_stop "$pid"; fail "$what never listened:" \
		"$(head -c 300 "$log")"; return 1; }
	[ "$mode" != xvi ] || t_wait_endpoint_port b "$port" || { t_stop "$pid"
		fail "no xvi stream listener on b:$port: $(head -c 300 "$log")"; return 1; }
}

# _opens_around CMD...: run CMD; sets OA/NA (node a's kernel TCP opens
# before and after it) and OB/NB (node b's).  CMD's status.
_opens_around() {
	local rc
	OA=$(_tcp_opens a)
	OB=$(_tcp_opens b)
	"$@"
	rc=$?
	NA=$(_tcp_opens a)
	NB=$(_tcp_opens b)
	return $rc
}
