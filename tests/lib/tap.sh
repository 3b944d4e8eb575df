# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# shellcheck shell=bash
#
# tests/lib/tap.sh: the one result format of the suite scripts, TAP 13
# without YAML: written by tests/lab/_tap.sh and tests/fuzz/run.sh, read by
# tests/run.  On stdout:
#
#   1..3                      the plan, first: 3 results follow
#   ok 1 - NAME
#   not ok 2 - NAME
#   # reason                  right after a "not ok": why it failed
#   ok 3 - NAME # SKIP reason
#
# or "1..0 # SKIP reason" when nothing could run.  Any other line, other
# "#" lines included, is not a result; diagnostics belong on stderr.

# tap_plan N [SKIP-REASON]
tap_plan() {
	if [ -n "${2:-}" ]; then
		_tap_line "1..$1 # SKIP $2"
	else
		_tap_line "1..$1"
	fi
}

# tap_result NUMBER NAME ok|fail|skip [REASON]
tap_result() {
	case $3 in
	ok) _tap_line "ok $1 - $2" ;;
	skip) _tap_line "ok $1 - $2 # SKIP ${4:-skipped}" ;;
	*)
		_tap_line "not ok $1 - $2"
		_tap_line "# ${4:-failed}"
		;;
	esac
}

# One line, whatever newlines the text has.
_tap_line() { printf '%s\n' "${*//$'\n'/ }"; }

# tap_read FILE: the results in FILE, one a line, fields separated by tabs:
#   plan N [REASON]           (REASON: why nothing runs, for 1..0 # SKIP)
#   ok|fail|skip NAME [REASON]
tap_read() {
	awk '
	function emit(kind, name, why) {
		gsub(/\t/, " ", name)
		gsub(/\t/, " ", why)
		printf "%s\t%s\t%s\n", kind, name, why
	}
	# A "not ok" waits for its reason on the next line.
	function flush() {
		if (pending != "")
			emit("fail", pending, "")
		pending = ""
	}
	/^1\.\.[0-9]+/ {
		flush()
		n = $0; sub(/^1\.\./, "", n); sub(/[^0-9].*/, "", n)
		why = ""; if (match($0, /# *SKIP */)) why = substr($0, RSTART + RLENGTH)
		emit("plan", n, why); next
	}
	/^ok [0-9]+ - / {
		flush()
		name = $0; sub(/^ok [0-9]+ - /, "", name)
		if (match(name, / # SKIP/)) {
			why = substr(name, RSTART + RLENGTH); sub(/^ +/, "", why)
			emit("skip", substr(name, 1, RSTART - 1), why)
		} else {
			emit("ok", name, "")
		}
		next
	}
	/^not ok [0-9]+ - / {
		flush()
		pending = $0; sub(/^not ok [0-9]+ - /, "", pending); next
	}
	/^# / && pending != "" { emit("fail", pending, substr($0, 3)); pending = ""; next }
	{ flush() }
	END { flush() }
	' "$1"
}
