#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# tests/spin/run.sh: check the Promela model of the stream protocol
# (tests/spin/stream.pml, docs/PROTOCOL.md section 12) with Spin, a bounded
# exhaustive run per property; one TAP result (tests/lib/tap.sh) each.
#   tests/spin/run.sh          every case
#   tests/spin/run.sh -l       list the cases
#   tests/spin/run.sh NAME...  only these cases
# Spin's statistics (states, time) go to stderr.  The work directory is
# $B/spin (pan.c and the verifier are rebuilt every run).
set -u -o pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${B:-build}
case $B in /*) BDIR=$B ;; *) BDIR=$ROOT/$B ;; esac
MODEL=$ROOT/tests/spin/stream.pml
# shellcheck source=tests/lib/tap.sh
. "$ROOT/tests/lib/tap.sh"

# NAME <tab> what it checks <tab> spin -D flags <tab> cc flags <tab> pan flags <tab> expect
# expect: pass, or fail (a broken model the check must reject); "-": none.
CASES=$(cat <<'T'
bytes_exact	orderly close, 3 bytes: byte-exact delivery (assertions) and no invalid end state (deadlock)	-DNBYTES=3	-DSAFETY -DNOCLAIM	-	pass
no_livelock	orderly close, 2 bytes: no non-progress cycle (livelock)	-DNBYTES=2	-DNP -DNOCLAIM	-l	pass
close_terminates	orderly close, 2 bytes: both ends always finish, LTL <>(done[0] && done[1]) under weak fairness	-DNBYTES=2	-	-a -f -N terminates	pass
abort_safe	abort at any moment, 2 bytes: delivered bytes a prefix of the sent ones, no invalid end state	-DNBYTES=2 -DABORT	-DSAFETY -DNOCLAIM	-	pass
mutant_noretx	the check rejects a model without retransmission (non-progress cycle found)	-DNBYTES=2 -DMUTANT_NORETX	-DNP -DNOCLAIM	-l	fail
T
)

if [ "${1:-}" = -l ]; then
	cut -f1,2 <<<"$CASES"
	exit 0
fi
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
	mapfile -t names < <(cut -f1 <<<"$CASES")
fi
for n in "${names[@]}"; do
	grep -q "^$n	" <<<"$CASES" || { echo "spin/run.sh: no case '$n' (see -l)" >&2; exit 2; }
done

if ! command -v spin >/dev/null || ! command -v gcc >/dev/null; then
	tap_plan 0 "spin or gcc not installed (make deps installs spin)"
	exit 0
fi

W=$BDIR/spin
mkdir -p "$W" || exit 1
tap_plan ${#names[@]}
i=0 failed=0
for n in "${names[@]}"; do
	i=$((i + 1))
	IFS=$'\t' read -r _ _ sdefs ccflags panflags expect < <(grep "^$n	" <<<"$CASES")
	[ "$ccflags" = - ] && ccflags=
	[ "$panflags" = - ] && panflags=
	d=$W/$n
	rm -rf "$d" && mkdir -p "$d" && cp "$MODEL" "$d/stream.pml"
	why=
	# shellcheck disable=SC2086
	if ! (cd "$d" && spin $sdefs -a stream.pml >spin.log 2>&1); then
		why="spin -a failed: $(tail -3 "$d/spin.log")"
	elif ! (cd "$d" && gcc -O2 -w $ccflags -DMEMLIM=2048 -DCOLLAPSE -o pan pan.c \
		>cc.log 2>&1); then
		why="gcc pan.c failed: $(tail -3 "$d/cc.log")"
	else
		# -m: search depth; the model's runs are about 1000 steps deep.
		# shellcheck disable=SC2086
		(cd "$d" && ./pan -m300000 $panflags >pan.log 2>&1)
		errs=$(sed -nE 's/.*errors: ([0-9]+).*/\1/p' "$d/pan.log" | tail -1)
		stats=$(grep -E 'states, stored|elapsed time' "$d/pan.log" | sed 's/^ *//' | paste -sd' ')
		echo "spin/$n: errors ${errs:-?}; $stats" >&2
		if [ -z "$errs" ]; then
			why="pan gave no result: $(tail -3 "$d/pan.log")"
		elif [ "$errs" = 0 ] && grep -qE 'max search depth too small|Search not completed|out of memory' \
			"$d/pan.log"; then
			why="search incomplete (depth or memory): $(grep -E 'max search depth|not completed|memory' "$d/pan.log" | head -2)"
		elif [ "$expect" = pass ] && [ "$errs" != 0 ]; then
			why="$(grep -E '^pan:' "$d/pan.log" | head -1); trail: cd $d && spin $sdefs -t stream.pml | grep MSC"
		elif [ "$expect" = fail ] && [ "$errs" = 0 ]; then
			why="the broken model passed: the check cannot fail"
		fi
	fi
	if [ -z "$why" ]; then
		tap_result $i "$n" ok
	else
		tap_result $i "$n" fail "$why"
		failed=1
	fi
done
exit $failed
