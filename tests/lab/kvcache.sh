#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# kvcache.sh: the key-value cache extension (docs/EXTENSIONS.md, "Key-value
# cache") in front of a real memcached on node b, which runs the datapath
# too; node a's kernel UDP clients speak memcached's protocol to it
# (tests/lab/helpers/memcache_udp.py).  Hits, misses, set-then-get,
# delete-then-get, and the same under concurrent writers and readers: no GET
# may return a value older than the last acknowledged write.  The cases
# build on each other in table order; `detached` always runs and stops
# memcached.

. "$(dirname "$0")/_tap.sh"

PORT=11311
MC=198.18.0.2
KVCACHE=$T_BIN/xvi-kvcache
MC_PID=

_mc() { t_x -T 60 a "$PY" "$T_HELPERS/memcache_udp.py" "$MC" "$PORT" "$@"; }
_kv() { t_x b "$KVCACHE" "$@"; }

# The cache's counter NAME now.
_stat() {
	_kv stats "$LAB_IFACE" --json >"$T_TMP/kv.json" 2>"$T_TMP/kv.err" || return 1
	t_json_values "$T_TMP/kv.json" "$1"
}

t_setup() {
	t_need "$KVCACHE" || return 1
	command -v memcached >/dev/null ||
		fail "memcached is not installed: bash scripts/install-deps.sh" || return
	[ -r "$T_B/ext/kvcache.bpf.o" ] ||
		fail "$B/ext/kvcache.bpf.o missing: build it (make B=$B)" || return
	t_lab_up kvc || return 1
	t_attach b || return 1
	# UDP only (-p 0): a write over TCP would be seen only as "something
	# changed" (docs/EXTENSIONS.md); -t 4 serves requests in parallel, the
	# reordering the cache must survive.
	t_x -T 600 b memcached -u nobody -U "$PORT" -p 0 -l "$MC" -t 4 -m 64 \
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

case_concurrent() {
	local out h0 h1
	h0=$(_stat hits) || fail "no stats" || return
	out=$(t_x -T 300 a "$PY" "$T_HELPERS/memcache_udp.py" "$MC" "$PORT" consistency \
		--writers 4 --readers 4 --rounds 150 2>&1) ||
		fail "$(grep -m3 -e VIOLATION -e Error <<<"$out" | tr '\n' ' ')" || return
	t_log "$(tail -1 <<<"$out")"
	h1=$(_stat hits) || fail "no stats" || return
	# A run the cache answered nothing of would prove nothing.
	[ "$h1" -gt "$h0" ] || fail "no GET of the run was answered by the cache" || return
	t_log "cache: $(cat "$T_TMP/kv.json")"
}

case_detached() {
	local err out ids=
	if [ -s "$T_TMP/kv.json" ] || _kv stats "$LAB_IFACE" >/dev/null 2>&1; then
		ids=$(t_x b tc -j filter show dev "$LAB_IFACE" ingress 2>/dev/null |
			"$PY" -c 'import json,sys
print(" ".join(str(f["options"]["prog"]["id"]) for f in json.load(sys.stdin)
               if "options" in f and "prog" in f["options"]))')
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
		fail "the cache's programs ($ids) are still loaded after detach"
}

# shellcheck disable=SC2034 # read by t_main
CASES=(
	attach		case_attach		"xvi-kvcache attach on b; a second attach refused"
	miss_hit	case_miss_hit		"a GET misses and fills the cache, the next one hits"
	set_get		case_set_get		"set, then GET returns the new value, twice"
	delete_get	case_delete_get		"delete, then GET misses"
	concurrent	case_concurrent		"4 writers and 4 readers on a: no stale GET, some hits"
	detached	case_detached		"detach: memcached alone answers, programs gone"
)
# shellcheck disable=SC2034 # read by t_main
CASES_ALWAYS=(detached)

t_main "$@"
