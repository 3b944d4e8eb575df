// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xvi-run: run an unmodified program with its UDP sockets on xvi endpoints.
 * It only sets the environment libxvi-preload.so reads (XVI_RUN_*) and
 * LD_PRELOAD, then executes the program: the work is in preload/.
 */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "preflight.h"

#define PRELOAD_NAME "libxvi-preload.so"
#ifndef XVI_RUN_LIBDIR
#define XVI_RUN_LIBDIR "/usr/local/lib"
#endif

static void usage(FILE *f)
{
	fprintf(f,
		"usage: xvi-run [--iface IF] [-v] [--check] [--stats FILE] [--spin-us N] [--tx-batch N]\n"
		"               [--streams [--stream-timeout MS]] CMD [ARGS]\n"
		"Run CMD with its UDP sockets (IPv4, IPv6) on xvi endpoints (" PRELOAD_NAME ").\n"
		"  -i, --iface IF     put every UDP socket on IF (default: the route's or the\n"
		"                     bound address's interface)\n"
		"  -v, --verbose      log every socket: on xvi or on the kernel, and why\n"
		"  -c, --check        run CMD on kernel sockets, reporting which sockets\n"
		"                     would be accelerated (each endpoint is opened, then closed)\n"
		"  -s, --stats FILE   append each endpoint's counters to FILE when it closes\n"
		"      --spin-us N    poll/select/epoll spin on the rings before sleeping\n"
		"      --tx-batch N   ring the send doorbell once per N datagrams (and before\n"
		"                     every wait the preload sees); 1, the default, rings each\n"
		"                     (default 50, 0: sleep at once)\n"
		"      --streams      also AF_INET TCP sockets: xvi streams, kernel TCP as\n"
		"                     fallback (listeners take both)\n"
		"      --stream-timeout MS  how long connect() waits for an xvi stream\n"
		"                     before it falls back to TCP (default 300)\n"
		"The library is found next to xvi-run (../lib/" PRELOAD_NAME ") or at\n"
		"$XVI_RUN_PRELOAD.  See xvi-run(1) and docs/PRELOAD.md.\n");
}

/* ../lib/libxvi-preload.so from this executable, or $XVI_RUN_PRELOAD. */
static int find_preload(char *out, size_t len)
{
	const char *env = getenv("XVI_RUN_PRELOAD");
	char exe[PATH_MAX];
	ssize_t n;

	if (env && *env) {
		snprintf(out, len, "%s", env);
	} else {
		n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (n < 0) {
			fprintf(stderr, "xvi-run: cannot read /proc/self/exe: %s; set "
				"XVI_RUN_PRELOAD to the path of " PRELOAD_NAME "\n", strerror(errno));
			return -1;
		}
		exe[n] = '\0';
		snprintf(out, len, "%s/../lib/" PRELOAD_NAME, dirname(exe));
		/* Installed with another LIBDIR: where make install put it. */
		if (access(out, R_OK))
			snprintf(out, len, "%s/" PRELOAD_NAME, XVI_RUN_LIBDIR);
	}
	if (access(out, R_OK)) {
		fprintf(stderr, "xvi-run: %s: %s; build it (make) or set XVI_RUN_PRELOAD to "
			"the path of " PRELOAD_NAME "\n", out, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * --OPT ARG, a whole number from MIN to MAX, handed to the preload in the
 * environment variable ENV.  Nonzero (after saying why) if it is not one.
 */
static int set_uint_env(const char *opt, const char *arg, unsigned long min,
			unsigned long max, const char *unit, const char *env)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (!*arg || *end || errno || *arg == '-' || v < min || v > max) {
		fprintf(stderr, "xvi-run: --%s %s: want %s, %lu to %lu\n", opt, arg, unit,
			min, max);
		return -1;
	}
	setenv(env, arg, 1);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "iface", required_argument, NULL, 'i' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "check", no_argument, NULL, 'c' },
		{ "stats", required_argument, NULL, 's' },
		{ "spin-us", required_argument, NULL, 'S' },
		{ "tx-batch", required_argument, NULL, 'B' },
		{ "streams", no_argument, NULL, 'T' },
		{ "stream-timeout", required_argument, NULL, 'W' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char lib[PATH_MAX], *preload, *old;
	const char *iface = NULL;
	bool preflight = false;
	int c;

	while ((c = getopt_long(argc, argv, "+i:vcs:h", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			if (!*optarg || strlen(optarg) >= IF_NAMESIZE || !if_nametoindex(optarg)) {
				fprintf(stderr, "xvi-run: --iface %s: no such interface in this "
					"network namespace (see ip link)\n", optarg);
				return 2;
			}
			setenv("XVI_RUN_IFACE", optarg, 1);
			iface = optarg;
			break;
		case 'v':
			setenv("XVI_RUN_VERBOSE", "1", 1);
			preflight = true;
			break;
		case 'c':
			setenv("XVI_RUN_CHECK", "1", 1);
			preflight = true;
			break;
		case 's':
			setenv("XVI_RUN_STATS", optarg, 1);
			break;
		case 'S':
			if (set_uint_env("spin-us", optarg, 0, 1000000, "microseconds",
					 "XVI_RUN_SPIN_US"))
				return 2;
			break;
		case 'B':
			if (set_uint_env("tx-batch", optarg, 1, 2048, "datagrams per doorbell",
					 "XVI_RUN_TX_BATCH"))
				return 2;
			break;
		case 'T':
			setenv("XVI_RUN_STREAMS", "1", 1);
			break;
		case 'W':
			if (set_uint_env("stream-timeout", optarg, 1, 60000, "milliseconds",
					 "XVI_RUN_CONNECT_MS"))
				return 2;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "xvi-run: no command given\n");
		usage(stderr);
		return 2;
	}
	if (find_preload(lib, sizeof(lib)))
		return 2;
	if (preflight)
		xvi_run_preflight(iface);
	old = getenv("LD_PRELOAD");
	if (old && *old) {
		if (asprintf(&preload, "%s:%s", lib, old) < 0)
			return 2;
	} else {
		preload = lib;
	}
	setenv("LD_PRELOAD", preload, 1);
	execvp(argv[optind], &argv[optind]);
	fprintf(stderr, "xvi-run: cannot run %s: %s\n", argv[optind], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
