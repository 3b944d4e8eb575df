#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# streams.sh: libxvi reliable streams end to end with xvi-cat's stream mode.
# A clean two-node transfer, closes that end by the FIN's ACK (no timer),
# 1000 concurrent connections of 64 KiB each, then the three-node lab
# (a -- m -- b) with the impairment relay on m: 64 MiB byte-exact under
# loss, reordering, duplication and corruption; 50 connections under 30 %
# loss; a transfer
# through a blackhole (3 s on / 2 s off); the same loss with the in-place
# calls (xvi-cat --zc); a peer killed mid-transfer, seen
# by the other side within the keepalive bound.  Every case is bounded in
# time; transfer times and retransmission counters go to stderr.

. "$(dirname "$0")/_tap.sh"

XVIRELAY=$T_BIN/xvi-relay
PORT=7300	# t_stream_xfer takes 7100 and up
# Dead-peer bound of the library defaults: keepalive idle 2 s + 6 x 0.5 s.
KA_BOUND=5

LAB2= LAB3=
t_setup() {
	t_need "$XDPVI" "$XVICAT" "$XVIRELAY" || return 1
	LAB2=$(t_lab_name s2)
	LAB3=$(t_lab_name s3)
	lab_up --name "$LAB2" >&2 || { fail "lab_up $LAB2 failed"; return 1; }
	lab_up --name "$LAB3" --nodes 3 >&2 || { fail "lab_up --nodes 3 $LAB3 failed"; return 1; }
	local l n err
	for l in "$LAB2" "$LAB3"; do
		for n in a b; do
			err=$(lab_exec --name "$l" -T 20 "$n" -- "$XDPVI" attach "$LAB_IFACE" 2>&1 \
				>/dev/null) || { fail "xdp-vi attach on $l/$n: $err"; return 1; }
		done
	done
	_static_neigh "$LAB3"
}

_mac() { ip -n "$(_lab_ns "$1" "$2")" -o link show dev "$LAB_IFACE" |
	sed -nE 's/.*link\/ether ([0-9a-f:]+).*/\1/p'; }

# Permanent neighbours: ARP through a 30 % loss relay is not what we test.
_static_neigh() {
	local ma mb
	ma=$(_mac "$1" a) mb=$(_mac "$1" b)
	[ -n "$ma" ] && [ -n "$mb" ] || { fail "no MAC on a or b"; return 1; }
	lab_exec --name "$1" a -- ip neigh replace 198.18.0.2 lladdr "$mb" dev "$LAB_IFACE" \
		nud permanent &&
	lab_exec --name "$1" b -- ip neigh replace 198.18.0.1 lladdr "$ma" dev "$LAB_IFACE" \
		nud permanent || { fail "could not set static neighbours"; return 1; }
}

_impair() {
	local err
	err=$(lab_impair --name "$LAB3" "$1" 2>&1) || { fail "lab_impair '$1': $err"; return 1; }
}


_mkfile() { [ -s "$T_TMP/in$1" ] || head -c "$(($1 << 20))" /dev/urandom >"$T_TMP/in$1"; }

case_clean2() {
	_mkfile 16
	t_stream_xfer "$LAB2" "$T_TMP/in16" 30 || return 1
	t_log "2 nodes: 16 MiB byte-exact in ${XFER_MS} ms"
}

# The close costs the FIN exchange, never a timer: the sender (which saw
# the listener's FIN) exits with its connection in TIME_WAIT and nothing to
# wait for; the listener's close ends when its FIN is acknowledged.  Each
# side's context reports at exit (debug output, -vv) how its closes ended.
case_close_by_ack() {
	local s l
	_mkfile 1
	t_stream_xfer "$LAB2" "$T_TMP/in1" 30 -v || return 1
	s=$(grep 'context freed:' "$T_TMP/s.err")
	l=$(grep 'context freed:' "$T_TMP/l.err")
	[ -n "$s" ] && [ -n "$l" ] || { fail "no close report at exit (debug output)"; return 1; }
	case $s in
	*" 0 given up; 1 in TIME_WAIT released; timer ends in its life: 0 linger, 0 TIME_WAIT") ;;
	*) fail "sender's close waited for a timer or gave up: $s"; return 1 ;;
	esac
	case $l in
	*" 1 of 1 closing connections finished by FIN/ACK, 0 given up;"*"0 linger, 0 TIME_WAIT") ;;
	*) fail "listener's close did not end by the ACK of its FIN: $l"; return 1 ;;
	esac
	t_log "1 MiB in ${XFER_MS} ms; closes ended by FIN/ACK, no timer"
}

case_lossy64() {
	_mkfile 64
	_impair "loss=5%,reorder=1%,dup=0.5%,corrupt=0.1%,seed=42" || return 1
	t_stream_xfer "$LAB3" "$T_TMP/in64" 90 || return 1
	t_log "relay loss=5% reorder=1% dup=0.5% corrupt=0.1%: 64 MiB byte-exact in ${XFER_MS} ms"
	lab_relay_stats --name "$LAB3" | grep -E '^ab\.(drop_loss|duplicated|corrupted|reordered) ' |
		paste -sd' ' | sed 's/^/# relay: /' >&2
}

# The in-place calls at both ends (xvi-cat --zc: stdin read straight into
# the send buffer with send_alloc/send_commit, stdout written from the
# receive buffer with recv_zc/recv_release) through the same impairment.
case_lossy_zc() {
	_mkfile 16
	_impair "loss=5%,reorder=1%,dup=0.5%,corrupt=0.1%,seed=43" || return 1
	t_stream_xfer "$LAB3" "$T_TMP/in16" 60 --zc || return 1
	grep -q 'done (in place)' "$T_TMP/s.err" && grep -q 'done (in place)' "$T_TMP/l.err" ||
		{ fail "a side did not use the in-place calls (no 'done (in place)')"; return 1; }
	t_log "relay loss=5% reorder=1% dup=0.5% corrupt=0.1%, in place: 16 MiB byte-exact in ${XFER_MS} ms"
}

case_conns50() {
	local port=$((PORT++)) rl rs t0
	_impair "loss=30%,seed=5" || return 1
	rm -f "$T_TMP/out"
	lab_exec --name "$LAB3" -T 60 b -- "$XVICAT" -v --iface "$LAB_IFACE" -w 20 --conns 50 \
		-l "$port" >"$T_TMP/out" 2>"$T_TMP/l.err" &
	local lpid=$!
	t_wait_endpoint_port_in "$LAB3" b "$port" || { kill "$lpid"; wait "$lpid"
		fail "listener never came up"; return 1; }
	t0=$(date +%s%3N)
	echo "hello from a connection" | lab_exec --name "$LAB3" -T 60 a -- "$XVICAT" -v \
		--iface "$LAB_IFACE" -w 20 --conns 50 198.18.0.2 "$port" 2>"$T_TMP/s.err" &&
		rs=0 || rs=$?
	wait "$lpid" && rl=0 || rl=$?
	cat "$T_TMP/s.err" "$T_TMP/l.err" | sed 's/^/# /' >&2
	[ "$rs" = 0 ] || { fail "sender exit $rs: $(tail -1 "$T_TMP/s.err")"; return 1; }
	[ "$rl" = 0 ] || { fail "listener exit $rl: $(tail -1 "$T_TMP/l.err")"; return 1; }
	local n
	n=$(grep -c '^hello from a connection$' "$T_TMP/out")
	[ "$n" = 50 ] || { fail "listener got $n of 50 greetings"; return 1; }
	t_log "relay loss=30%: 50 connections established and closed in $(($(date +%s%3N) - t0)) ms"
}

# _conns_exact N [BYTES]: N concurrent connections on 2 nodes, each
# carrying the same BYTES (default 64 KiB) byte-exact; the listener writes
# each connection's data in one piece when it ends, so the output is N
# copies of the input.
_conns_exact() {
	local n=$1 bytes=${2:-65536} port=$((PORT++)) rl rs t0 want got
	head -c "$bytes" /dev/urandom >"$T_TMP/in64k"
	rm -f "$T_TMP/out"
	lab_exec --name "$LAB2" -T 300 b -- "$XVICAT" -v --iface "$LAB_IFACE" -w 60 --conns "$n" \
		-l "$port" >"$T_TMP/out" 2>"$T_TMP/l.err" &
	local lpid=$!
	t_wait_endpoint_port_in "$LAB2" b "$port" || { kill "$lpid"; wait "$lpid"
		fail "listener never came up"; return 1; }
	t0=$(date +%s%3N)
	lab_exec --name "$LAB2" -T 300 a -- "$XVICAT" -v --iface "$LAB_IFACE" -w 60 \
		--conns "$n" 198.18.0.2 "$port" <"$T_TMP/in64k" 2>"$T_TMP/s.err" && rs=0 || rs=$?
	wait "$lpid" && rl=0 || rl=$?
	cat "$T_TMP/s.err" "$T_TMP/l.err" | grep -v 'established$' | sed 's/^/# /' >&2
	[ "$rs" = 0 ] || { fail "sender exit $rs: $(tail -1 "$T_TMP/s.err")"; return 1; }
	[ "$rl" = 0 ] || { fail "listener exit $rl: $(tail -1 "$T_TMP/l.err")"; return 1; }
	want=$(for _ in $(seq "$n"); do cat "$T_TMP/in64k"; done | sha256sum | cut -d' ' -f1)
	got=$(sha256sum <"$T_TMP/out" | cut -d' ' -f1)
	[ "$want" = "$got" ] || { fail "output is not $n copies of the $bytes-byte input" \
		"($(stat -c %s "$T_TMP/out") bytes)"; return 1; }
	t_log "$n connections x $bytes bytes byte-exact in $(($(date +%s%3N) - t0)) ms"
}

case_conns1000() { _conns_exact "${STREAMS_CONNS:-1000}"; }
# more input than one read buffer: --conns holds up to 16 MiB of stdin
case_conns_big() { _conns_exact 4 $((3 << 20)); }

case_blackhole() {
	local bh
	_mkfile 16
	# 60 Mbit/s makes 16 MiB take > 2 s, so it crosses at least one
	# blackhole whatever the phase it starts in.
	_impair "blackhole=3s/2s,rate=60mbit,seed=9" || return 1
	t_stream_xfer "$LAB3" "$T_TMP/in16" 90 || return 1
	bh=$(lab_relay_stats --name "$LAB3" | sed -n 's/^ab\.drop_blackhole //p')
	[ "${bh:-0}" -gt 0 ] || { fail "the relay never dropped in a blackhole (test broken)"
		return 1; }
	t_log "blackhole 3 s on / 2 s off: 16 MiB byte-exact in ${XFER_MS} ms," \
		"$bh frames swallowed a->b"
}

# _killed SIDE: kill SIDE (listener b or sender a) mid-transfer; the other
# must exit non-zero with a message within the keepalive bound.
_killed() {
	local victim=$1 port=$((PORT++)) pidf=$T_TMP/victim.pid t_kill t_end rc
	_impair "rate=20mbit,seed=1" || return 1
	rm -f "$pidf" "$T_TMP/l.err" "$T_TMP/s.err"
	local lpre=() spre=()
	[ "$victim" = b ] && lpre=(sh -c 'echo $$ >"$0"; exec "$@"' "$pidf")
	[ "$victim" = a ] && spre=(sh -c 'echo $$ >"$0"; exec "$@"' "$pidf")
	lab_exec --name "$LAB3" -T 40 b -- "${lpre[@]}" "$XVICAT" --iface "$LAB_IFACE" -w 30 \
		-l "$port" >/dev/null 2>"$T_TMP/l.err" &
	local lpid=$!
	t_wait_endpoint_port_in "$LAB3" b "$port" || { kill "$lpid"; wait "$lpid"
		fail "listener never came up"; return 1; }
	head -c 1G /dev/zero | lab_exec --name "$LAB3" -T 40 a -- "${spre[@]}" "$XVICAT" \
		--iface "$LAB_IFACE" -w 30 198.18.0.2 "$port" 2>"$T_TMP/s.err" >/dev/null &
	local spid=$!
	t_wait_file "$pidf" || { fail "no pid of the victim"; kill "$lpid" "$spid"
		wait; return 1; }
	# Mid-transfer: once a MiB has crossed the relay (the 1 GiB would take
	# minutes at 20 Mbit/s).
	local i b
	for i in $(seq "$T_WAIT_TENTHS"); do
		b=$(lab_relay_stats --name "$LAB3" | sed -n 's/^ab\.tx_bytes //p')
		[ "${b:-0}" -ge 1048576 ] && break
		sleep 0.1
	done
	kill -0 "$lpid" 2>/dev/null && kill -0 "$spid" 2>/dev/null ||
		{ fail "transfer ended before the kill: $(cat "$T_TMP/s.err" "$T_TMP/l.err")"
		  wait; return 1; }
	t_kill=$(date +%s%3N)
	kill -KILL "$(cat "$pidf")"
	if [ "$victim" = b ]; then
		wait "$spid" && rc=0 || rc=$?
		wait "$lpid"
		local err=$T_TMP/s.err
	else
		wait "$lpid" && rc=0 || rc=$?
		wait "$spid"
		local err=$T_TMP/l.err
	fi
	t_end=$(date +%s%3N)
	sed 's/^/# survivor: /' "$err" >&2
	[ "$rc" != 0 ] || { fail "the survivor exited 0 after its peer was killed"; return 1; }
	grep -q 'xvi-cat: ' "$err" || { fail "the survivor exited $rc without a message"; return 1; }
	[ $((t_end - t_kill)) -le $(((KA_BOUND + 2) * 1000)) ] ||
		{ fail "error $((t_end - t_kill)) ms after the kill, bound ${KA_BOUND} s (+2 s slack)"
		  return 1; }
	t_log "peer $victim killed: the other side failed $((t_end - t_kill)) ms later:" \
		"$(tail -1 "$err")"
}

case_kill_receiver() { _killed b; }
case_kill_sender() { _killed a; }

CASES=(
	clean2		case_clean2	  "2 nodes: 16 MiB byte-exact, both ends exit 0"
	close_by_ack	case_close_by_ack "2 nodes: both closes end by the FIN's ACK, no timer, no linger"
	lossy64		case_lossy64	  "relay 5% loss, 1% reorder, 0.5% dup, 0.1% corrupt: 64 MiB byte-exact"
	lossy_zc	case_lossy_zc	  "relay 5% loss, 1% reorder, 0.5% dup, 0.1% corrupt: 16 MiB in place (--zc) byte-exact"
	conns50		case_conns50	  "relay 30% loss: 50 connections established, each delivers and closes"
	conns1000	case_conns1000	  "2 nodes: 1000 concurrent connections, each 64 KiB byte-exact"
	conns_big	case_conns_big	  "2 nodes: 4 connections, each 3 MiB byte-exact"
	blackhole	case_blackhole	  "relay blackhole 3 s on / 2 s off: a transfer completes byte-exact"
	kill_receiver	case_kill_receiver "receiver killed mid-transfer: the sender fails within the keepalive bound"
	kill_sender	case_kill_sender  "sender killed mid-transfer: the receiver fails within the keepalive bound"
)

t_main "$@"
