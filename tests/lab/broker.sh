#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# broker.sh: xdp-vid under attack by unprivileged and confined processes.
#
#   node a (kernel sockets, tcpdump)  <--xv0--xv0-->  node b (xdp-vi + xdp-vid,
#                                                      /proc/sys read-only for it)
#                                                      attackers: setpriv --reuid
#                                                      6xxxx --inh-caps=-all, in
#                                                      their own user or network
#                                                      namespaces
#
# Each case attacks one weakness and must see it refused or without effect:
# a client in another network namespace; a uid outside the group the
# built-in policy grants; a subordinate uid in a user namespace (judged as
# its owner); denied requests (charged nothing); file-descriptor exhaustion
# (no veth left, no spinning, still serving); a broker killed -9 (gc takes
# its slots and veth pairs); an address removed from the interface (the
# guard stops it, an endpoint bound to it is revoked); message floods (rate
# limited, others served); IPv6 on the veth ends (none, even where
# disable_ipv6 cannot be written); control-protocol and reserved ports.

. "$(dirname "$0")/_tap.sh"

XVID=$T_BIN/xdp-vid
RUN=$T_TMP/run			# XVI_RUN_DIR of daemon and clients
BIN=$T_TMP/bin			# binaries the plain uids can run
EPCTL=$BIN/epctl
UHELPERS=$BIN/helpers		# tests/lab/helpers, where the plain uids can read them
UPY=/usr/bin/python3		# a python the plain uids may run
# The broker protocol by hand: "${REQUESTS[@]}" WHAT ARGS... (socket
# operations bounded by 10 s).
REQUESTS=("$UPY" "$UHELPERS/broker_requests.py" --timeout 10 "$RUN")
VIDPID=
BEFORE=
# Plain uids and groups unique to this run (see protected.sh on why).
UIDA=$((40000 + $$ % 10000))
UIDB=$((UIDA + 1))
GRANT=$((61000 + $$ % 1000))	# the group the built-in policy grants (--group)
SUBUID=$((300000 + ($$ % 1000) * 16))	# subordinate ids of uid $UIDA
ASA=(setpriv --reuid=$UIDA --regid=65534 --clear-groups --inh-caps=-all)
ASB=(setpriv --reuid=$UIDB --regid=65534 --clear-groups --inh-caps=-all)
MEMBER=(setpriv --reuid=$UIDB --regid=65534 --groups=$GRANT --inh-caps=-all)

# As uid $UIDA (or, with -u ARRAY, another setpriv prefix) on node b: the
# broker protocol by hand.
_proto() {
	local -n _as=ASA
	[ "$1" = -u ] && { local -n _as=$2; shift 2; }
	t_x -T 60 b env XVI_RUN_DIR="$RUN" "${_as[@]}" "${REQUESTS[@]}" "$@"
}

# What this suite can leave in node b: veths and XDP attachments.
_counts() {
	echo "veths $(t_x b ip -o link show type veth | wc -l)"
	echo "xdp $(t_x b ip -o link show | grep -c 'prog/xdp')"
}

_stop_vid() {
	t_stop "$VIDPID"
	VIDPID=
	rm -f "$RUN"/*.sock
}

# _start_vid [--nofile N] XDPVID-ARGS...: (re)start the daemon on node b,
# /proc/sys read-only for it (as in many containers), until it serves.
_start_vid() {
	local pre=() i
	[ "$1" = --nofile ] && { pre=(prlimit --nofile="$2:$2"); shift 2; }
	_stop_vid
	rm -f "$T_TMP/vid.pid"
	echo "# --- xdp-vid $*" >>"$T_TMP/vid.log"
	t_x -T 300 b unshare -m --propagation private sh -c \
		'mount --bind -o ro /proc/sys /proc/sys || exit 1; echo $$ >"$0"; exec "$@"' \
		"$T_TMP/vid.pid" env XVI_RUN_DIR="$RUN" "${pre[@]}" "$XVID" -v "$@" \
		"$LAB_IFACE" >>"$T_TMP/vid.log" 2>&1 &
	t_wait_file "$T_TMP/vid.pid" || { fail "xdp-vid did not start"; return 1; }
	VIDPID=$(<"$T_TMP/vid.pid")
	for i in $(seq "$T_WAIT_TENTHS"); do
		ls "$RUN"/*.sock >/dev/null 2>&1 && return 0
		kill -0 "$VIDPID" 2>/dev/null || break
		sleep 0.1
	done
	fail "xdp-vid does not serve: $(tail -3 "$T_TMP/vid.log")"
}

_start_p1() { _start_vid "$@" --policy "$T_TMP/policy"; }

t_setup() {
	t_need "$XDPVI" "$XVID" "$T_B/tests/epctl" || return 1
	chmod 0755 "$T_TMP"
	mkdir -p "$RUN" "$BIN" "$T_TMP/w" && chmod 0755 "$RUN" "$BIN" && chmod 0777 "$T_TMP/w"
	cp "$T_B/tests/epctl" "$BIN/" && cp -r "$T_HELPERS" "$UHELPERS" && chmod 0755 "$BIN"/* &&
		chmod -R a+rX "$UHELPERS" || return 1
	t_lab_up bk || return 1
	lab_at_exit "_stop_vid"
	t_attach b || return 1
	BEFORE=$(_counts)
	printf '%s\n' "# broker.sh" "deny uid:$UIDA udp 7830-7839" "deny uid:$UIDB udp 7850-7859" \
		"allow uid:$UIDB udp 7860 addr iface guard-allow group" \
		"allow * udp default addr iface" >"$T_TMP/policy"
	_start_p1 || return 1
	MAC_A=$(t_x a cat /sys/class/net/xv0/address)
	MAC_B=$(t_x b cat /sys/class/net/xv0/address)
}

_field() { awk -v k="$1" '$1 == k {print $2}' <<<"$2"; }

# ---- epctl: one endpoint held open, driven through a fifo ------------------

# _ep NAME SETPRIV-ARRAY IP PORT: start epctl as that uid; its commands go
# to fd of EP_FD_<NAME> (a fifo), its answers to $T_TMP/ep-NAME.out.
_ep() {
	local name=$1 who=$2 ip=$3 port=$4 fifo=$T_TMP/w/ep-$1 fd
	local -n _who=$who
	rm -f "$fifo" && mkfifo "$fifo" && chmod 0666 "$fifo"
	: >"$T_TMP/ep-$name.out"
	# the other endpoints' fifo ends stay with the shell: a copy held here
	# would keep their epctl from seeing end of file at _ep_close
	( for v in ${!EP_FD_@}; do [ -z "${!v}" ] || eval "exec ${!v}>&-"; done
	  t_x -T 120 b env XVI_RUN_DIR="$RUN" "${_who[@]}" "$EPCTL" "$LAB_IFACE" "$ip" "$port" \
		<"$fifo" >"$T_TMP/ep-$name.out" 2>"$T_TMP/ep-$name.err" ) &
	exec {fd}>"$fifo"
	printf -v "EP_FD_$name" '%s' "$fd"
	printf -v "EP_PID_$name" '%s' "$!"
	t_wait_grep "$T_TMP/ep-$name.out" "^open" &&
		grep -q "^open ok" "$T_TMP/ep-$name.out" ||
		{ fail "epctl $name ($ip:$port): $(cat "$T_TMP/ep-$name.out" "$T_TMP/ep-$name.err")"
		return 1; }
}

# _ep_cmd NAME CMD...: one command; waits for its answer, prints it.
_ep_cmd() {
	local name=$1 fdv="EP_FD_$1" n
	shift
	n=$(wc -l <"$T_TMP/ep-$name.out")
	echo "$*" >&"${!fdv}"
	for _ in $(seq "$T_WAIT_TENTHS"); do
		[ "$(wc -l <"$T_TMP/ep-$name.out")" -gt "$n" ] && break
		sleep 0.1
	done
	tail -n +"$((n + 1))" "$T_TMP/ep-$name.out"
}

_ep_close() {
	local fdv="EP_FD_$1" pidv="EP_PID_$1"
	[ -n "${!fdv:-}" ] || return 0
	eval "exec ${!fdv}>&-"
	wait "${!pidv}" 2>/dev/null
	printf -v "EP_FD_$1" '%s' ""
}

# The endpoint on PORT from `xdp-vi status --json` on b: "HOST_END DROP_IP
# PASS" ("-" for what it lacks), nothing if it is not listed.
_ep_status() {
	t_xdpvi b status --json >"$T_TMP/st.json" 2>/dev/null
	"$PY" "$T_HELPERS/xvi_status.py" "$T_TMP/st.json" field "$1" host_end.ifname \
		guard.drop_guard_ip guard.tx_guard_pass
}

# Wait (bounded) until the endpoint on PORT is live (or, with -g, gone).
_wait_ep() {
	local gone=0
	[ "$1" = -g ] && { gone=1; shift; }
	for _ in $(seq "$T_WAIT_TENTHS"); do
		if [ -n "$(_ep_status "$1")" ]; then
			[ $gone = 0 ] && return 0
		else
			[ $gone = 1 ] && return 0
		fi
		sleep 0.1
	done
	return 1
}

_veths_left() { t_x b ip -o link show type veth | grep -c ' xv[hc][0-9]'; }

# ---- cases ---------------------------------------------------------------

case_other_netns() {
	local out
	# uid $UIDA in a network namespace of its own (and the user namespace
	# an unprivileged unshare needs) connects to the broker's socket file
	out=$(t_x -T 30 b env XVI_RUN_DIR="$RUN" "${ASA[@]}" unshare -r -n "${REQUESTS[@]}" \
		open 7800 2>&1) || fail "client: ${out//$'\n'/ }" || return
	t_log "other netns: $out"
	[ "$(_field open "$out")" = -1 ] || fail "OPEN from another network namespace: $out" ||
		return
	[[ $out == *"another network namespace"* ]] || fail "the refusal does not say why: $out" ||
		return
	# control: the same uid in the daemon's namespace is served
	out=$(_proto open 7801)
	[ "$(_field open "$out")" = 0 ] || fail "uid $UIDA in the daemon's namespace: $out"
}

# A map file takes one write() of all its lines.
_write1() { "$PY" "$T_HELPERS/write_once.py" "$1" "$2"; }

case_userns_owner() {
	local out upid
	rm -f "$T_TMP/w/userns.pid" "$T_TMP/w/userns.go"
	# policy: "deny uid:$UIDA udp 7830-7839"; the attacker runs as a
	# subordinate uid of $UIDA, which no rule names
	_proto userns "$T_TMP/w/userns.pid" "$T_TMP/w/userns.go" 7830 7840 >"$T_TMP/userns.out" 2>&1 &
	upid=$!
	t_wait_file "$T_TMP/w/userns.pid" || { t_stop "$upid"; fail "no user namespace: $(cat \
		"$T_TMP/userns.out")"; return; }
	# what newuidmap/newgidmap write for /etc/subuid "$UIDA:$SUBUID:16"
	local p
	p=$(<"$T_TMP/w/userns.pid")
	_write1 "/proc/$p/uid_map" "0 $UIDA 1"$'\n'"1 $SUBUID 16" &&
		_write1 "/proc/$p/gid_map" "0 65534 1"$'\n'"1 $SUBUID 16" ||
		{ t_stop "$upid"; fail "cannot map the user namespace"; return; }
	touch "$T_TMP/w/userns.go"
	wait "$upid"
	out=$(cat "$T_TMP/userns.out")
	t_log "user namespace: ${out//$'\n'/; }"
	[ "$(awk '$1 == "open" {print $2; exit}' <<<"$out")" = -1 ] &&
		[[ $out == *"uid $UIDA may not open"*"denied by"* ]] ||
		fail "uid $((SUBUID + 1)) (of uid $UIDA's namespace) was not judged as $UIDA: ${out//$'\n'/ }" ||
		return
	[ "$(awk '$1 == "open" {n++; if (n == 2) print $2}' <<<"$out")" = 0 ] ||
		fail "an allowed port from the user namespace: ${out//$'\n'/ }"
}

case_denied_uncharged() {
	local out
	# 30 OPENs that the policy denies (deny uid:$UIDB udp 7850-7859): each
	# is refused by the rule, none by the rate limit (4 s worth of 5/s)
	out=$(_proto -u ASB opens 7850 --count 30) || fail "client: $out" || return
	t_log "$out"
	awk '$1 == "opens" {for (i = 2; i <= NF; i++) if ($i != -1) bad = 1; if (NF != 31) bad = 1}
	     END {exit bad}' <<<"$out" || fail "denied OPENs were charged: $out" || return
	# and the uid's OPEN budget is untouched
	out=$(_proto -u ASB open 7860)
	[ "$(_field open "$out")" = 0 ] || fail "an allowed OPEN after the denied ones: $out"
}

case_msg_flood() {
	local out fpid gpid t0 n secs
	_proto flood 2 7890 >"$T_TMP/flood.out" 2>&1 &
	fpid=$!
	_proto garbage-flood 2 >"$T_TMP/garbage.out" 2>&1 &
	gpid=$!
	# another uid is served meanwhile
	t0=$(date +%s%N)
	out=$(_proto -u ASB open 7891)
	t_log "served in $((($(date +%s%N) - t0) / 1000000)) ms during the floods: $out"
	wait "$fpid" "$gpid"
	[ "$(_field open "$out")" = 0 ] || fail "uid $UIDB not served during the floods: $out" ||
		return
	out=$(cat "$T_TMP/flood.out")
	t_log "flood: $out; $(cat "$T_TMP/garbage.out")"
	n=$(awk '{for (i = 1; i < NF; i++) if ($i == "replies") print $(i + 1)}' <<<"$out")
	secs=$(awk '{for (i = 1; i < NF; i++) if ($i == "secs") print $(i + 1)}' <<<"$out")
	[ -n "$n" ] || fail "flood client: $out" || return
	# a connection gets 40 messages at once, then 20 a second (the OPEN
	# was one), measured by the client
	awk -v n="$n" -v s="$secs" 'BEGIN { g = int(20 * s); if (g < 20 * s) g++
		exit !(n + 1 <= 40 + g + 2) }' ||
		fail "$n RESOLVEs answered in ${secs}s: not rate limited" || return
	kill -0 "$VIDPID" 2>/dev/null || fail "xdp-vid died"
}

case_addr_follow() {
	local out tok=$RANDOM cpid drop
	t_x b ip addr add 198.18.0.50/32 dev "$LAB_IFACE" &&
		t_x b ip addr add 198.18.0.51/32 dev "$LAB_IFACE" || fail "cannot add addresses" || return
	_ep W ASA 0.0.0.0 7881 && _ep E ASB 198.18.0.51 7882 || return
	_wait_ep 7881 && _wait_ep 7882 || fail "endpoints not live" || return
	t_x -T 60 a tcpdump -i "$LAB_IFACE" -n -A -l udp port 9300 >"$T_TMP/cap-addr" \
		2>"$T_TMP/cap-addr.err" &
	cpid=$!
	t_wait_grep "$T_TMP/cap-addr.err" "listening on" || { t_stop "$cpid"; fail "no tcpdump"; return; }
	_send() { _ep_cmd "$1" send "$2" 198.18.0.1 9300 "$MAC_A" "$MAC_B" "$3"; }
	# control: the wildcard endpoint may send as 198.18.0.50 while it is there
	out=$(_send W 198.18.0.50 "w1-$tok")
	t_wait_grep "$T_TMP/cap-addr" "w1-$tok" || { t_stop "$cpid"
		fail "a frame from 198.18.0.50 never left while the address was there ($out)"; return; }
	t_x b ip addr del 198.18.0.50/32 dev "$LAB_IFACE"
	t_x b ip addr del 198.18.0.51/32 dev "$LAB_IFACE"
	t_wait_grep "$T_TMP/vid.log" "7881: allowed sources now" ||
		{ t_stop "$cpid"; fail "the guard of the wildcard endpoint was not rewritten"; return; }
	out=$(_send W 198.18.0.50 "w2-$tok")
	# a legitimate frame after it: once it is on the wire, so would w2 be
	out="$out; $(_send W 198.18.0.2 "w3-$tok")"
	t_wait_grep "$T_TMP/cap-addr" "w3-$tok" || { t_stop "$cpid"; fail "no frame from 198.18.0.2: $out"
		return; }
	t_stop "$cpid"
	! grep -q "w2-$tok" "$T_TMP/cap-addr" ||
		fail "a frame from the removed 198.18.0.50 left the host" || return
	drop=$(_ep_status 7881 | awk '{print $2}')
	[ "${drop:-0}" -ge 1 ] || fail "the guard did not count the drop (drop_guard_ip ${drop:-?})" ||
		return
	# the endpoint bound to the removed 198.18.0.51 is revoked, and says why
	_wait_ep -g 7882 || fail "the endpoint on removed 198.18.0.51 is still listed" || return
	out=$(_send E 198.18.0.51 "e1-$tok")
	_ep_close W
	_ep_close E
	[[ $out == *"errno=99"* ]] || fail "the revoked client was not told (EADDRNOTAVAIL): $out" ||
		return
	grep -q "revoked" "$T_TMP/ep-E.err" || fail "no revocation message: $(cat "$T_TMP/ep-E.err")"
}

# _local_has MAPID A.B.C.D: is the address a key of the local address table?
_local_has() {
	bpftool -j map dump id "$1" 2>/dev/null | "$PY" "$T_HELPERS/bpftool_json.py" key-has-ip4 "$2"
}

# _wait_local MAPID A.B.C.D yes|no: until the table has (or lacks) the address.
_wait_local() {
	local want=$3 have
	for _ in $(seq "$T_WAIT_TENTHS"); do
		_local_has "$1" "$2" && have=yes || have=no
		[ "$have" = "$want" ] && return 0
		sleep 0.1
	done
	return 1
}

case_guard_allow() {
	local out tok=$RANDOM cpid bcast=ff:ff:ff:ff:ff:ff
	_ep G ASB 198.18.0.2 7860 && _ep H ASA 198.18.0.2 7861 || return
	_wait_ep 7860 && _wait_ep 7861 || fail "endpoints not live" || return
	t_x -T 60 a tcpdump -i "$LAB_IFACE" -n -A -l udp port 9301 >"$T_TMP/cap-allow" \
		2>"$T_TMP/cap-allow.err" &
	cpid=$!
	t_wait_grep "$T_TMP/cap-allow.err" "listening on" || { t_stop "$cpid"; fail "no tcpdump"; return; }
	# the default: a broadcast from an endpoint no rule lets out
	out=$(_ep_cmd H send 198.18.0.2 255.255.255.255 9301 "$bcast" "$MAC_B" "h-$tok")
	# the rule with "guard-allow group": its endpoint's broadcast leaves
	out="$out; $(_ep_cmd G send 198.18.0.2 255.255.255.255 9301 "$bcast" "$MAC_B" "g-$tok")"
	t_wait_grep "$T_TMP/cap-allow" "g-$tok" || { t_stop "$cpid"
		fail "the broadcast of the endpoint allowed group destinations never left ($out)"
		return; }
	t_stop "$cpid"
	_ep_close G
	_ep_close H
	! grep -q "h-$tok" "$T_TMP/cap-allow" ||
		fail "a broadcast left from an endpoint no guard-allow rule covers" || return
	grep -q "7860 on slot .*guard allows group too" "$T_TMP/vid.log" ||
		fail "xdp-vid did not log the endpoint's guard allowances"
}

case_local_addrs() {
	local id map=
	for id in $(t_prog_map_ids b); do
		[ "$(t_map_names "$id")" = xvi_local_addrs ] && map=$id
	done
	[ -n "$map" ] || fail "no xvi_local_addrs map on the datapath of node b" || return
	_local_has "$map" 198.18.0.52 && { fail "198.18.0.52 is in the table before it exists"
		return; }
	# no endpoint opens meanwhile: only the broker's address watch writes it
	t_x b ip addr add 198.18.0.52/32 dev lo || fail "cannot add 198.18.0.52" || return
	_wait_local "$map" 198.18.0.52 yes || { t_x b ip addr del 198.18.0.52/32 dev lo
		fail "an address added to lo did not reach the local address table"; return; }
	t_x b ip addr del 198.18.0.52/32 dev lo
	_wait_local "$map" 198.18.0.52 no ||
		fail "a removed address stayed in the local address table"
}

case_ipv6_off() {
	local cpid host six mode
	# the daemon cannot write /proc/sys (see _start_vid): netlink must do it
	t_x -T 60 b tcpdump -i any -n -l ip6 >"$T_TMP/cap-v6" 2>"$T_TMP/cap-v6.err" &
	cpid=$!
	t_wait_grep "$T_TMP/cap-v6.err" "listening on" || { t_stop "$cpid"; fail "no tcpdump"; return; }
	_ep V ASA 198.18.0.2 7895 && _wait_ep 7895 || { t_stop "$cpid"; fail "endpoint not live"
		return; }
	host=$(_ep_status 7895 | awk '{print $1}')
	six=$(t_x b ip -6 -o addr show dev "$host"; t_x b ip -6 -o addr show dev "xvc${host#xvh}")
	mode=$(t_x b cat "/proc/sys/net/ipv6/conf/xvc${host#xvh}/addr_gen_mode")
	# IPv6 would speak within a second of the link going up (DAD, MLD, RS)
	t_wait_grep "$T_TMP/cap-v6" " xv[hc]" 20
	_ep_close V
	t_stop "$cpid"
	[ -z "$six" ] || fail "IPv6 addresses on the veth ends: ${six//$'\n'/; }" || return
	[ "$mode" = 1 ] || fail "address generation mode $mode on the client end, want 1 (none)" ||
		return
	! grep -q " xv[hc]" "$T_TMP/cap-v6" ||
		fail "IPv6 frames on the veth ends: $(grep " xv[hc]" "$T_TMP/cap-v6" | head -3)"
}

case_default_group() {
	local out
	_start_vid --builtin-policy --group "$GRANT" || return
	out=$(_proto open 7810)
	t_log "not in the group: $out"
	[ "$(_field open "$out")" = -1 ] || fail "uid $UIDA, not in group $GRANT: $out" || return
	[[ $out == *"not in group $GRANT"*"usermod"* ]] || fail "the refusal does not say how to get access: $out" ||
		return
	# refused at connect: none of its connections takes an entry
	out=$(_proto conns 20 "$T_TMP/w/conns.ready" 0 0 --wait 20)
	[ "$(_field held "$out")" = 0 ] || fail "a refused uid holds connections: $out" || return
	out=$(_proto -u MEMBER open 7811)
	[ "$(_field open "$out")" = 0 ] || fail "a member of group $GRANT: $out"
}

case_default_ports() {
	local out old
	# still the built-in policy of case default_group, for a member
	old=$(t_x b cat /proc/sys/net/ipv4/ip_local_reserved_ports)
	t_x b sysctl -qw net.ipv4.ip_local_reserved_ports=7820-7829 || fail "sysctl" || return
	out=$(_proto -u MEMBER open 5353 1985 4789 3784 7825 7831)
	t_x b sysctl -qw net.ipv4.ip_local_reserved_ports="$old"
	t_log "${out//$'\n'/; }"
	awk '$1 == "open" {n++; if ((n <= 5) != ($2 == -1)) bad = 1} END {exit bad || n != 6}' \
		<<<"$out" || fail "control or reserved ports not refused (or 7831 refused): ${out//$'\n'/; }" ||
		return
	[[ $out == *mDNS*HSRP*VXLAN*BFD*reserved* ]] || fail "refusals do not say why: ${out//$'\n'/; }"
}

case_fd_exhaustion() {
	local out apid bpid c0 c1 t0 ms left i base need
	# The fewest fds over its idle count with which the daemon sets one
	# endpoint up (loading programs takes more than the endpoint keeps):
	# one set-up fits, a second one runs out of them half way, after its
	# veth pair is made, while its programs load.
	_start_p1 || return
	base=$(ls "/proc/$VIDPID/fd" | wc -l)
	for need in $(seq 4 2 64); do
		_start_p1 --nofile $((base + need)) || return
		[ "$(_field open "$(_proto -u ASB open 7869)")" = 0 ] && break
	done
	[ "$need" -lt 64 ] || fail "no set-up even with $need spare fds" || return
	t_log "one set-up needs $need fds over the daemon's $base"
	# connections waiting for their OPEN take the daemon's last fds; the
	# ones it cannot accept stay queued: it must rest, not spin on them
	_proto conns 16 "$T_TMP/w/fa.ready" 3 16 --wait 20 >"$T_TMP/fa.out" 2>&1 &
	apid=$!
	_proto -u ASB conns 16 "$T_TMP/w/fb.ready" 3 16 --wait 20 >"$T_TMP/fb.out" 2>&1 &
	bpid=$!
	t_wait_file "$T_TMP/w/fa.ready" && t_wait_file "$T_TMP/w/fb.ready" ||
		{ t_stop "$apid"; t_stop "$bpid"; fail "connection floods did not start"; return; }
	c0=$(awk '{print $14 + $15}' "/proc/$VIDPID/stat")
	t0=$(date +%s%N)
	wait "$apid" "$bpid"
	c1=$(awk '{print $14 + $15}' "/proc/$VIDPID/stat")
	ms=$((($(date +%s%N) - t0) / 1000000))
	t_log "daemon cpu $(((c1 - c0) * 10)) ms in $ms ms with its fds exhausted"
	grep -q "cannot accept connections" "$T_TMP/vid.log" ||
		fail "the daemon never ran out of fds (test too weak)" || return
	[ $(((c1 - c0) * 10)) -le $((ms / 2)) ] ||
		fail "the daemon spun: $(((c1 - c0) * 10)) ms of cpu in $ms ms" || return
	# set-ups that run out of fds half way leave no veth pair behind
	_proto openmany 2 7870 "$T_TMP/w/om.hold" >"$T_TMP/om.out" 2>&1 &
	apid=$!
	t_wait_file "$T_TMP/w/om.hold" || { t_stop "$apid"; fail "openmany: $(cat "$T_TMP/om.out")"
		return; }
	t_log "$(cat "$T_TMP/om.out")"
	rm -f "$T_TMP/w/om.hold"
	wait "$apid"
	awk '$1 == "results" {for (i = 2; i <= NF; i++) if ($i != 0) n++} END {exit !n}' \
		"$T_TMP/om.out" || fail "no set-up ran out of fds (test too weak): $(cat "$T_TMP/om.out")" ||
		return
	for i in $(seq "$T_WAIT_TENTHS"); do
		left=$(_veths_left)
		[ "$left" = 0 ] && break
		sleep 0.1
	done
	[ "$left" = 0 ] || fail "$left veth ends left after the set-ups failed: $(t_x b ip -o link \
		show type veth | grep -o 'xv[hc][0-9-]*' | tr '\n' ' ')" || return
	# once the load is gone (refused connections linger a second)
	for i in $(seq 30); do
		out=$(_proto -u ASB open 7880)
		[ "$(_field open "$out")" = 0 ] && break
		sleep 0.2
	done
	t_log "served again after $i attempt(s); daemon fds: $(ls "/proc/$VIDPID/fd" | wc -l)"
	[ "$(_field open "$out")" = 0 ] || fail "the daemon stopped serving: $out" || return
	! grep -q "datapath was detached" "$T_TMP/vid.log" ||
		fail "out of fds, the daemon took the datapath for detached"
}

case_broker_killed() {
	local host
	_start_p1 || return
	_ep K ASA 198.18.0.2 7875 && _wait_ep 7875 || fail "endpoint not live" || return
	host=$(_ep_status 7875 | awk '{print $1}')
	kill -9 "$VIDPID"
	wait_gone=$VIDPID
	VIDPID=
	for _ in $(seq "$T_WAIT_TENTHS"); do
		kill -0 "$wait_gone" 2>/dev/null || break
		sleep 0.1
	done
	# the client lives on; one status (gc) takes slot and pair down
	t_xdpvi b status >/dev/null 2>&1
	[ -z "$(_ep_status 7875)" ] || { _ep_close K; fail "slot of 7875 kept after its broker died"
		return; }
	t_x b ip link show "$host" >/dev/null 2>&1 && { _ep_close K
		fail "$host kept after its broker died"; return; }
	_ep_close K
	_start_p1
}

case_no_leftovers() {
	local after
	_stop_vid
	# XVI_TEST_KEEP=DIR: keep the daemon's log and the clients' output
	[ -z "${XVI_TEST_KEEP:-}" ] || cp -r "$T_TMP" "$XVI_TEST_KEEP"
	after=$(_counts)
	[ "$after" = "$BEFORE" ] || fail "before: ${BEFORE//$'\n'/; } after: ${after//$'\n'/; }"
}

# shellcheck disable=SC2034 # read by t_main
CASES=(
	other_netns	case_other_netns	"a client in its own network namespace is refused"
	userns_owner	case_userns_owner	"a subordinate uid in a user namespace is judged as its owner"
	denied_uncharged case_denied_uncharged	"denied OPENs are charged to no limit"
	msg_flood	case_msg_flood		"RESOLVE and garbage floods: rate limited, others served"
	addr_follow	case_addr_follow	"a removed address: the guard drops it, an endpoint bound to it is revoked"
	guard_allow	case_guard_allow	"a policy rule's guard-allow lets its endpoints' broadcasts out, no other's"
	local_addrs	case_local_addrs	"an address of any interface added or removed: the datapath's local table follows"
	ipv6_off	case_ipv6_off		"no IPv6 on the veth ends though disable_ipv6 is read-only"
	default_group	case_default_group	"no policy file: only the granted group, others told how"
	default_ports	case_default_ports	"control-protocol and reserved ports are not default ports"
	fd_exhaustion	case_fd_exhaustion	"out of fds: no spinning, no veth left, still serving"
	broker_killed	case_broker_killed	"kill -9 of the broker: gc removes its slot and veth pair"
	no_leftovers	case_no_leftovers	"veths and XDP programs in node b equal before and after"
)

# broker.sh CASE... (tests/run -t broker/CASE) ends with no_leftovers too:
# what the chosen cases left in node b, and XVI_TEST_KEEP's copy of the
# daemon's log.
# shellcheck disable=SC2034 # read by t_main
CASES_ALWAYS=(no_leftovers)

t_main "$@"
