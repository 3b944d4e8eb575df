#!/usr/bin/env bash
# Install the Debian packages xdp-vi needs to build, test and demo.
# Idempotent and quiet when everything is already there; needs root for apt.
set -euo pipefail

PKGS=(
	build-essential clang llvm gcc-multilib pkg-config
	libbpf-dev libxdp-dev xdp-tools bpftool libmnl-dev libelf-dev zlib1g-dev
	libpcap-dev libcriterion-dev
	iproute2 iputils-ping ethtool tcpdump sockperf iperf3 kmod util-linux
	python3 procps psmisc
	# libFuzzer runtime for clang 14 (make fuzz, tests/fuzz)
	libclang-rt-14-dev
	gnuplot-nox
	# Promela model checker (tests/spin: the stream protocol model)
	spin
	# libfabric provider (fabric/): headers, fi_info/fi_pingpong, Open MPI
	libfabric-dev libfabric-bin openmpi-bin libopenmpi-dev
	# a real memcached (the key-value cache suite and bench, and xvi-run's),
	# socat (unmodified UDP programs under xvi-run, tests/lab/preload.sh)
	memcached socat
	# TCP Server suite and bench: a web client, HTTP load generators
	curl httperf wrk
	# the TCP Server bench's second baseline: a TCP proxy on the front node
	haproxy
	# a DNS server and its load generator (xvi-run's dnsperf row, tests/lab/preload.sh)
	dnsmasq-base dnsperf
	# a router that drops packets (the loss-recovery bench, tests/bench/lossy.sh)
	nftables
	# FTP over xvi-run --streams (tests/lab/preload_ftp.sh, tests/bench/ftp.sh):
	# a single-process FTP server and a client
	python3-pyftpdlib lftp
	# a forking FTP server (xvi-run --streams across fork, tests/lab/preload_ftp.sh)
	vsftpd
)

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages: ${missing[*]}" >&2
	echo "install-deps: run as root (or: sudo apt-get install ${missing[*]})" >&2
	exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive

# memcached, haproxy and vsftpd come with system services; the tests run
# their own copies inside lab namespaces, so none of them may start on
# the host (vsftpd would listen on port 21 of every address).  Debian's
# policy-rc.d hook (exit 101: action forbidden) keeps the package
# scripts from starting them; an existing hook is put back afterwards.
POLICY=/usr/sbin/policy-rc.d
SERVICES=(memcached haproxy vsftpd)
saved=""
if [ -e "$POLICY" ]; then
	saved=$(mktemp)
	cp -p "$POLICY" "$saved"
fi
restore_policy() {
	if [ -n "$saved" ]; then
		mv -f "$saved" "$POLICY"
	else
		rm -f "$POLICY"
	fi
}
trap restore_policy EXIT
printf '#!/bin/sh\nexit 101\n' >"$POLICY"
chmod 755 "$POLICY"

apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"

# Nor at the next boot, where systemd runs: only the services of packages
# installed just now, so a service the host already ran stays as it was.
if [ -d /run/systemd/system ]; then
	for svc in "${SERVICES[@]}"; do
		[[ " ${missing[*]} " == *" $svc "* ]] || continue
		systemctl disable --quiet "$svc.service" 2>/dev/null &&
			echo "install-deps: $svc installed for the tests; its service is left disabled"
	done
fi
