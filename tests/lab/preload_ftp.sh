#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# preload_ftp.sh: FTP over xvi streams with unmodified Debian programs on
# the two-node lab, datapath on both nodes: pyftpdlib's server (one
# process) or vsftpd's (a process per connection: its control connection
# goes through the parent's relay, its data connections over kernel TCP)
# on b and lftp on a.
# Each session lists the server's directory (checked against the real
# one), gets a 64 MiB file and puts it back (both byte-exact, sha256).
# A session with both ends under xvi-run --streams checks that every
# connection, control and data, went over an xvi stream on both sides
# (--stats: connect_xvi, accept_xvi, bytes through the streams) and that
# neither node's kernel TCP opened a connection (/proc/net/snmp, Tcp
# ActiveOpens and PassiveOpens).  A long passive session (more data
# connections than a process has stream contexts at once) checks that the
# server's passive listeners' contexts are released and their slots reused.
# The fallback row runs the server plain:
# the client's connections go to kernel TCP and the files still arrive.

. "$(dirname "$0")/_tap.sh"
# shellcheck source=tests/lab/_streams.sh
. "$(dirname "$0")/_streams.sh"

XVIRUN=$T_BIN/xvi-run
# pyftpdlib is Debian's python3-pyftpdlib: Debian's interpreter.
FTPD_PY=${FTPD_PY:-/usr/bin/python3}
BIG=$((64 * 1024 * 1024))

t_setup() {
	t_need "$XDPVI" "$XVIRUN" "$T_B/lib/libxvi-preload.so" "$(command -v lftp)" \
		"$FTPD_PY" "$(command -v vsftpd)" || return 1
	"$FTPD_PY" -c 'import pyftpdlib' 2>/dev/null ||
		{ fail "no pyftpdlib for $FTPD_PY: install python3-pyftpdlib" \
			"(scripts/install-deps.sh)"; return 1; }
	mkdir -p "$T_TMP/cli"
	head -c "$BIG" /dev/urandom >"$T_TMP/cli/big" || return 1
	BIG_SUM=$(sha256sum <"$T_TMP/cli/big" | cut -d' ' -f1)
	t_lab_up pf || return 1
	t_attach a && t_attach b
}

# _ftpd_up MODE PORT: a fresh server directory $T_TMP/srv-PORT (the big
# file, two small ones, a subdirectory) served by pyftpdlib on b:PORT,
# anonymous, writable, under xvi-run --streams for MODE xvi.  Its passive
# listeners take ephemeral ports (bind to port 0).  Sets SRV_PID.
_ftpd_up() {
	local mode=$1 port=$2 dir=$T_TMP/srv-$2 pre=()
	rm -rf "$dir"
	mkdir -p "$dir/sub"
	cp "$T_TMP/cli/big" "$dir/big"
	echo small >"$dir/a.txt"
	head -c 4097 /dev/urandom >"$dir/b.bin"
	rm -f "$T_TMP/srv-$port.stats"
	[ "$mode" = xvi ] && pre=("$XVIRUN" --streams ${STREAM_MS:+--stream-timeout "$STREAM_MS"} \
		-v --stats "$T_TMP/srv-$port.stats")
	# The pid file: SIGINT to the server itself (pyftpdlib exits cleanly on
	# it, so the preload writes its --stats at exit).
	# shellcheck disable=SC2016 # expanded by the inner bash
	t_x -T 200 b bash -c 'echo $$ >"$1"; shift; exec "$@"' _ "$T_TMP/srv-$port.pid" \
		"${pre[@]}" "$FTPD_PY" -m pyftpdlib -i 198.18.0.2 -p "$port" -d "$dir" -w \
		>"$T_TMP/srv-$port.out" 2>"$T_TMP/srv-$port.err" &
	SRV_PID=$!
	_srv_ready "$mode" "$port" "$SRV_PID" "FTP server"
}

# Stop the server on PORT: SIGINT, so it exits through its own cleanup.
_ftpd_down() {
	local pid
	pid=$(cat "$T_TMP/srv-$1.pid" 2>/dev/null)
	[ -n "$pid" ] && kill -INT "$pid" 2>/dev/null
	for _ in $(seq 50); do
		kill -0 "$SRV_PID" 2>/dev/null || break
		sleep 0.1
	done
	t_stop "$SRV_PID"
	sed 's/^/# server: /' "$T_TMP/srv-$1.err" "$T_TMP/srv-$1.stats" 2>/dev/null | tail -40 >&2
}

# _lftp MODE PORT PASSIVE: one lftp session on a (under xvi-run --streams
# for MODE xvi): list the directory, get the big file, put it back as
# "up".  Checks the listing and both copies.
_lftp() {
	local mode=$1 port=$2 pasv=$3 pre=() rc dir=$T_TMP/srv-$2
	rm -f "$T_TMP/cli/got" "$T_TMP/cli/list" "$T_TMP/cli.stats"
	[ "$mode" = xvi ] && pre=("$XVIRUN" --streams ${STREAM_MS:+--stream-timeout "$STREAM_MS"} \
		-v --stats "$T_TMP/cli.stats")
	t_x -T 150 a "${pre[@]}" lftp ${FTP_DEBUG:+-d} -c "set cmd:fail-exit yes; set net:max-retries 1;
		set net:timeout 60; set ftp:ssl-allow no; set ftp:passive-mode $pasv;
		set xfer:clobber yes; open ftp://198.18.0.2:$port;
		ls >$T_TMP/cli/list; get big -o $T_TMP/cli/got; put $T_TMP/cli/big -o ${FTP_UP:-up}" \
		>"$T_TMP/lftp.out" 2>"$T_TMP/lftp.err"
	rc=$?
	sed 's/^/# lftp: /' "$T_TMP/lftp.err" >&2
	[ $rc -eq 0 ] || { fail "lftp exit $rc: $(tail -c 300 "$T_TMP/lftp.err")"; return 1; }
	_check_list "$dir" "$T_TMP/cli/list" || return 1
	[ "$(sha256sum <"$T_TMP/cli/got" | cut -d' ' -f1)" = "$BIG_SUM" ] ||
		fail "get: the copy differs ($(stat -c %s "$T_TMP/cli/got") of $BIG bytes)" ||
		return 1
	[ "$(sha256sum <"$dir/${FTP_UP:-up}" | cut -d' ' -f1)" = "$BIG_SUM" ] ||
		fail "put: the copy differs ($(stat -c %s "$dir/${FTP_UP:-up}") of $BIG bytes)" ||
		return 1
}

# _lftp_many PORT N: one passive lftp session under xvi-run --streams on a
# that gets the server's small file N times, each over a data connection
# of its own (a passive listener on the server each), byte-exact.
_lftp_many() {
	local port=$1 n=$2 cmds="" i rc
	rm -f "$T_TMP/cli/m."* "$T_TMP/cli.stats"
	for i in $(seq "$n"); do
		cmds+="get b.bin -o $T_TMP/cli/m.$i; "
	done
	t_x -T 150 a "$XVIRUN" --streams --stream-timeout "$XVI_MS" -v --stats "$T_TMP/cli.stats" \
		lftp -c "set cmd:fail-exit yes;
		set net:max-retries 1; set net:timeout 60; set ftp:ssl-allow no;
		set ftp:passive-mode on; set xfer:clobber yes; open ftp://198.18.0.2:$port;
		$cmds" >"$T_TMP/lftp.out" 2>"$T_TMP/lftp.err"
	rc=$?
	grep -v ' over an xvi stream\| listens on \|released$' "$T_TMP/lftp.err" |
		sed 's/^/# lftp: /' >&2
	[ $rc -eq 0 ] || { fail "lftp exit $rc: $(tail -c 300 "$T_TMP/lftp.err")"; return 1; }
	for i in $(seq "$n"); do
		cmp -s "$T_TMP/srv-$port/b.bin" "$T_TMP/cli/m.$i" ||
			fail "get $i of $n: the copy differs" || return 1
	done
}

# The "streams" line of --stats FILE (the counts; context lines come
# before it when a context was released during the run).
_sline() {
	grep -m1 '^streams ' "$1" 2>/dev/null
}

# The LIST output FILE names DIR's entries (before the put), with their
# types and sizes.
_check_list() {
	local want got
	want=$(find "$1" -mindepth 1 -maxdepth 1 ! -name up -printf '%y %s %f\n' | sort)
	got=$(awk 'NF >= 9 { t = substr($1, 1, 1) == "d" ? "d" : "f"; print t, $5, $9 }' \
		"$2" | sort)
	[ -n "$want" ] && [ "$want" = "$got" ] ||
		fail "listing differs from the directory: got [${got//$'\n'/; }]," \
			"want [${want//$'\n'/; }]"
}

# _run SERVER CLIENT PORT PASSIVE: the server and an lftp session, each
# under xvi-run --streams when its mode is xvi; sets OA/NA (node a's
# kernel TCP opens before and after the session) and OB/NB (node b's).
_run() {
	_ftpd_up "$1" "$3" || return 1
	_opens_around _lftp "$2" "$3" "$4" || { _ftpd_down "$3"; return 1; }
	_ftpd_down "$3"
	sed 's/^/# client stats: /' "$T_TMP/cli.stats" 2>/dev/null >&2
	return 0
}

# _session PASSIVE PORT: server and client both under xvi-run --streams;
# sets STATS_S/STATS_C (their --stats) and fails unless every connection
# went over xvi and neither node's kernel TCP opened one.
_session() {
	local port=$2 STREAM_MS=$XVI_MS
	_run xvi xvi "$port" "$1" || return 1
	STATS_C=$T_TMP/cli.stats
	STATS_S=$T_TMP/srv-$port.stats
	[ -s "$STATS_S" ] || fail "the server wrote no --stats at exit" || return 1
	[ "$OA" = "$NA" ] && [ "$OB" = "$NB" ] ||
		fail "kernel TCP opens (active passive) moved: a $OA -> $NA, b $OB -> $NB" ||
		return 1
	[ "$(_stat "$STATS_C" streams connect_tcp)" = 0 ] &&
		[ "$(_stat "$STATS_S" streams connect_tcp)" = 0 ] &&
		[ "$(_stat "$STATS_C" streams accept_tcp)" = 0 ] &&
		[ "$(_stat "$STATS_S" streams accept_tcp)" = 0 ] ||
		fail "a connection went to kernel TCP: client $(_sline "$STATS_C"), server" \
			"$(_sline "$STATS_S")" || return 1
	# Both files through the streams, each way.
	[ "$(_stat "$STATS_C" streams rx_bytes)" -gt "$BIG" ] &&
		[ "$(_stat "$STATS_C" streams tx_bytes)" -gt "$BIG" ] &&
		[ "$(_stat "$STATS_S" streams rx_bytes)" -gt "$BIG" ] &&
		[ "$(_stat "$STATS_S" streams tx_bytes)" -gt "$BIG" ] ||
		fail "the files did not go through the streams: client $(_sline "$STATS_C")," \
			"server $(_sline "$STATS_S")" || return 1
}

# Passive mode: lftp makes every connection (control, and a data connection
# to the server's ephemeral passive listener per ls, get, put).
case_passive() {
	_session on 2121 || return
	[ "$(_stat "$STATS_C" streams connect_xvi)" = 4 ] &&
		[ "$(_stat "$STATS_S" streams accept_xvi)" = 4 ] ||
		fail "not 4 connections over xvi: client $(_sline "$STATS_C"), server" \
			"$(_sline "$STATS_S")" || return
	t_log "$(_sline "$STATS_C" | cut -d' ' -f3-)"
}

# Active mode: lftp listens for each data connection (PORT/EPRT) and the
# server connects to it.
case_active() {
	_session off 2122 || return
	[ "$(_stat "$STATS_C" streams connect_xvi)" = 1 ] &&
		[ "$(_stat "$STATS_C" streams accept_xvi)" = 3 ] &&
		[ "$(_stat "$STATS_S" streams accept_xvi)" = 1 ] &&
		[ "$(_stat "$STATS_S" streams connect_xvi)" = 3 ] ||
		fail "connections not over xvi as expected (control from the client, 3 data" \
			"from the server): client $(_sline "$STATS_C"), server" \
			"$(_sline "$STATS_S")" || return
	t_log "$(_sline "$STATS_C" | cut -d' ' -f3-)"
}

# 40 data connections in one passive session, more than the 32 stream
# contexts a process holds at once: the server's passive listeners' contexts
# are released when each transfer is over, so every data connection still
# goes over xvi (none kernel-only for want of a context).
case_many() {
	local n=120 port=2125 stats_s
	_ftpd_up xvi "$port" || return
	_opens_around _lftp_many "$port" "$n" || { _ftpd_down "$port"; return 1; }
	_ftpd_down "$port"
	stats_s=$T_TMP/srv-$port.stats
	[ -s "$stats_s" ] || fail "the server wrote no --stats at exit" || return
	[ "$(_stat "$T_TMP/cli.stats" streams connect_xvi)" = $((n + 1)) ] &&
		[ "$(_stat "$stats_s" streams accept_xvi)" = $((n + 1)) ] &&
		[ "$(_stat "$stats_s" streams listen_xvi)" = $((n + 1)) ] &&
		[ "$(_stat "$T_TMP/cli.stats" streams connect_tcp)" = 0 ] &&
		[ "$(_stat "$stats_s" streams accept_tcp)" = 0 ] &&
		[ "$(_stat "$stats_s" streams listen_tcp)" = 0 ] ||
		fail "not all $((n + 1)) connections over xvi: client" \
			"$(_sline "$T_TMP/cli.stats"), server $(_sline "$stats_s")" || return
	[ "$OA" = "$NA" ] && [ "$OB" = "$NB" ] ||
		fail "kernel TCP opens (active passive) moved: a $OA -> $NA, b $OB -> $NB" ||
		return
	grep -q "stream-ctx .*role=listen" "$stats_s" ||
		fail "no released listener context in the server's --stats" || return
	t_log "server: $(grep -c 'role=listen' "$stats_s") listener contexts over the" \
		"session, $(_sline "$stats_s" | cut -d' ' -f3-)"
}

# A plain server: lftp under xvi-run falls back to kernel TCP for each
# connection (no stream answers) and the session still works byte-exact.
case_fallback() {
	_run kernel xvi 2123 on || return
	grep -q "over kernel TCP: xvi stream timeout" "$T_TMP/lftp.err" ||
		fail "no fallback line in lftp's log" || return
	[ "$(_stat "$T_TMP/cli.stats" streams connect_xvi)" = 0 ] &&
		[ "$(_stat "$T_TMP/cli.stats" streams connect_tcp)" = 4 ] ||
		fail "fallback not counted: $(_sline "$T_TMP/cli.stats")" || return
	[ "${NA% *}" -ge $((${OA% *} + 4)) ] ||
		fail "node a: kernel TCP ActiveOpens did not move by 4 ($OA -> $NA)"
}

# A plain lftp in active mode against the server under xvi-run: the
# control connection comes to the listener's kernel side, and the server's
# connects to lftp's data listeners find no stream there and fall back.
case_kernel_client() {
	_run xvi kernel 2124 off || return
	[ "$(_stat "$T_TMP/srv-2124.stats" streams accept_tcp)" = 1 ] &&
		[ "$(_stat "$T_TMP/srv-2124.stats" streams connect_tcp)" = 3 ] &&
		[ "$(_stat "$T_TMP/srv-2124.stats" streams connect_xvi)" = 0 ] ||
		fail "server: not 1 kernel accept and 3 kernel connects:" \
			"$(_sline "$T_TMP/srv-2124.stats")" || return
	[ "${NB% *}" -ge $((${OB% *} + 3)) ] && [ "${NB#* }" -gt "${OB#* }" ] ||
		fail "node b: kernel TCP opens did not move ($OB -> $NB)"
}

# _vsftpd_up PORT: Debian's vsftpd (standalone, in the foreground) on
# b:PORT under xvi-run --streams, anonymous, serving a fresh
# $T_TMP/srv-PORT (as _ftpd_up; uploads into sub/).  It forks a process
# per connection (fork(): isolate and isolate_network off, which would
# clone() into new namespaces), in which the session runs alone
# (anonymous, no port 20: vsftpd's one-process model), as the launching
# user (root, no chroot; a forked session's own data connections stay
# on kernel TCP, docs/PRELOAD.md "fork and exec").  No
# seccomp sandbox: it would refuse the preload's system calls.  Not -v:
# vsftpd's session puts the control connection on fds 0 to 2, so the
# preload's log lines would go to the client as FTP replies.  Sets
# SRV_PID.
_vsftpd_up() {
	local port=$1 dir=$T_TMP/srv-$1 conf=$T_TMP/vsftpd-$1.conf
	rm -rf "$dir"
	mkdir -p "$dir/sub" "$T_TMP/vsftpd-empty"
	cp "$T_TMP/cli/big" "$dir/big"
	echo small >"$dir/a.txt"
	head -c 4097 /dev/urandom >"$dir/b.bin"
	chmod 644 "$dir/big" "$dir/a.txt" "$dir/b.bin"
	chmod 755 "$dir" "$dir/sub"
	cat >"$conf" <<EOF
listen=YES
listen_ipv6=NO
listen_address=198.18.0.2
listen_port=$port
background=NO
run_as_launching_user=YES
isolate=NO
isolate_network=NO
seccomp_sandbox=NO
anonymous_enable=YES
local_enable=NO
no_anon_password=YES
anon_root=$dir
write_enable=YES
anon_upload_enable=YES
connect_from_port_20=NO
pasv_enable=YES
port_enable=YES
xferlog_enable=NO
syslog_enable=NO
secure_chroot_dir=$T_TMP/vsftpd-empty
EOF
	rm -f "$T_TMP/srv-$port.stats"
	t_x -T 200 b "$XVIRUN" --streams --stats "$T_TMP/srv-$port.stats" vsftpd "$conf" \
		>"$T_TMP/srv-$port.out" 2>"$T_TMP/srv-$port.err" &
	SRV_PID=$!
	_srv_ready xvi "$port" "$SRV_PID" "vsftpd"
}

# _vsftpd_session PASSIVE PORT: vsftpd under xvi-run --streams on b, an
# lftp session under xvi-run --streams on a (listing, 64 MiB get and
# put, byte-exact).  vsftpd's parent accepts the control connection over
# a stream and forks: the session child talks through the parent's
# relay.  The child's own sockets (the data connections) stay on kernel
# TCP (a forked child opens no endpoints: see docs/PRELOAD.md).  vsftpd
# leaves by signal or _exit and writes no --stats: the evidence is
# lftp's --stats (the control connect over an xvi stream) and both
# nodes' kernel TCP opens, which moved by the 3 data connections and
# not by the control connection.  Sets DA/DB: the opens' moves on a and
# b ("active passive").
_vsftpd_session() {
	local pasv=$1 port=$2 log=$T_TMP/srv-$2.err rc STREAM_MS=$XVI_MS
	_vsftpd_up "$port" || return 1
	FTP_UP=sub/up _opens_around _lftp xvi "$port" "$pasv"
	rc=$?
	t_stop "$SRV_PID"
	grep -v 'preflight' "$log" | sed 's/^/# vsftpd: /' | tail -30 >&2
	sed 's/^/# client stats: /' "$T_TMP/cli.stats" 2>/dev/null >&2
	[ $rc -eq 0 ] || return 1
	DA="$((${NA% *} - ${OA% *})) $((${NA#* } - ${OA#* }))"
	DB="$((${NB% *} - ${OB% *})) $((${NB#* } - ${OB#* }))"
	[ "$(_stat "$T_TMP/cli.stats" streams connect_xvi)" = 1 ] ||
		fail "lftp's control connection not over xvi: $(_sline "$T_TMP/cli.stats")" ||
		return 1
	# The connect-side context (active mode's listeners' come first, idle).
	[ "$(sed -n 's/^stream-ctx .*role=connect .* rx_frames=\([0-9]*\).*/\1/p' \
		"$T_TMP/cli.stats" | head -1)" -gt 0 ] ||
		fail "lftp's connect context's endpoint counters did not move" || return 1
	t_log "lftp: $(_sline "$T_TMP/cli.stats" | cut -d' ' -f3-); kernel TCP opens" \
		"(active passive) moved by a: $DA, b: $DB"
}

# vsftpd, passive mode: the control connection over xvi through the
# parent's relay; lftp's 3 data connects find no stream at the session's
# kernel-only listeners and fall back (a's ActiveOpens and b's
# PassiveOpens move by 3, not 4).
case_vsftpd_passive() {
	_vsftpd_session on 2126 || return
	[ "$(_stat "$T_TMP/cli.stats" streams connect_tcp)" = 3 ] ||
		fail "not 3 data connects over kernel TCP: $(_sline "$T_TMP/cli.stats")" || return
	[ "$DA" = "3 0" ] && [ "$DB" = "0 3" ] ||
		fail "kernel TCP opens moved by a: $DA, b: $DB (want 3 0 and 0 3: the control" \
			"connection over xvi)" || return
}

# vsftpd, active mode: the session child connects each data connection
# over kernel TCP to lftp's listeners (b's ActiveOpens and a's
# PassiveOpens move by 3, not 4).
case_vsftpd_active() {
	_vsftpd_session off 2127 || return
	[ "$(_stat "$T_TMP/cli.stats" streams accept_tcp)" = 3 ] ||
		fail "not 3 data connections accepted over kernel TCP:" \
			"$(_sline "$T_TMP/cli.stats")" || return
	[ "$DA" = "0 3" ] && [ "$DB" = "3 0" ] ||
		fail "kernel TCP opens moved by a: $DA, b: $DB (want 0 3 and 3 0: the control" \
			"connection over xvi)" || return
}

# shellcheck disable=SC2034 # read by t_main
CASES=(
	passive		case_passive	"pyftpdlib and lftp under xvi-run --streams, passive mode: listing, 64 MiB get and put over xvi streams, byte-exact"
	active		case_active	"the same in active mode: the server connects each data connection"
	many		case_many	"121 connections in one passive session (120 gets), more than 32 stream contexts and more listeners released than a segment holds endpoints (64): every one over xvi, listener contexts released and reused"
	fallback	case_fallback	"lftp under xvi-run --streams against a plain pyftpdlib: kernel TCP, byte-exact"
	vsftpd_passive	case_vsftpd_passive	"vsftpd (a process per connection) and lftp under xvi-run --streams, passive mode: the control connection over xvi through the parent's relay, data over kernel TCP; listing, 64 MiB get and put byte-exact"
	vsftpd_active	case_vsftpd_active	"the same in active mode: vsftpd's session connects each data connection"
	kernel_client	case_kernel_client	"a plain lftp in active mode against pyftpdlib under xvi-run --streams: kernel TCP both ways, byte-exact"
)

t_main "$@"
