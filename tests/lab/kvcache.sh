#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# kvcache.sh: the key-value cache extension (docs/EXTENSIONS.md, "Key-value
# cache") in front of a real memcached on node b, which runs the datapath
# too; node a's kernel UDP clients speak memcached's protocol to it
# (tests/lab/helpers/memcache_udp.py).  Hits, misses, set-then-get,
# delete-then-get, and the same under concurrent writers and readers: no GET
# may return a value older than the last acknowledged write.  Then the same
# with the hit path in XDP (attach --xdp: kv_xdp in the datapath's port
# hook), whose replies must be byte-exact and counted as its own, over IPv4
# and over IPv6 (node a's kernel client to b's IPv6 address).  The cases
# build on each other in table order; `detached` always runs and stops
# memcached.

. "$(dirname "$0")/_tap.sh"

PORT=11311
MC=198.18.0.2
MC6=2001:2::2
KVCACHE=$T_BIN/xvi-kvcache
MC_PID=
# The datapath's pins (kv_xdp's hook table must be pinned to stay filled).
BPFFS=

_mc() { t_x -T 60 a "$PY" "$T_HELPERS/memcache_udp.py" "$MC" "$PORT" "$@"; }
_mc6() { t_x -T 60 a "$PY" "$T_HELPERS/memcache_udp.py" "$MC6" "$PORT" "$@"; }
_kv() { t_x b "$KVCACHE" "$@"; }

# The cache's counter NAME now.
_stat() {
	_kv stats "$LAB_IFACE" --json >"$T_TMP/kv.json" 2>"$T_TMP/kv.err" || return 1
	t_json_values "$T_TMP/kv.json" "$1"
}

t_setup() {
	local err
	t_need "$KVCACHE" || return 1
	command -v memcached >/dev/null ||
		fail "memcached is not installed: bash scripts/install-deps.sh" || return
	[ -r "$T_B/ext/kvcache.bpf.o" ] ||
		fail "$B/ext/kvcache.bpf.o missing: build it (make B=$B)" || return
	t_lab_up kvc || return 1
	BPFFS=$LAB_STATE/$T_LAB/kvc-bpffs
	mkdir -p "$BPFFS" && mount -t bpf bpf "$BPFFS" ||
		fail "cannot mount a bpffs on $BPFFS" || return
	err=$(t_xdpvi b --bpffs "$BPFFS" attach "$LAB_IFACE" 2>&1 >/dev/null) ||
		fail "xdp-vi attach on node b failed: ${err//$'\n'/ }" || return
	# UDP only (-p 0): a write over TCP would be seen only as "something
	# changed" (docs/EXTENSIONS.md); -t 4 serves requests in parallel, the
	# reordering the cache must survive.  Both families' addresses.
	t_x -T 600 b memcached -u nobody -U "$PORT" -p 0 -l "$MC,[$MC6]" -t 4 -m 64 \
		>"$T_TMP/mc.out" 2>&1 &
	MC_PID=$!
	t_wait_udp_port b "$PORT" ||
		fail "memcached on b:$PORT never came up: $(head -c 200 "$T_TMP/mc.out")"
}

case_attach() {
	local err
	err=$(_kv attach "$LAB_IFACE" --port "$PORT" 2>&1) ||
		fail "xvi-kvcache attach: ${err//$'\n'/ }" || return
	if err=$(_kv attach "$LAB_IFACE" --port "$PORT" 2>&1); then
		fail "a second attach succeeded"
		return
	fi
	[[ $err == *"already attached"* ]] || fail "second attach: $err" || return
	_stat hits >/dev/null || fail "no stats: $(cat "$T_TMP/kv.err")"
}

case_miss_hit() {
	local out h0 h1 m0 m1 f1
	m0=$(_stat misses) && h0=$(_stat hits) || fail "no stats" || return
	out=$(_mc set hm-key hello-1 2>&1) || fail "set: $out" || return
	out=$(_mc get hm-key 2>&1) || fail "get: $out" || return
	[ "$out" = hello-1 ] || fail "first GET returned '$out'" || return
	m1=$(_stat misses) && f1=$(_stat fills) || fail "no stats" || return
	[ "$m1" -gt "$m0" ] || fail "the first GET was not a miss ($m0 -> $m1)" || return
	[ "$f1" -ge 1 ] || fail "memcached's reply filled nothing" || return
	out=$(_mc get hm-key 2>&1) || fail "get: $out" || return
	[ "$out" = hello-1 ] || fail "second GET returned '$out'" || return
	h1=$(_stat hits) || fail "no stats" || return
	[ "$h1" -gt "$h0" ] || fail "the second GET was not answered by the cache" || return
}

case_set_get() {
	local out i
	for i in 2 3 4; do
		out=$(_mc set hm-key "hello-$i" 2>&1) || fail "set: $out" || return
		out=$(_mc get hm-key 2>&1) || fail "get: $out" || return
		[ "$out" = "hello-$i" ] || fail "set hello-$i, then GET returned '$out'" || return
		out=$(_mc get hm-key 2>&1) || fail "get: $out" || return
		[ "$out" = "hello-$i" ] || fail "set hello-$i, GET twice returned '$out'" || return
	done
}

case_delete_get() {
	local out rc
	out=$(_mc get hm-key 2>&1) || fail "get: $out" || return
	out=$(_mc delete hm-key 2>&1) || fail "delete: $out" || return
	out=$(_mc get hm-key 2>&1) && rc=0 || rc=$?
	[ $rc -eq 3 ] || fail "deleted, then GET returned '$out' (exit $rc)" || return
}

# The concurrent run, the cache's hits counted by counter $1, to memcached's
# address $2 (default: IPv4).
_concurrent() {
	local out h0 h1
	h0=$(_stat "$1") || fail "no stats" || return
	out=$(t_x -T 300 a "$PY" "$T_HELPERS/memcache_udp.py" "${2:-$MC}" "$PORT" consistency \
		--writers 4 --readers 4 --rounds 150 2>&1) ||
		fail "$(grep -m3 -e VIOLATION -e Error <<<"$out" | tr '\n' ' ')" || return
	t_log "$(tail -1 <<<"$out")"
	h1=$(_stat "$1") || fail "no stats" || return
	# A run the cache answered nothing of would prove nothing.
	[ "$h1" -gt "$h0" ] || fail "no GET of the run was answered by the cache ($1)" || return
	t_log "cache: $(cat "$T_TMP/kv.json")"
}

case_concurrent() { _concurrent hits; }

# The programs of the attached cache: every program that uses one of the
# maps of our tc ingress filter's program (kv_ingress, kv_egress, kv_xdp).
_kv_prog_ids() {
	t_x b tc -j filter show dev "$LAB_IFACE" ingress 2>/dev/null |
		"$PY" -c 'import json, subprocess, sys
ids = [f["options"]["prog"]["id"] for f in json.load(sys.stdin)
       if "options" in f and "prog" in f["options"]]
progs = json.loads(subprocess.run(["bpftool", "-j", "prog", "show"], check=True,
                                  capture_output=True).stdout)
maps = set()
for p in progs:
    if p["id"] in ids:
        maps |= set(p.get("map_ids", []))
print(" ".join(str(p["id"]) for p in progs if maps & set(p.get("map_ids", []))))'
}

# kv_xdp's replies leave by XDP_TX, which a veth hands to its peer only
# while the peer runs XDP (docs/KERNEL.md, fact 28): the datapath on a,
# which passes them to a's kernel.
case_xdp_attach() {
	local err out
	t_attach a || return
	err=$(_kv detach "$LAB_IFACE" 2>&1) || fail "detach: $err" || return
	# Without the datapath's pins the hook would not outlive the command:
	# refused, and nothing left attached.
	if err=$(_kv attach "$LAB_IFACE" --port "$PORT" --xdp --bpffs /nonexistent 2>&1); then
		fail "attach --xdp without the datapath's pins succeeded"
		return
	fi
	[[ $err == *"not pinned"* ]] || fail "unpinned attach --xdp: $err" || return
	_kv stats "$LAB_IFACE" >/dev/null 2>&1 &&
		fail "the refused attach --xdp left the cache attached" && return
	err=$(_kv attach "$LAB_IFACE" --port "$PORT" --xdp --bpffs "$BPFFS" 2>&1) ||
		fail "xvi-kvcache attach --xdp: ${err//$'\n'/ }" || return
	out=$(_kv_prog_ids) || fail "cannot list the cache's programs" || return
	[ "$(wc -w <<<"$out")" -eq 3 ] ||
		fail "expected kv_ingress, kv_egress and kv_xdp loaded, found programs: $out" ||
		return
	# A second attach is refused before it touches anything.
	if err=$(_kv attach "$LAB_IFACE" --port "$PORT" --xdp 2>&1); then
		fail "a second attach --xdp succeeded"
		return
	fi
	[[ $err == *"already attached"* ]] || fail "second attach: $err"
}

# Values of several lengths (odd ones pad the UDP checksum), each set, read
# by memcached (a miss that fills), then answered by kv_xdp: byte-exact, and
# counted by kv_xdp, not by the tc hit path.  A reply must fit the room
# around the request: on a veth some 200 bytes more than the request
# (docs/KERNEL.md, fact 45), so the 1000-byte value is answered by
# whichever path has room, byte-exact all the same.
case_xdp_hit() {
	local out x0 x1 h0 h1 len val
	for len in 1 2 3 100 151 1000; do
		val=$("$PY" -c 'import sys; n = int(sys.argv[1])
print("".join(chr(33 + (i * 7 + n) % 94) for i in range(n)))' "$len")
		x0=$(_stat xdp_hits) && h0=$(_stat hits) || fail "no stats" || return
		out=$(_mc set "xk$len" "$val" 2>&1) || fail "set $len bytes: $out" || return
		out=$(_mc get "xk$len" 2>&1) || fail "get: $out" || return
		[ "$out" = "$val" ] || fail "first GET of $len bytes returned other bytes" || return
		out=$(_mc get "xk$len" 2>&1) || fail "second GET of $len bytes: $out" || return
		[ "$out" = "$val" ] ||
			fail "the GET answered in XDP returned other bytes ($len-byte value):" \
				"'${out:0:40}...'" || return
		x1=$(_stat xdp_hits) && h1=$(_stat hits) || fail "no stats" || return
		if [ "$len" -ge 1000 ]; then
			[ $((x1 + h1)) -gt $((x0 + h0)) ] ||
				fail "the second GET ($len bytes) was answered by neither path" ||
				return
			t_log "$len-byte value: kv_xdp $x0 -> $x1, tc $h0 -> $h1"
			continue
		fi
		[ "$x1" -gt "$x0" ] ||
			fail "the second GET ($len bytes) was not answered by kv_xdp" || return
		[ "$h1" -eq "$h0" ] || fail "the tc hit path answered ($h0 -> $h1)" || return
	done
}

case_xdp_concurrent() { _concurrent xdp_hits; }

# tests/bench/kvget --xvi (the benchmark's client, GETs from a libxvi
# endpoint on a): a cached value read back byte-exact and answered by
# kv_xdp; the same replies counted bad against another value (the check
# can fail); a key never set read as misses.  Counts only, never speed.
_kvget() {	# KEY EXPECT: kvget --xvi's JSON, 0.3 s, 8 GETs in flight
	t_x -T 60 a "$T_B/tests/kvget" --xvi "$LAB_IFACE" --expect "$2" "$MC" "$PORT" "$1" 0.3 8
}

case_xdp_xvi_client() {
	local out val x0 x1 h m b
	t_need "$T_B/tests/kvget" || return 1
	val=$("$PY" -c 'print("".join(chr(33 + (i * 11) % 94) for i in range(151)))')
	out=$(_mc set xv-key "$val" 2>&1) || fail "set: $out" || return
	out=$(_mc get xv-key 2>&1) || fail "get: $out" || return
	x0=$(_stat xdp_hits) || fail "no stats" || return
	out=$(_kvget xv-key "$val" 2>&1) || fail "kvget --xvi: $out" || return
	echo "$out" >"$T_TMP/kvget.json"
	h=$(t_json_values "$T_TMP/kvget.json" hits) && m=$(t_json_values "$T_TMP/kvget.json" misses) &&
		b=$(t_json_values "$T_TMP/kvget.json" bad) || fail "kvget output: $out" || return
	[ "$h" -gt 0 ] && [ "$m" -eq 0 ] && [ "$b" -eq 0 ] ||
		fail "kvget --xvi of a cached value: $out" || return
	x1=$(_stat xdp_hits) || fail "no stats" || return
	[ "$x1" -gt "$x0" ] || fail "kv_xdp answered none of kvget's GETs ($x0 -> $x1)" || return
	out=$(_kvget xv-key "${val:1}x" 2>&1) || fail "kvget --xvi: $out" || return
	echo "$out" >"$T_TMP/kvget.json"
	h=$(t_json_values "$T_TMP/kvget.json" hits) && b=$(t_json_values "$T_TMP/kvget.json" bad) ||
		fail "kvget output: $out" || return
	[ "$h" -eq 0 ] && [ "$b" -gt 0 ] ||
		fail "kvget --xvi took replies of other bytes as hits: $out" || return
	out=$(_kvget xv-never-set "$val" 2>&1) || fail "kvget --xvi: $out" || return
	echo "$out" >"$T_TMP/kvget.json"
	h=$(t_json_values "$T_TMP/kvget.json" hits) && m=$(t_json_values "$T_TMP/kvget.json" misses) &&
		b=$(t_json_values "$T_TMP/kvget.json" bad) || fail "kvget output: $out" || return
	if [ "$h" -ne 0 ] || [ "$m" -eq 0 ] || [ "$b" -ne 0 ]; then
		fail "kvget --xvi of a key never set: $out"
	fi
}


# The same over IPv6: values of odd and even lengths set, read once
# (memcached's reply fills) and again (kv_xdp answers, with the UDP
# checksum IPv6 requires: a's kernel drops a reply whose checksum is
# wrong, and the GET times out).  Byte-exact, counted by kv_xdp only.
case_xdp6_hit() {
	local out x0 x1 h0 h1 len val
	for len in 1 2 3 100 151; do
		val=$("$PY" -c 'import sys; n = int(sys.argv[1])
print("".join(chr(33 + (i * 5 + n) % 94) for i in range(n)))' "$len")
		out=$(_mc6 set "x6k$len" "$val" 2>&1) || fail "set $len bytes over IPv6: $out" ||
			return
		out=$(_mc6 get "x6k$len" 2>&1) || fail "get over IPv6: $out" || return
		[ "$out" = "$val" ] || fail "first IPv6 GET of $len bytes returned other bytes" ||
			return
		x0=$(_stat xdp_hits) && h0=$(_stat hits) || fail "no stats" || return
		out=$(_mc6 get "x6k$len" 2>&1) || fail "second IPv6 GET of $len bytes: $out" ||
			return
		[ "$out" = "$val" ] ||
			fail "the IPv6 GET answered in XDP returned other bytes ($len-byte value):" \
				"'${out:0:40}...'" || return
		x1=$(_stat xdp_hits) && h1=$(_stat hits) || fail "no stats" || return
		[ "$x1" -gt "$x0" ] ||
			fail "the second IPv6 GET ($len bytes) was not answered by kv_xdp" \
				"(xdp_hits $x0 -> $x1)" || return
		[ "$h1" -eq "$h0" ] || fail "the tc hit path answered ($h0 -> $h1)" || return
	done
}

# Writes of one family, reads of the other: one cache, one set of rules.
case_xdp6_mixed() {
	local out rc i
	for i in 1 2; do
		out=$(_mc set mx-key "v4-$i" 2>&1) || fail "set over IPv4: $out" || return
		out=$(_mc6 get mx-key 2>&1) || fail "get over IPv6: $out" || return
		[ "$out" = "v4-$i" ] || fail "set v4-$i over IPv4, IPv6 GET returned '$out'" ||
			return
		out=$(_mc6 get mx-key 2>&1) || fail "get over IPv6: $out" || return
		[ "$out" = "v4-$i" ] || fail "set v4-$i over IPv4, IPv6 GET twice: '$out'" || return
		out=$(_mc6 set mx-key "v6-$i" 2>&1) || fail "set over IPv6: $out" || return
		out=$(_mc6 get mx-key 2>&1) || fail "get over IPv6: $out" || return
		[ "$out" = "v6-$i" ] || fail "set v6-$i over IPv6, IPv6 GET returned '$out'" ||
			return
	done
	out=$(_mc delete mx-key 2>&1) || fail "delete over IPv4: $out" || return
	out=$(_mc6 get mx-key 2>&1) && rc=0 || rc=$?
	[ $rc -eq 3 ] || fail "deleted over IPv4, then IPv6 GET returned '$out' (exit $rc)"
}

case_xdp6_concurrent() { _concurrent xdp_hits "$MC6"; }

# xdp-vi hook list: the cache's hook, on memcached's port, kv_xdp, and its
# counters: every datagram of the XDP cases handed to it, the hits among
# them, none missing.
case_xdp_hook_list() {
	local out err x
	x=$(_stat xdp_hits) || fail "no stats" || return
	out=$(t_xdpvi b --bpffs "$BPFFS" hook list "$LAB_IFACE" --json 2>&1) ||
		fail "xdp-vi hook list: $out" || return
	err=$("$PY" -c 'import json, sys
h = json.loads(sys.argv[1])
port, hits = int(sys.argv[2]), int(sys.argv[3])
assert len(h) == 1, "expected one hook, got %d" % len(h)
h = h[0]
assert h["port"] == port and h["prog_name"] == "kv_xdp" and h["prog_id"] > 0, "not the cache hook"
assert h["hooked"] >= hits > 0, "hooked %d, kv_xdp answered %d" % (h["hooked"], hits)
assert h["missing"] == 0, "missing %d" % h["missing"]' "$out" "$PORT" "$x" 2>&1) ||
		fail "hook list: $(tail -1 <<<"$err") ($out)" || return
	t_log "hook list: $out"
}

case_detached() {
	local err out ids=
	if [ -s "$T_TMP/kv.json" ] || _kv stats "$LAB_IFACE" >/dev/null 2>&1; then
		ids=$(_kv_prog_ids)
		err=$(_kv detach "$LAB_IFACE" 2>&1) || fail "detach: $err" || return
	fi
	out=$(t_x b tc filter show dev "$LAB_IFACE" egress 2>&1)
	[[ $out != *kv_egress* ]] || fail "kv_egress still attached: $out" || return
	# memcached answers alone, the values as they are.
	if [ -n "$MC_PID" ]; then
		if ! out=$(_mc set hm-key after 2>&1) || ! out=$(_mc get hm-key 2>&1); then
			t_stop "$MC_PID"
			fail "memcached after detach: $out"
			return
		fi
		t_stop "$MC_PID"
		MC_PID=
		[ "$out" = after ] || fail "GET after detach returned '$out'" || return
	fi
	# shellcheck disable=SC2086 # one argument per id
	[ -z "$ids" ] || t_ids_gone prog $ids >/dev/null ||
		fail "the cache's programs ($ids) are still loaded after detach" || return
	if [ -n "$BPFFS" ]; then
		out=$(t_xdpvi b --bpffs "$BPFFS" hook list "$LAB_IFACE" --json 2>&1)
		[ "$out" = "[]" ] || fail "port hooks left after detach: $out" || return
		err=$(t_xdpvi b --bpffs "$BPFFS" detach "$LAB_IFACE" 2>&1 >/dev/null) ||
			fail "xdp-vi detach: $err" || return
		umount "$BPFFS" || fail "cannot unmount $BPFFS"
	fi
	t_xdpvi a detach "$LAB_IFACE" >/dev/null 2>&1
	return 0
}

# shellcheck disable=SC2034 # read by t_main
CASES=(
	attach		case_attach		"xvi-kvcache attach on b; a second attach refused"
	miss_hit	case_miss_hit		"a GET misses and fills the cache, the next one hits"
	set_get		case_set_get		"set, then GET returns the new value, twice"
	delete_get	case_delete_get		"delete, then GET misses"
	concurrent	case_concurrent		"4 writers and 4 readers on a: no stale GET, some hits"
	xdp_attach	case_xdp_attach		"attach --xdp: kv_xdp in the datapath's port hook"
	xdp_hit		case_xdp_hit		"values of 1 to 1100 bytes answered by kv_xdp, byte-exact"
	xdp_xvi_client	case_xdp_xvi_client	"kvget --xvi: a cached value byte-exact, bad bytes caught"
	xdp_set_get	case_set_get		"with kv_xdp: set, then GET returns the new value, twice"
	xdp_delete_get	case_delete_get		"with kv_xdp: delete, then GET misses"
	xdp_concurrent	case_xdp_concurrent	"with kv_xdp: 4 writers and 4 readers, no stale GET"
	xdp6_hit	case_xdp6_hit		"IPv6 GETs answered by kv_xdp, byte-exact, checksummed"
	xdp6_mixed	case_xdp6_mixed		"with kv_xdp: IPv4 writes, IPv6 reads and back"
	xdp6_concurrent	case_xdp6_concurrent	"with kv_xdp over IPv6: 4 writers and 4 readers"
	xdp_hook_list	case_xdp_hook_list	"xdp-vi hook list: the cache's hook and its counters"
	detached	case_detached		"detach: memcached alone answers, programs gone"
)
# shellcheck disable=SC2034 # read by t_main
CASES_ALWAYS=(detached)

t_main "$@"
