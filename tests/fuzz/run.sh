#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# tests/fuzz/run.sh: run every libFuzzer target in $B/fuzz (built by `make`).
#   tests/fuzz/run.sh            short bounded run of each (make test):
#                                FUZZ_RUNS executions (default 100000) and at
#                                most FUZZ_SHORT_TIME s (default 20) each
#   tests/fuzz/run.sh --long     deliberate fuzzing: FUZZ_TIME s (default
#                                600) each, corpus kept in $B/fuzz/corpus-NAME,
#                                crashes in $B/fuzz/crash-NAME-*
#   tests/fuzz/run.sh -l         list the targets
#   tests/fuzz/run.sh [--long] NAME...   only these targets
# Results in TAP (tests/lib/tap.sh, the lab suites' format too), one per
# target; exit 1 if any failed.  Execution counts go to stderr.
set -u -o pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${B:-build}
case $B in /*) BDIR=$B ;; *) BDIR=$ROOT/$B ;; esac
FDIR=$BDIR/fuzz
# shellcheck source=tests/lib/tap.sh
. "$ROOT/tests/lib/tap.sh"
long=0
case ${1:-} in
--long) long=1; shift ;;
-l)
	for f in "$ROOT"/tests/fuzz/*.c; do
		[ -e "$f" ] && printf '%s\tlibFuzzer target %s\n' "$(basename "$f" .c)" "${f#"$ROOT"/}"
	done
	exit 0 ;;
esac

srcs=()
if [ $# -gt 0 ]; then
	for name; do
		[ -e "$ROOT/tests/fuzz/$name.c" ] ||
			{ echo "fuzz/run.sh: no target '$name' (see -l)" >&2; exit 2; }
		srcs+=("$ROOT/tests/fuzz/$name.c")
	done
else
	for src in "$ROOT"/tests/fuzz/*.c; do
		[ -e "$src" ] && srcs+=("$src")
	done
fi
tap_plan ${#srcs[@]}
failed=0 n=0
for src in "${srcs[@]}"; do
	n=$((n + 1))
	name=$(basename "$src" .c)
	bin=$FDIR/$name
	if [ ! -x "$bin" ]; then
		tap_result $n "$name" fail "$bin missing: build it (make B=$B)"
		failed=1
		continue
	fi
	log=$(mktemp /tmp/xvi-fuzz-$name.XXXXXX)
	if [ $long = 1 ]; then
		corpus=$FDIR/corpus-$name
		mkdir -p "$corpus"
		args=(-max_total_time="${FUZZ_TIME:-600}" -artifact_prefix="$FDIR/crash-$name-"
			"$corpus")
		tmo=$((${FUZZ_TIME:-600} + 60))
	else
		# A fresh corpus each time: the short run must not depend on
		# what an earlier run left behind.
		corpus=$(mktemp -d /tmp/xvi-fuzz-corpus.XXXXXX)
		args=(-runs="${FUZZ_RUNS:-100000}" -max_total_time="${FUZZ_SHORT_TIME:-20}"
			-seed=1 -artifact_prefix="$corpus/" "$corpus")
		tmo=$((${FUZZ_SHORT_TIME:-20} + 30))
	fi
	if timeout -k 5 "$tmo" "$bin" "${args[@]}" >"$log" 2>&1; then
		runs=$(sed -nE 's/^Done ([0-9]+) runs in ([0-9]+) second.*/\1 runs in \2 s/p' "$log")
		echo "# fuzz $name: ${runs:-?}" >&2
		tap_result $n "$name" ok
	else
		rc=$?
		why=$(grep -m1 -E 'ERROR: |SUMMARY: |runtime error' "$log" | cut -c1-160)
		echo "# fuzz $name failed (exit $rc); last lines:" >&2
		tail -n 30 "$log" | sed 's/^/# /' >&2
		tap_result $n "$name" fail "exit $rc${why:+: $why}"
		failed=1
	fi
	rm -f "$log"
	[ $long = 1 ] || rm -rf "$corpus"
done
exit $failed
