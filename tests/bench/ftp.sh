#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# tests/bench/ftp.sh: SOVIA's Table 5 on this lab: FTP gets of a 13.8 MB
# and a 65.3 MB file from tmpfs to tmpfs, unmodified programs (Debian's
# pyftpdlib server on b, lftp on a, passive mode) over xvi streams
# (xvi-run --streams at both ends) against kernel TCP, on one two-node lab
# (datapath attached on both nodes throughout).  A benchmark, not a test:
# it prints a table and never fails on numbers.
#
#   variants: kernel (both plain), xvi (both under xvi-run --streams, the
#   preload's window 128) and xvi32 (the same, XVI_RUN_STREAM_WINDOW=32:
#   the library's and SOVIA's window)
#
# The variants alternate (kernel, xvi, xvi32, kernel, ...) for ROUNDS
# rounds, a fresh server per run.  A get is timed by difference, so that
# nothing but FTP runs in the timed span: per file, one lftp session gets
# it once and another gets it 1 + K times (K = 3), each session timed
# from start to end, and a get takes the difference over K (its PASV,
# the data connection, the transfer and the 226 reply; the sessions'
# start and login cancel out).  lftp's own `!date` inside the session
# would fork lftp between gets, which costs more under xvi-run (the
# preload relays the control stream across a fork: docs/PRELOAD.md) and
# is not FTP.  Every copy is checked byte-exact.  An xvi run whose
# connections did not all go over xvi streams (the client's --stats) is
# left out ("-"), never measured as if it were accelerated.  The table:
# median (min-max) Mbit/s per file and variant, and the ratio of the
# medians to kernel TCP's.
#
# usage: B=build tests/bench/ftp.sh [-r ROUNDS]

set -u -o pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${B:-build}
case $B in /*) BB=$B ;; *) BB=$ROOT/$B ;; esac
ROUNDS=3
while [ $# -ge 2 ]; do
	case $1 in -r) ROUNDS=$2 ;; *) break ;; esac
	shift 2
done
[ $# -eq 0 ] || { grep '^# usage:' "$0" | cut -c3- >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "ftp.sh: needs root (lab)" >&2; exit 1; }
XVIRUN=$BB/bin/xvi-run
FTPD_PY=/usr/bin/python3
for b in "$BB/bin/xdp-vi" "$XVIRUN" "$BB/lib/libxvi-preload.so"; do
	[ -e "$b" ] || { echo "ftp.sh: $b missing: make B=$B" >&2; exit 1; }
done
command -v lftp >/dev/null && "$FTPD_PY" -c 'import pyftpdlib' 2>/dev/null ||
	{ echo "ftp.sh: lftp or python3-pyftpdlib missing: bash scripts/install-deps.sh" >&2
	  exit 1; }
. "$ROOT/netns-lab/lib.sh"
TMP=$(mktemp -d /tmp/xvi-bench-ftp.XXXXXX)
# Both ends' files on tmpfs, as SOVIA's.
SHM=$(mktemp -d /dev/shm/xvi-bench-ftp.XXXXXX)
lab_at_exit "rm -rf '$TMP' '$SHM'"
L=xbf$$
lab_up --name "$L" >&2 || { echo "ftp.sh: lab_up failed" >&2; exit 1; }
x() { local n=$1 t=$2; shift 2; lab_exec --name "$L" -T "$t" "$n" -- "$@"; }
die() { echo "ftp.sh: $*" >&2; exit 1; }
for n in a b; do x "$n" 20 "$BB/bin/xdp-vi" attach xv0 >/dev/null || die "attach on $n"; done
x a 10 ping -c 1 -W 2 198.18.0.2 >/dev/null || die "no way from a to b"

FILES=(13800000 65300000)
mkdir -p "$SHM/srv" "$SHM/cli"
for f in "${FILES[@]}"; do head -c "$f" /dev/urandom >"$SHM/srv/f$f"; done
PORT=2200

# live PORT: an endpoint on b's PORT is published
live() {
	x b 20 "$BB/bin/xdp-vi" status --json >"$TMP/st.json" 2>/dev/null &&
		python3 "$ROOT/tests/lab/helpers/xvi_status.py" "$TMP/st.json" live "$1"
}

K=3

# prefix VARIANT: VARIANT's command prefix in PRE (none for kernel TCP).
prefix() {
	PRE=()
	[ "$1" = kernel ] && return
	[ "$1" = xvi32 ] && PRE=(env XVI_RUN_STREAM_WINDOW=32)
	PRE+=("$XVIRUN" --streams)
}

# session VARIANT PORT FILE N: one lftp session getting FILE N times;
# prints its duration in ns, nothing when it failed or a get was not over
# xvi (for an xvi variant) or differs.
session() {
	local v=$1 port=$2 f=$3 n=$4 i t0 t1
	prefix "$v"
	[ "$v" != kernel ] && PRE+=(--stats "$TMP/cli.stats")
	rm -f "$TMP/cli.stats" "$SHM"/cli/*
	{
		echo "set cmd:fail-exit yes; set net:max-retries 1; set net:timeout 30"
		echo "set ftp:ssl-allow no; set ftp:passive-mode on; set xfer:clobber yes"
		echo "open ftp://198.18.0.2:$port"
		for ((i = 0; i < n; i++)); do echo "get f$f -o $SHM/cli/f$f"; done
	} >"$TMP/script"
	t0=$(date +%s%N)
	if ! x a 120 "${PRE[@]}" lftp -f "$TMP/script" \
		>/dev/null 2>"$TMP/lftp.err"; then
		echo "ftp.sh: $v: lftp failed: $(tail -c 300 "$TMP/lftp.err")" >&2
		return
	fi
	t1=$(date +%s%N)
	if [ "$v" != kernel ] &&
		! grep -q "^streams .* connect_xvi=$((1 + n)) connect_tcp=0 " "$TMP/cli.stats"; then
		echo "ftp.sh: $v: not every connection over xvi: $(grep "connect_xvi=" \
			"$TMP/cli.stats")" >&2
		return
	fi
	cmp -s "$SHM/srv/f$f" "$SHM/cli/f$f" ||
		{ echo "ftp.sh: $v: f$f missing or differs" >&2; return; }
	echo $((t1 - t0))
}

# ftprun VARIANT PORT: one server, and per file the two sessions; prints
# "VARIANT SIZE MBITS" per file, MBITS "-" when not measured.
ftprun() {
	local v=$1 port=$2 f d1 dk
	prefix "$v"
	# shellcheck disable=SC2016 # expanded by the inner shell
	x b 300 sh -c 'echo $$ >"$0"; exec "$@"' "$TMP/srv.pid" "${PRE[@]}" \
		"$FTPD_PY" -m pyftpdlib -i 198.18.0.2 -p "$port" -d "$SHM/srv" \
		</dev/null >/dev/null 2>"$TMP/srv-$port.err" &
	local w=$!
	for _ in $(seq 100); do
		if [ "$v" != kernel ]; then
			live "$port" && break
		else
			x b 10 ss -H -tln "sport = :$port" | grep -q . && break
		fi
		sleep 0.1
	done
	for f in "${FILES[@]}"; do
		d1=$(session "$v" "$port" "$f" 1)
		dk=$(session "$v" "$port" "$f" $((1 + K)))
		if [ -n "$d1" ] && [ -n "$dk" ] && [ "$dk" -gt "$d1" ]; then
			echo "$v $f $(awk -v b="$f" -v d=$(((dk - d1) / K)) \
				'BEGIN { printf "%.0f", b * 8 * 1000 / d }')"
		else
			echo "$v $f -"
		fi
	done
	kill -INT "$(cat "$TMP/srv.pid" 2>/dev/null)" 2>/dev/null
	wait "$w" 2>/dev/null
	for _ in $(seq 100); do
		[ "$v" = kernel ] || ! live "$port" || { sleep 0.1; continue; }
		break
	done
}

for ((i = 0; i < ROUNDS; i++)); do
	for v in kernel xvi xvi32; do
		port=$((PORT++))
		ftprun "$v" "$port" | tee -a "$TMP/rows" | sed "s/^/[$(date -u +%T)] /" >&2
	done
done

python3 - "$TMP/rows" "$ROUNDS" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
vs = ["kernel", "xvi", "xvi32"]
names = {"kernel": "kernel TCP", "xvi": "xvi, window 128", "xvi32": "xvi, window 32"}
print("FTP get, tmpfs to tmpfs: pyftpdlib on b, lftp on a (passive mode), a get timed as "
      "the difference of a 1-get and a 4-get session over 3, %s rounds "
      "alternating; median (min-max) Mbit/s; ratio = xvi median / kernel median" % sys.argv[2])
print()
print("| file | " + " | ".join(names[v] for v in vs) + " | xvi/kernel | xvi32/kernel |")
print("|---|" + "---|" * (len(vs) + 2))
for size in sorted({int(r[1]) for r in rows}):
    med = {}
    cells = []
    for v in vs:
        xs = [float(r[2]) for r in rows if r[0] == v and int(r[1]) == size and r[2] != "-"]
        left = sum(1 for r in rows if r[0] == v and int(r[1]) == size and r[2] == "-")
        if xs:
            med[v] = statistics.median(xs)
            c = "%.0f (%.0f-%.0f)" % (med[v], min(xs), max(xs))
        else:
            c = "-"
        if left:
            c += " [%d left out]" % left
        cells.append(c)
    ratio = lambda v: ("%.2f" % (med[v] / med["kernel"])) if v in med and med.get("kernel") else "-"
    print("| %.1f MB | %s | %s | %s |" % (size / 1e6, " | ".join(cells), ratio("xvi"),
                                         ratio("xvi32")))
EOF
