#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# tests/bench/streamzc.sh: stream bandwidth with the copying calls
# (send/recv) against the in-place ones (send_alloc/send_commit at the
# client, recv_zc/recv_release at the server: xvi-perf --zc), against raw
# xvi datagrams of 1472 B and against kernel TCP (the same xvi-perf with
# --stream --kernel), in one run on a two-node lab.  A benchmark, not a
# test: it prints a table and never fails on numbers.
#
#   node a: xvi-perf throughput            node b: xvi-perf server
#           --iface xv0 --queue 0  ------>          datagrams,    queue 0
#           --stream --queue 1     ------>          --stream,     queue 1
#           --stream --zc --queue 2 ----->          --stream --zc, queue 2
#           --stream --kernel      ------>          --stream --kernel (TCP)
#
# One endpoint per queue and process (one UMEM per queue), so the four
# servers live through the whole run; clients are pinned to CPU 0, servers
# to CPU 1, and kernel sockets transmit on queue 0 (XPS), as in
# tests/bench/run.  The variants alternate (raw, copy, zc, tcp, raw, ...)
# for ROUNDS rounds and sizes 1472 and 65536 (stream sends; raw datagrams
# are 1472 B at MTU 1500); the table shows the median (min-max) of the
# delivered bandwidth (the server's count when the client's last question
# is answered) and of the machine's busy CPU per delivered byte, twice:
# over the whole client process (the harness's /proc/stat reading, set-up
# and close included) and over the data phase only (the stream client's
# own /proc/stat reading from its first send to the delivery answer, as
# tests/bench/run's stream rows; datagrams have none).  The ratios against
# kernel TCP pair the runs of one round (median of the per-round ratios).
# Every attach honours XVI_NAPI (XVI_NAPI=thread: docs/DATAPATH.md), and
# kernel TCP crosses the same veths, so both sides see the same NAPI mode.
#
# usage: B=build tests/bench/streamzc.sh [-t SECS] [-r ROUNDS]

set -u -o pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${B:-build}
case $B in /*) BIN=$B/bin ;; *) BIN=$ROOT/$B/bin ;; esac
SEC=2 ROUNDS=3
usage() { grep '^# usage:' "$0" | cut -c3- >&2; exit 2; }
while getopts t:r: o; do
	case $o in t) SEC=$OPTARG ;; r) ROUNDS=$OPTARG ;; *) usage ;; esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || usage
die() { echo "streamzc.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (a lab)"
[ -x "$BIN/xdp-vi" ] && [ -x "$BIN/xvi-perf" ] || die "xdp-vi or xvi-perf missing in $BIN: make B=$B"
. "$ROOT/netns-lab/lib.sh"
L=xbz$$ TMP=$(mktemp -d /tmp/xvi-bench-zc.XXXXXX)
lab_at_exit "rm -rf '$TMP'"
# Three queues: one endpoint per queue and process.
lab_up --name "$L" --queues 3 >&2 || die "lab_up failed"
# The servers live through all the runs: 7 a round, each SEC plus set-up.
LIFE=$(awk -v r="$ROUNDS" -v s="$SEC" 'BEGIN { printf "%d", r * 7 * (s + 4) + 30 }')
x() { local n=$1; shift; lab_exec --name "$L" -T $((LIFE + 10)) "$n" -- "$@"; }
for n in a b; do
	# As tests/bench/run: kernel sockets transmit on queue 0 (XPS).
	x "$n" sh -c 'echo 3 >/sys/class/net/xv0/queues/tx-0/xps_cpus &&
		echo 0 >/sys/class/net/xv0/queues/tx-1/xps_cpus &&
		echo 0 >/sys/class/net/xv0/queues/tx-2/xps_cpus' || die "XPS on node $n failed"
	x "$n" "$BIN/xdp-vi" attach xv0 >/dev/null || die "xdp-vi attach on node $n failed"
done
PIN_A=() PIN_B=()
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
	PIN_A=(taskset -c 0) PIN_B=(taskset -c 1)
fi
WIN=(--window 128)	# as tests/bench/run: bulk needs more than w = 32 in flight

busy() {	# busy CPU seconds of the machine so far
	awk -v hz="$(getconf CLK_TCK)" '$1 == "cpu" {
		printf "%.3f\n", ($2 + $3 + $4 + $7 + $8 + $9) / hz }' /proc/stat
}

server() {	# PORT OPTS...: a server for the whole run
	local port=$1
	shift
	x b "${PIN_B[@]}" "$BIN/xvi-perf" server -i 198.18.0.2 -p "$port" -t "$LIFE" \
		"$@" >/dev/null 2>"$TMP/srv-$port.err" &
	for _ in $(seq 50); do
		grep -q listening "$TMP/srv-$port.err" 2>/dev/null && return 0
		sleep 0.1
	done
	die "server on port $port did not start: $(head -c 300 "$TMP/srv-$port.err")"
}
server 11171 --iface xv0 --queue 0
server 11172 --iface xv0 --queue 1 --stream "${WIN[@]}"
server 11173 --iface xv0 --queue 2 --stream --zc "${WIN[@]}"
server 11174 --stream --kernel

# VARIANT SIZE ROUND: one run, a line "variant size mbit cpu_ns_per_byte
# data_phase_cpu_ns_per_byte round" (0: none)
run_one() {
	local v=$1 m=$2 r=$3 b0 b1 o=()
	case $v in
	raw) o=(-p 11171 --iface xv0 --queue 0) ;;
	copy) o=(-p 11172 --iface xv0 --queue 1 --stream "${WIN[@]}") ;;
	zc) o=(-p 11173 --iface xv0 --queue 2 --stream --zc "${WIN[@]}") ;;
	tcp) o=(-p 11174 --stream --kernel) ;;
	esac
	b0=$(busy)
	x a "${PIN_A[@]}" "$BIN/xvi-perf" tp -i 198.18.0.2 "${o[@]}" -m "$m" \
		-t "$SEC" --json >"$TMP/cli.json" 2>"$TMP/cli.err"
	b1=$(busy)
	python3 - "$TMP/cli.json" "$v" "$m" "$b0" "$b1" "$r" <<'PY' || echo "$v $m 0 0 0 $r"
import json, sys
j = json.loads(open(sys.argv[1]).readline())
v, m, b0, b1 = sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5])
# streams: delivered when the last question is answered; datagrams: the
# server's count over the client's sending time
mbit = j.get("delivered_mbit_per_sec") or \
    (j.get("delivered_rate") or 0.0) * j.get("msg_size", 0) * 8 / 1e6
secs = j.get("delivery_seconds") or j.get("seconds") or 1.0
byts = mbit * 1e6 / 8 * secs
# the stream client's own reading: first send to the delivery answer
dbyts = j.get("server_received_bytes") or 0
dcpu = j.get("machine_cpu_s") or 0
print(v, m, "%.1f" % mbit, "%.3f" % ((b1 - b0) * 1e9 / byts if byts else 0),
      "%.3f" % (dcpu * 1e9 / dbyts if dbyts and dcpu else 0), sys.argv[6])
PY
	[ -s "$TMP/cli.err" ] && grep -v '^$' "$TMP/cli.err" | head -3 | sed "s/^/streamzc.sh: $v $m: /" >&2
}

for r in $(seq "$ROUNDS"); do
	for m in 1472 65536; do
		[ "$m" = 1472 ] && run_one raw 1472 "$r" >>"$TMP/rows"
		run_one copy "$m" "$r" >>"$TMP/rows"
		run_one zc "$m" "$r" >>"$TMP/rows"
		run_one tcp "$m" "$r" >>"$TMP/rows"
	done
	echo "streamzc.sh: round $r of $ROUNDS done" >&2
done

python3 - "$TMP/rows" "$ROUNDS" "$SEC" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
def ok(r):
    return float(r[2]) > 0
def vals(v, m, k):
    return [float(r[k]) for r in rows if r[0] == v and r[1] == m and ok(r) and float(r[k]) > 0]
def cell(xs, f="%.0f"):
    if not xs:
        return "-"
    return (f + " (" + f + "-" + f + ")") % (statistics.median(xs), min(xs), max(xs))
def paired(v, m, k):	# per-round ratios of v against kernel TCP
    qs = []
    for rnd in sorted({r[5] for r in rows}):
        a = [float(r[k]) for r in rows if r[:2] == [v, m] and r[5] == rnd and ok(r)]
        t = [float(r[k]) for r in rows if r[:2] == ["tcp", m] and r[5] == rnd and ok(r)]
        if a and t and a[0] > 0 and t[0] > 0:
            qs.append(a[0] / t[0])
    return qs
raw = vals("raw", "1472", 2)
rawm = statistics.median(raw) if raw else 0
print("Stream bandwidth, copying calls against in-place calls (xvi-perf --zc) and kernel "
      "TCP, %s rounds of %s s, median (min-max)" % (sys.argv[2], sys.argv[3]))
print()
print("| send size | variant | delivered Mbit/s | x raw datagrams 1472 B | x kernel TCP "
      "| machine CPU ns/byte | data phase ns/byte | data phase ns/byte x kernel TCP |")
print("|---|---|---|---|---|---|---|---|")
print("| 1472 | raw xvi datagrams | %s | 1.00 | - | %s | - | - |"
      % (cell(raw), cell(vals("raw", "1472", 3), "%.2f")))
names = (("copy", "stream send/recv"), ("zc", "stream send_alloc/recv_zc"),
         ("tcp", "kernel TCP"))
for m in ("1472", "65536"):
    for v, name in names:
        b = vals(v, m, 2)
        ratio = "%.2f" % (statistics.median(b) / rawm) if b and rawm else "-"
        tb = "1.00" if v == "tcp" else cell(paired(v, m, 2), "%.2f")
        tc = "1.00" if v == "tcp" else cell(paired(v, m, 4), "%.2f")
        print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            m, name, cell(b), ratio, tb, cell(vals(v, m, 3), "%.2f"),
            cell(vals(v, m, 4), "%.2f"), tc))
print()
print("Ratios against kernel TCP: median (min-max) of the per-round ratios, each xvi run "
      "against the kernel TCP run of its round and size.")
PY
