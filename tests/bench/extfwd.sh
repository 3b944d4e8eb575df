#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# tests/bench/extfwd.sh: what a handler's forward (xvi_ext_forward) costs
# per frame next to its other actions, by BPF_PROG_RUN of node b's
# attached datapath on one active message, one repetition per run (every
# run starts from the frame as built: tests/bench/prog_run_each.py), the
# median of 2,000 runs.  A benchmark, not a test: it prints a table and
# never fails on numbers.
#
#   node b: the datapath on xv0 (with a bpffs) and on xvf0, one end of a
#           veth pair of b's own, allowed as a forward target of xv0; an
#           endpoint (xvi-cat) on 198.18.0.2:7700 with the tests' ext_act
#           handler at index 3, which ends with the action arg[0] names
#
# The variants alternate in every round (deliver, reply, forward, forward
# refused, drop) for ROUNDS rounds; the table shows, per variant, the
# median (min-max) over the rounds of each round's median and the
# verdict.  BPF_PROG_RUN without live frames returns the verdict without
# carrying it out: a forward's transmit and a delivery's socket are not in
# these numbers, only the datapath's and the handler's programs.
#
# usage: B=build tests/bench/extfwd.sh [-r ROUNDS]

set -u -o pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${B:-build}
case $B in /*) BB=$B ;; *) BB=$ROOT/$B ;; esac
ROUNDS=3 PORT=7700
while [ $# -ge 2 ]; do
	case $1 in -r) ROUNDS=$2 ;; *) break ;; esac
	shift 2
done
[ $# -eq 0 ] || { grep '^# usage:' "$0" | cut -c3- >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "extfwd.sh: needs root (lab)" >&2; exit 1; }
for b in "$BB/bin/xdp-vi" "$BB/bin/xvi-cat" "$BB/tests/ext_act.bpf.o"; do
	[ -e "$b" ] || { echo "extfwd.sh: $b missing: make B=$B" >&2; exit 1; }
done
. "$ROOT/netns-lab/lib.sh"
TMP=$(mktemp -d /tmp/xvi-bench-ef.XXXXXX)
lab_at_exit "rm -rf '$TMP'"
L=xbf$$
lab_up --name "$L" >&2 || { echo "extfwd.sh: lab_up failed" >&2; exit 1; }
x() { local n=$1; shift; lab_exec --name "$L" -T 120 "$n" -- "$@"; }
die() { echo "extfwd.sh: $*" >&2; exit 1; }
FS=$TMP/bpffs
mkdir -p "$FS" && mount -t bpf bpf "$FS" || die "cannot mount a bpffs on $FS"
lab_at_exit "umount '$FS'"
xb() { x b "$BB/bin/xdp-vi" --bpffs "$FS" "$@"; }

x b ip link add xvf0 type veth peer name xvf1 &&
	x b ip link set xvf0 up && x b ip link set xvf1 up || die "no veth pair on b"
xb attach xv0 >/dev/null && xb attach xvf0 >/dev/null || die "attach on b"
xb ext forward xv0 xvf0 >/dev/null || die "ext forward xv0 xvf0"
x b "$BB/bin/xvi-cat" -u --iface xv0 -l 198.18.0.2 "$PORT" -w 600 >/dev/null 2>&1 &
for _ in $(seq 100); do
	xb status --json 2>/dev/null | grep -q "\"port\": *$PORT" && break
	sleep 0.1
done
xb ext load xv0 "$BB/tests/ext_act.bpf.o" --endpoint "198.18.0.2:$PORT" --handler 3 \
	>/dev/null || die "ext load"
prog=$(x b ip -d link show dev xv0 | grep -oE 'prog/xdp id [0-9]+' | awk '{ print $3 }')
[ -n "$prog" ] || die "no XDP program on b's xv0"
fwd_if=$(x b cat /sys/class/net/xvf0/ifindex)

# One frame per variant, a -> b's endpoint: Ethernet/IPv4/UDP, valid
# checksums, the active-message header (index 3, arg0 the action, arg1
# the target), 64 bytes after it.
python3 - "$ROOT/tests/lab/helpers" "$(x b cat /sys/class/net/xv0/address)" "$PORT" \
	"$fwd_if" "$TMP" <<'PY'
import socket, struct, sys
sys.path.insert(0, sys.argv[1])
from udp4_frame import udp4_frame, mac
dmac, port, fwd = mac(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
for name, act, to in (("deliver", 0, 0), ("reply", 1, 0), ("forward", 2, fwd),
                      ("forward_refused", 2, 1), ("drop", 4, 0)):
    p = struct.pack("!IBBHII", 0x5856414D, 1, 0, 3, act, to) + bytes(64)
    f = udp4_frame(dmac, mac("02:00:00:00:00:01"), socket.inet_aton("198.18.0.1"),
                   socket.inet_aton("198.18.0.2"), 40000, port, p)
    open("%s/%s.bin" % (sys.argv[5], name), "wb").write(f)
PY
[ -s "$TMP/forward.bin" ] || die "no frames"

VARIANTS="deliver reply forward forward_refused drop"
for _ in $(seq "$ROUNDS"); do
	for v in $VARIANTS; do
		out=$(x b python3 "$ROOT/tests/bench/prog_run_each.py" "$prog" "$TMP/$v.bin" 2000 \
			2>&1)
		[[ $out == ns_median* ]] || die "BPF_PROG_RUN ($v): $(tr '\n' ' ' <<<"$out")"
		echo "$v $(cut -d' ' -f2,4 <<<"$out")" | tee -a "$TMP/rows" >&2
	done
done
xb ext list xv0 >"$TMP/list" 2>&1

python3 - "$TMP/rows" "$ROUNDS" "$VARIANTS" <<'PY'
import statistics, sys
verdicts = {1: "XDP_DROP", 2: "XDP_PASS", 3: "XDP_TX", 4: "XDP_REDIRECT"}
rows = {}
for line in open(sys.argv[1]):
    v, ns, verdict = line.split()
    rows.setdefault(v, []).append((int(ns), int(verdict)))
print("| handler action (ext_act) | ns per frame | verdict |")
print("|---|---|---|")
for v in sys.argv[3].split():
    ns = [r[0] for r in rows[v]]
    print("| %s | %d (%d-%d) | %s |" % (v.replace("_", " "), statistics.median(ns), min(ns),
                                        max(ns), verdicts.get(rows[v][-1][1], rows[v][-1][1])))
print("\nns per frame: median over %s rounds of each round's median of 2,000 runs "
      "(min-max)" % sys.argv[2])
PY
echo
grep -E "handler 3" "$TMP/list" | head -2
