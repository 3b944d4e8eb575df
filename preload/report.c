// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Loud fallback: every UDP socket left on the kernel is logged with its
 * reason (every time at -v, once per reason otherwise) and counted; the
 * counts and each endpoint's counters are reported at exit.  Nothing here
 * runs per datagram.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include "preload.h"

static const char *const reason_name[XR__MAX] = {
	[XR_DUALSTACK]	 = "IPv6 socket that takes IPv4 too (dual-stack)",
	[XR_NO_IFACE]	 = "no interface chosen",
	[XR_NO_DATAPATH] = "no xdp-vi datapath on the interface",
	[XR_NO_BROKER]	 = "unprivileged and no xdp-vid broker",
	[XR_REFUSED]	 = "refused by the datapath or the broker",
	[XR_OPTION]	 = "socket option xvi cannot honour",
	[XR_FD_RANGE]	 = "fd above the table",
	[XR_OPEN_FAILED] = "endpoint open failed",
	[XR_CHECK]	 = "--check: would be accelerated",
	[XR_FORK]	 = "shared with a forked process",
};

static unsigned int reason_count[XR__MAX];
static unsigned int accelerated;
static __thread char last_msg[256];

static void out(const char *fmt, va_list ap)
{
	char buf[512];
	int n, e = errno;

	n = snprintf(buf, sizeof(buf), "xvi-run[%d]: ", getpid());
	n += vsnprintf(buf + n, sizeof(buf) - n - 1, fmt, ap);
	if (n > (int)sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	(void)!REAL(write)(2, buf, n);
	errno = e;
}

void xp_info(const char *fmt, ...)
{
	va_list ap;

	if (!xp_conf.verbose)
		return;
	va_start(ap, fmt);
	out(fmt, ap);
	va_end(ap);
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	out(fmt, ap);
	va_end(ap);
}

void xp_note(enum xp_reason r, int fd, const char *fmt, ...)
{
	char detail[384];
	unsigned int n;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	n = __atomic_fetch_add(&reason_count[r], 1, __ATOMIC_RELAXED);
	/* Fallbacks print without -v too: silence is the failure mode we avoid. */
	if (r == XR_CHECK)
		say("fd %d would be accelerated: %s", fd, detail);
	else if (xp_conf.verbose || n == 0)
		say("fd %d stays on the kernel: %s: %s%s", fd, reason_name[r], detail,
		    xp_conf.verbose ? "" : " (logged once per reason; -v logs every socket)");
}

void xp_refused(int what, const char *fmt, ...)
{
	static unsigned int said[XP_REF__MAX];
	char detail[384];
	va_list ap;

	if (__atomic_fetch_add(&said[what], 1, __ATOMIC_RELAXED) && !xp_conf.verbose)
		return;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	say("%s%s", detail, xp_conf.verbose ? "" : " (logged once; -v logs every one)");
}

void xp_accelerated(struct xsock *xs, int fd)
{
	char a[64];

	__atomic_fetch_add(&accelerated, 1, __ATOMIC_RELAXED);
	xp_info("fd %d on xvi: %s on %s (%s endpoint)", fd, xp_sa_str(&xs->local, a), xs->ifname,
		xs->is_protected ? "protected, through xdp-vid" : "direct");
}

/*
 * An endpoint's counters, when it closes: to stderr at -v, and appended to
 * XVI_RUN_STATS as one line of key=value (the lab suites read it).
 */
void xp_stats_line(const char *line, int n)
{
	int fd;

	if (!xp_conf.stats_path)
		return;
	fd = open(xp_conf.stats_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0) {
		(void)!REAL(write)(fd, line, n);
		REAL(close)(fd);
	}
}

void xp_report_endpoint(struct xsock *xs)
{
	XVI_OPTS(xvi_endpoint_stats, st);
	char line[448], a[64];
	int n, e = errno;
	__u64 rx, tx;

	if (xvi_endpoint__stats(xs->ep, &st))
		memset(&st, 0, sizeof(st));
	/* Sharing its port: the endpoint's datagrams through all its sockets. */
	xp_share_reports(xs, &rx, &tx);
	n = snprintf(line, sizeof(line),
		     "endpoint pid=%d local=%s iface=%s path=%s rx_frames=%llu "
		     "tx_frames=%llu rx_dgrams=%llu tx_dgrams=%llu drop_no_socket=%llu "
		     "rx_ring_full=%llu rx_fill_empty=%llu rx_invalid=%llu\n", getpid(),
		     xp_sa_str(&xs->local, a), xs->ifname,
		     xs->is_protected ? "protected" : "direct",
		     (unsigned long long)st.rx_frames, (unsigned long long)st.tx_frames,
		     (unsigned long long)rx, (unsigned long long)tx,
		     (unsigned long long)st.drop_no_socket,
		     (unsigned long long)st.rx_ring_full,
		     (unsigned long long)st.rx_fill_empty, (unsigned long long)st.rx_invalid);
	if (n >= (int)sizeof(line))
		n = sizeof(line) - 1;
	xp_info("%.*s", n - 1, line);
	xp_stats_line(line, n);
	errno = e;
}

static int capture(enum xvi_print_level level, const char *fmt, va_list ap)
{
	va_list cp;

	if (level == XVI_WARN) {
		va_copy(cp, ap);
		vsnprintf(last_msg, sizeof(last_msg), fmt, cp);
		va_end(cp);
		last_msg[strcspn(last_msg, "\n")] = '\0';
	}
	/* Warnings come back inside the fallback line that names their socket. */
	if (xp_conf.verbose && level == XVI_INFO) {
		char m[256];

		vsnprintf(m, sizeof(m), fmt, ap);
		m[strcspn(m, "\n")] = '\0';
		say("%s", m);
	}
	return 0;
}

void xp_capture_libxvi_log(void)
{
	last_msg[0] = '\0';
	xvi_set_print(capture);
}

const char *xp_last_libxvi_msg(void)
{
	return last_msg[0] ? last_msg : "no message";
}

/* At exit: what ran where, so that no fallback goes unnoticed. */
__attribute__((destructor)) static void report_exit(void)
{
	unsigned int r, fell = 0;
	struct xsock *xs;
	__u64 rx, tx;

	for (xs = xp_live; xs; xs = xs->next_live)
		if (xs->state == XS_XVI && xs->ep && xp_share_reports(xs, &rx, &tx))
			xp_report_endpoint(xs);
	for (r = 0; r < XR__MAX; r++)
		if (r != XR_CHECK)
			fell += reason_count[r];
	/* Only processes that made UDP sockets speak (children inherit -v). */
	if (!fell && !accelerated && !reason_count[XR_CHECK])
		return;
	if (!fell && !xp_conf.verbose && !xp_conf.check)
		return;
	say("%u UDP socket(s) on xvi, %u on the kernel%s", accelerated, fell,
	    fell ? ":" : "");
	for (r = 0; r < XR__MAX; r++)
		if (reason_count[r] && r != XR_CHECK)
			say("  %u: %s", reason_count[r], reason_name[r]);
	if (xp_conf.check)
		say("--check: %u socket(s) would be accelerated", reason_count[XR_CHECK]);
}
