#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# tests/bench/router.sh: the cost per forwarded frame of the datapath's IP
# router against the kernel's forwarding of the same frames, on one routed
# three-node lab (a 198.18.1.1 -- m -- 198.18.2.2 b, tests/bench/routed_lab.sh).
# With -6 the frames are IPv6 (a 2001:2:1::1 -- m -- 2001:2:2::2 b).
# A benchmark, not a test: it prints a table and never fails on numbers.
#
#   node a: no sender process.  BPF_PROG_RUN in live-frames mode
#           (tests/bench/xdp_live_run.py) runs fwd_gen (tests/lab/bpf/) on
#           a's veth REPEAT times: each repetition leaves as XDP_TX and
#           arrives at m as a native XDP frame
#   node m: the datapath on both veths, routing in XDP (xdp-vi router
#           enable) or passing to its kernel, which forwards (disable)
#   node b: fwd_sink (tests/lab/bpf/) counts and drops every arrival in XDP
#
# All of it runs inside the one BPF_PROG_RUN call, pinned to one CPU: veth
# delivers in NAPI on the sending CPU, and the kernel runs the pending NAPI
# polls (m's, then b's) when each batch of 64 repetitions ends, inside the
# call's timed section (docs/KERNEL.md, fact 51).  The kernel's average per repetition ("chain") is
# so the cost of the whole chain on one CPU: make the frame, a's transmit,
# m's receive and forwarding, b's receive and drop.  A floor row measures
# the chain without forwarding: fwd_sink on m's ingress veth instead of the
# datapath (make the frame, a's transmit, m's receive, drop).  chain minus
# floor is m's forwarding with its delivery to b, per frame; 1e9 / chain is
# the frames per second one CPU sustains through the whole chain.
#
# Timing runs have BPF run-time statistics off (they cost two clock reads
# per program run); a second run per variant turns them on to read the
# average run time of m's XDP program (xvi_demux on the ingress veth),
# which is part of the chain.  The variants alternate (xdp, kernel, ...)
# for ROUNDS rounds; the floor is measured ROUNDS times before them.  The
# table shows medians (min-max).  Each run checks that b counted every
# frame, and shows who forwarded them: rt_forwarded (XDP) and m's kernel
# ForwDatagrams.
#
# usage: B=build tests/bench/router.sh [-6] [-n REPEAT] [-m BYTES] [-r ROUNDS] [-c CPU]

set -u -o pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${B:-build}
case $B in /*) BB=$B ;; *) BB=$ROOT/$B ;; esac
BIN=$BB/bin
N=2000000 MSG=64 ROUNDS=3 CPU=1 FAM=4
[ "${1:-}" = -6 ] && { FAM=6; shift; }
while [ $# -ge 2 ]; do
	case $1 in -n) N=$2 ;; -m) MSG=$2 ;; -r) ROUNDS=$2 ;; -c) CPU=$2 ;; *) break ;; esac
	shift 2
done
[ $# -eq 0 ] || { grep '^# usage:' "$0" | cut -c3- >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "router.sh: needs root (lab)" >&2; exit 1; }
GEN=fwd_gen HDRS=34
[ $FAM = 6 ] && HDRS=54
for f in "$BIN/xdp-vi" "$BIN/xvi-relay" "$BB/tests/$GEN.bpf.o" "$BB/tests/fwd_sink.bpf.o"; do
	[ -r "$f" ] || { echo "router.sh: $f missing: make B=$B" >&2; exit 1; }
done
command -v bpftool >/dev/null || { echo "router.sh: needs bpftool" >&2; exit 1; }
[ "$MSG" -ge $HDRS ] ||
	{ echo "router.sh: -m must be $HDRS or more (the header copy)" >&2; exit 2; }
. "$ROOT/netns-lab/lib.sh"
export XVI_RELAY=$BIN/xvi-relay
TMP=$(mktemp -d /tmp/xvi-bench-rt.XXXXXX)
lab_at_exit "rm -rf '$TMP'"
L=xbr$$
. "$ROOT/tests/bench/routed_lab.sh"
routed_lab_up "$L" || exit 1
[ $FAM = 4 ] || routed_lab_ipv6 "$L" || exit 1
x() { local n=$1; shift; lab_exec --name "$L" -T 120 "$n" -- "$@"; }
die() { echo "router.sh: $*" >&2; exit 1; }

FS=$LAB_STATE/$L/router-bpffs
mkdir -p "$FS" && mount -t bpf bpf "$FS" || die "cannot mount a bpffs on $FS"
lab_at_exit "umount '$FS' 2>/dev/null"
bpftool prog load "$BB/tests/$GEN.bpf.o" "$FS/$GEN" || die "cannot load $GEN"
gen=$(bpftool prog show pinned "$FS/$GEN" --json |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])') || die "no $GEN id"

xdp_prog() {	# NODE IFACE: the id of the XDP program attached there
	x "$1" ip -d link show dev "$2" | grep -oE 'prog/xdp id [0-9]+' | awk '{ print $3 }'
}
sink_on() {	# NODE IFACE: attach fwd_sink there; prints its counter map's id
	local p
	x "$1" ip link set dev "$2" xdpdrv obj "$BB/tests/fwd_sink.bpf.o" sec xdp ||
		die "cannot attach fwd_sink on $1 $2"
	p=$(xdp_prog "$1" "$2")
	bpftool prog show id "$p" --json | python3 -c 'import json,sys
print(json.load(sys.stdin)["map_ids"][0])'
}
sunk() {	# MAP-ID: the sink's count so far, summed over CPUs
	bpftool map dump id "$1" --json | python3 -c 'import json,sys
d = json.load(sys.stdin)[0]
v = d.get("values") or d["formatted"]["values"]
val = lambda x: int.from_bytes(bytes(int(b, 16) for b in x), "little") if isinstance(x, list) \
    else int(x)
print(sum(val(c["value"]) for c in v))'
}
kfwd() { routed_lab_kfwd "$L"; }
rtfwd() {
	x m "$BIN/xdp-vi" router status xva xvb --json |
		python3 -c 'import json,sys; print(sum(i["rt_forwarded"] for i in json.load(sys.stdin)))'
}
prog_stats() {	# PROG-ID: "run_time_ns run_cnt" so far (0 0 while never enabled)
	bpftool prog show id "$1" --json | python3 -c 'import json,sys
d = json.load(sys.stdin); print(d.get("run_time_ns", 0), d.get("run_cnt", 0))'
}
stats_pid=
stats_on() {	# BPF run-time statistics on while a process holds the fd
	rm -f "$TMP/stats.on"
	python3 - "$TMP/stats.on" <<'PY' &
import ctypes, signal, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
attr = ctypes.create_string_buffer(struct.pack("=I", 0), 8)	# BPF_STATS_RUN_TIME
fd = libc.syscall(321, 32, attr, 8)				# bpf(BPF_ENABLE_STATS)
if fd < 0:
    sys.exit("BPF_ENABLE_STATS failed: errno %d" % ctypes.get_errno())
open(sys.argv[1], "w").close()
signal.pause()
PY
	stats_pid=$!
	for _ in $(seq 100); do [ -e "$TMP/stats.on" ] && return 0; sleep 0.05; done
	die "could not turn BPF run-time statistics on"
}
stats_off() {
	[ -n "$stats_pid" ] && kill "$stats_pid" 2>/dev/null && wait "$stats_pid" 2>/dev/null
	stats_pid=
}
lab_at_exit 'stats_off'

amac=$(x a cat /sys/class/net/xv0/address) bmac=$(x b cat /sys/class/net/xv0/address)
mmac=$(x m cat /sys/class/net/xva/address)
aidx=$(x a cat /sys/class/net/xv0/ifindex)
# b drops everything, ARP replies too: m knows b's MAC for good.
x m ip neigh replace 198.18.2.2 lladdr "$bmac" dev xvb nud permanent || die "neighbour on m"
[ $FAM = 4 ] || x m ip -6 neigh replace 2001:2:2::2 lladdr "$bmac" dev xvb nud permanent ||
	die "IPv6 neighbour on m"
SINK=$(sink_on b xv0) || exit 1

# The frame a -> b: UDP to the discard port, full checksums, its payload
# starting with a copy of its own Ethernet and IP headers (fwd_gen).
python3 - "$TMP/frame.bin" "$amac" "$mmac" "$MSG" "$FAM" <<'PY' || die "frame"
import socket, struct, sys
out, src, dst, msg = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff
mac = lambda m: bytes(int(x, 16) for x in m.split(":"))
if sys.argv[5] == "6":
    sa = socket.inet_pton(socket.AF_INET6, "2001:2:1::1")
    da = socket.inet_pton(socket.AF_INET6, "2001:2:2::2")
    ip = struct.pack("!IHBB16s16s", 6 << 28, 8 + msg, 17, 64, sa, da)
    eth = mac(dst) + mac(src) + b"\x86\xdd"
    payload = (eth + ip).ljust(msg, b"\0")
    udp = bytearray(struct.pack("!HHHH", 40000, 9, 8 + msg, 0))
    c = csum(sa + da + struct.pack("!IxxxB", 8 + msg, 17) + bytes(udp) + payload) or 0xffff
    struct.pack_into("!H", udp, 6, c)
    open(out, "wb").write(eth + ip + bytes(udp) + payload)
    sys.exit(0)
sa, da = socket.inet_aton("198.18.1.1"), socket.inet_aton("198.18.2.2")
ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + 8 + msg, 1, 0, 64, 17, 0, sa, da))
struct.pack_into("!H", ip, 10, csum(bytes(ip)))
eth = mac(dst) + mac(src) + b"\x08\x00"
payload = (eth + bytes(ip)).ljust(msg, b"\0")
udp = bytearray(struct.pack("!HHHH", 40000, 9, 8 + msg, 0))
c = csum(sa + da + struct.pack("!BBH", 0, 17, 8 + msg) + bytes(udp) + payload) or 0xffff
struct.pack_into("!H", udp, 6, c)
open(out, "wb").write(eth + bytes(ip) + bytes(udp) + payload)
PY

live() {	# run the chain once: prints the kernel's ns per repetition
	local out
	out=$(x a taskset -c "$CPU" python3 "$ROOT/tests/bench/xdp_live_run.py" "$gen" \
		"$TMP/frame.bin" "$aidx" "$N" 2>&1)
	sed -n 's/^ns_per_frame \([0-9]*\)$/\1/p' <<<"$out" | grep . ||
		die "live frames on a: $out"
}

run_one() {	# VARIANT: one timing run and one with statistics, one line
	# "variant chain_ns sunk xdp_fwd kernel_fwd prog_ns"
	local v=$1 s0 s1 k0 k1 r0=0 r1=0 ns st0 st1 prog=
	case $v in
	xdp) x m "$BIN/xdp-vi" router enable xva xvb >/dev/null || die "router enable" ;;
	kernel) x m "$BIN/xdp-vi" router disable xva xvb >/dev/null || die "router disable" ;;
	esac
	[ "$v" = floor ] || prog=$(xdp_prog m xva)
	s0=$(sunk "$SINK") k0=$(kfwd)
	[ "$v" = floor ] || r0=$(rtfwd)
	ns=$(live) || exit 1
	s1=$(sunk "$SINK") k1=$(kfwd)
	[ "$v" = floor ] || r1=$(rtfwd)
	if [ -n "$prog" ]; then
		stats_on
		st0=$(prog_stats "$prog")
		live >/dev/null || exit 1
		st1=$(prog_stats "$prog")
		stats_off
	else
		st0="0 0" st1="0 1"
	fi
	awk -v v="$v" -v ns="$ns" -v s=$((s1 - s0)) -v xf=$((r1 - r0)) -v kf=$((k1 - k0)) \
		-v a="$st0" -v b="$st1" 'BEGIN { split(a, p); split(b, q)
		printf "%s %d %d %d %d %.1f\n", v, ns, s, xf, kf,
			(q[2] > p[2] ? (q[1] - p[1]) / (q[2] - p[2]) : 0) }'
}

# The floor: fwd_sink on m's ingress veth, counted there.
SINK_B=$SINK
SINK=$(sink_on m xva) || exit 1
for r in $(seq "$ROUNDS"); do run_one floor | tee -a "$TMP/rows" >&2; done
x m ip link set dev xva xdpdrv off || die "detach fwd_sink from m"
SINK=$SINK_B
for i in xva xvb; do x m "$BIN/xdp-vi" attach "$i" >/dev/null || die "attach $i on m"; done
for r in $(seq "$ROUNDS"); do
	for v in xdp kernel; do run_one "$v" | tee -a "$TMP/rows" >&2; done
done
x m "$BIN/xdp-vi" router disable xva xvb >/dev/null

python3 - "$TMP/rows" "$MSG" "$N" "$ROUNDS" "IPv$FAM" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
n = int(sys.argv[3])
def col(v, i):
    return [float(r[i]) for r in rows if r[0] == v]
def med(v, i):
    xs = col(v, i)
    return statistics.median(xs) if xs else float("nan")
def fmt(xs, f):
    return "%s (%s-%s)" % (f % statistics.median(xs), f % min(xs), f % max(xs)) if xs else "-"
floor = med("floor", 1)
print("Router a -> m -> b, %s, %s-byte UDP payloads, live frames from a (XDP_TX), XDP drop at b,"
      % (sys.argv[5], sys.argv[2]))
print("one CPU, %d frames a run, %s rounds; medians (min-max)" % (n, sys.argv[4]))
print("| m | chain ns/frame | m's forwarding ns/frame | xvi_demux ns/run | Mframes/s, one CPU "
      "| by XDP / by m's kernel, a run |")
print("|---|---|---|---|---|---|")
names = (("floor", "floor: drops at m"), ("xdp", "xdp-vi router (XDP)"),
         ("kernel", "kernel forwarding"))
for v, name in names:
    c = col(v, 1)
    if not c:
        continue
    fwd = fmt([x - floor for x in c], "%.0f") if v != "floor" else "-"
    prog = fmt(col(v, 5), "%.0f") if v != "floor" else "-"
    who = "%.0f / %.0f" % (med(v, 3), med(v, 4)) if v != "floor" else "-"
    print("| %s | %s | %s | %s | %s | %s |" % (name, fmt(c, "%.0f"), fwd, prog,
          fmt([1e3 / x for x in c], "%.2f"), who))
x, k = med("xdp", 1), med("kernel", 1)
if x > 0 and k > 0:
    print("\nkernel / xdp, medians: chain %.2fx (frames per CPU-second through the chain),"
          " m's forwarding %.2fx" % (k / x, (k - floor) / (x - floor) if x > floor else 0))
# More than sent: other frames reached the sink during the run (m's own
# neighbour discovery, say); fewer: frames lost on the way.
lost = [r for r in rows if int(r[2]) < n]
extra = sum(int(r[2]) - n for r in rows if int(r[2]) > n)
if not lost:
    print("every run: all %d frames counted at the sink" % n +
          (" (and %d other frames in all)" % extra if extra else ""))
else:
    print("the sink counted fewer frames than sent in %d runs (e.g. %s of %d)"
          % (len(lost), lost[0][2], n))
# The path is not the one a row claims: XDP forwarded in a kernel row, or
# the reverse (the table is then not a comparison).
wrong = [r for r in rows if (r[0] == "xdp" and (int(r[3]) < n or int(r[4]) > n // 100)) or
         (r[0] == "kernel" and (int(r[3]) > 0 or int(r[4]) < n))]
if wrong:
    sys.exit("router.sh: forwarded by the wrong path in %d runs, e.g. %s: by XDP %s, "
             "by m's kernel %s" % (len(wrong), wrong[0][0], wrong[0][3], wrong[0][4]))
PY
