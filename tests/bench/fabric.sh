#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# tests/bench/fabric.sh: libfabric over xvi against libfabric's own udp and
# tcp providers, and an MPI job over xvi against Open MPI's TCP transport,
# side by side on one two-node lab (datapath attached on both nodes, so the
# kernel providers pay for the XDP program too).  A benchmark, not a test:
# it prints tables and never fails on numbers.
#
#   fi_pingpong (libfabric-bin), server on b, client on a, -d xv0:
#     dgram  xvi | udp                        (datagrams, up to one MTU)
#     rdm    xvi;ofi_rxd | udp;ofi_rxd | tcp;ofi_rxm  (reliable, any size)
#   tests/mpi/mpi_check ping-pong (2 ranks, a and b): xvi;ofi_rxd | tcp BTL
#
# Small sizes give the latency (usec/xfer, fi_pingpong's half round trip),
# large ones the bandwidth (MB/s).  Variants alternate (A B C A B C ...)
# for ROUNDS rounds; each cell is the median of the rounds, min-max after
# it, and the ratio column is the other transport's median over xvi's
# (latency: > 1 means xvi is faster; bandwidth: < 1 means xvi is faster).
#
# usage: B=build tests/bench/fabric.sh [-r ROUNDS]

set -u -o pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${B:-build}
case $B in /*) ;; *) B=$ROOT/$B ;; esac
ROUNDS=3
[ "${1:-}" = -r ] && ROUNDS=$2
[ "$(id -u)" = 0 ] || { echo "fabric.sh: needs root (lab)" >&2; exit 1; }
for f in "$B/bin/xdp-vi" "$B/lib/libxvi-fi.so"; do
	[ -e "$f" ] || { echo "fabric.sh: $f missing: make B=$B" >&2; exit 1; }
done
command -v fi_pingpong >/dev/null || { echo "fabric.sh: fi_pingpong missing: make deps" >&2
	exit 1; }
. "$ROOT/netns-lab/lib.sh"
export FI_PROVIDER_PATH=$B/lib
TMP=$(mktemp -d /tmp/xvi-bench-fab.XXXXXX)
lab_at_exit "rm -rf '$TMP'"
L=xbf$$
lab_up --name "$L" >&2 || { echo "fabric.sh: lab_up failed" >&2; exit 1; }
x() { local n=$1; shift; lab_exec --name "$L" -T 120 "$n" -- "$@"; }
for n in a b; do x "$n" "$B/bin/xdp-vi" attach xv0 >&2 || exit 1; done

# fi_pingpong's row for one size: "bytes #sent #ack total time MB/s usec/xfer
# Mxfers/s"; prints "usec MB/s" or nothing.
pp() {	# PROV EP SIZE ITERS
	local out=$TMP/pp.out pid i
	x b fi_pingpong -p "$1" -e "$2" -d xv0 -S "$3" -I "$4" >/dev/null 2>&1 &
	pid=$!
	for i in $(seq 100); do
		[ -n "$(x b ss -H -tln 'sport = :47592' 2>/dev/null)" ] && break
		sleep 0.1
	done
	x a fi_pingpong -p "$1" -e "$2" -d xv0 -S "$3" -I "$4" 198.18.0.2 >"$out" 2>&1 ||
		pkill -P "$pid" 2>/dev/null
	wait "$pid"
	awk 'NF == 8 && $3 ~ /^=/ { print $7, $6 }' "$out"
}

iters() { if [ "$1" -le 4096 ]; then echo 2000; elif [ "$1" -le 65536 ]; then echo 300;
	else echo 30; fi; }

: >"$TMP/res"	# lines: KIND SIZE VARIANT usec MB/s
for r in $(seq "$ROUNDS"); do
	for s in 64 1024; do
		for p in xvi udp; do
			echo "dgram $s $p $(pp "$p" dgram "$s" "$(iters "$s")")" >>"$TMP/res"
		done
	done
	for s in 64 1024 65536 1048576; do
		for p in 'xvi;ofi_rxd' 'udp;ofi_rxd' 'tcp;ofi_rxm'; do
			echo "rdm $s $p $(pp "$p" rdm "$s" "$(iters "$s")")" >>"$TMP/res"
		done
	done
	if [ -x "$B/tests/mpi_check" ] && command -v mpirun >/dev/null; then
		for t in xvi tcp; do
			bash "$ROOT/tests/mpi/lab-mpirun" --name "$L" --transport "$t" \
				"$B/tests/mpi_check" 200 2>/dev/null |
				awk -v t="$t" '$1 == "pingpong" { print "mpi", $2, t, $4, $5 }' \
				>>"$TMP/res"
		done
	fi
	echo "fabric.sh: round $r of $ROUNDS done" >&2
done

python3 - "$TMP/res" <<'PY'
import sys, statistics as st
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) < 5:
        continue
    rows.setdefault((f[0], int(f[1])), {}).setdefault(f[2], []).append((float(f[3]), float(f[4])))
base = {"dgram": "xvi", "rdm": "xvi;ofi_rxd", "mpi": "xvi"}
def cell(v, i):
    xs = [p[i] for p in v]
    return st.median(xs), "%.2f (%.2f-%.2f)" % (st.median(xs), min(xs), max(xs))
for kind, title in (("dgram", "fi_pingpong -e dgram"), ("rdm", "fi_pingpong -e rdm"),
                    ("mpi", "mpi_check ping-pong, Open MPI, 2 ranks")):
    sizes = sorted(s for k, s in rows if k == kind)
    if not sizes:
        continue
    variants = [base[kind]] + sorted({v for s in sizes for v in rows[(kind, s)]} - {base[kind]})
    print("\n%s: median (min-max) of %s rounds; ratio = other / %s "
          "(usec: above 1, xvi is faster; MB/s: below 1, xvi is faster)" %
          (title, max(len(v) for s in sizes for v in rows[(kind, s)].values()), base[kind]))
    print()
    print("| size | metric | " + " | ".join(variants) + " | " +
          " | ".join("%s/%s" % (v, base[kind]) for v in variants[1:]) + " |")
    print("|---" * (2 + 2 * len(variants) - 1) + "|")
    for s in sizes:
        i = 0 if s <= 1024 else 1
        cells, meds = [], []
        for v in variants:
            got = rows[(kind, s)].get(v)
            if got:
                m, c = cell(got, i)
            else:
                m, c = None, "n/a"
            cells.append(c)
            meds.append(m)
        ratios = ["%.2f" % (m / meds[0]) if m and meds[0] else "n/a" for m in meds[1:]]
        print("| %d | %s | %s | %s |" % (s, "usec" if i == 0 else "MB/s", " | ".join(cells),
                                         " | ".join(ratios)))
PY
