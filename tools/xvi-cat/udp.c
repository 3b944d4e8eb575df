// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xvi-cat -u: each datagram's payload to stdout (-l), or each stdin line
 * as one datagram, over an xdp-vi endpoint or a kernel UDP socket.
 */
#include "cat.h"

int cat_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/*
 * Write up to @limit (0 = all) received datagrams to stdout, waiting up to
 * @timeout_ms for the first.  Returns how many were written or -errno
 * (after a message saying what failed).
 */
static int drain(struct xt *t, int timeout_ms, unsigned long long limit)
{
	struct xvi_msg msgs[XT_BATCH];
	int n, i, done = 0, err = 0;

	if (timeout_ms) {
		n = xt_wait(t, timeout_ms);
		if (n < 0) {
			fprintf(stderr, "xvi-cat: wait failed: %s\n", strerror(-n));
			return n;
		}
	}
	n = xt_recv(t, msgs, XT_BATCH);
	if (n < 0) {
		fprintf(stderr, "xvi-cat: receive failed: %s\n", strerror(-n));
		return n;
	}
	for (i = 0; i < n && !err; i++) {
		if (limit && (unsigned long long)done >= limit)
			break;
		err = cat_write_all(STDOUT_FILENO, msgs[i].data, msgs[i].len);
		if (!err)
			done++;
	}
	xt_release(t, msgs, n);
	if (err) {
		fprintf(stderr, "xvi-cat: cannot write to stdout: %s\n", strerror(-err));
		return err;
	}
	return done;
}

int cat_udp_listener(const struct cat_cfg *cfg)
{
	unsigned long long got = 0;
	__u64 start, last = 0;
	struct xt t;
	char a[64];
	int rc = 0;

	if (xt_open(&t, &cfg->xt, &cfg->addr))
		return 1;
	if (cat_verbosity)
		fprintf(stderr, "xvi-cat: listening on %s (%s)\n",
			xt_addr_str(&cfg->addr, a, sizeof(a)), cfg->xt.kernel ? "kernel" : "xvi");
	start = xt_now_ns();
	while (!xt_stop && (!cfg->count || got < cfg->count)) {
		int timeout = 500, n;

		if (cfg->idle > 0) {
			__u64 deadline = (got ? last : start) + (__u64)(cfg->idle * 1e9);

			if (xt_now_ns() >= deadline) {
				if (!got) {
					fprintf(stderr, "xvi-cat: nothing arrived on %s within %g s\n",
						xt_addr_str(&cfg->addr, a, sizeof(a)), cfg->idle);
					rc = 1;
				}
				break;
			}
			timeout = xt_ms_until(deadline);
			if (timeout > 500)
				timeout = 500;
		}
		n = drain(&t, timeout, cfg->count ? cfg->count - got : 0);
		if (n < 0) {
			rc = 1;
			break;
		}
		if (n) {
			got += (unsigned long long)n;
			last = xt_now_ns();
		}
	}
	xt_close(&t);
	return rc;
}

static const char *send_hint(int err)
{
	switch (err) {
	case EHOSTUNREACH:
		return ": no route or no neighbour answer for the destination: check the address and 'ip route'";
	case EAFNOSUPPORT:
		return ": the destination family does not fit the endpoint";
	case EAGAIN:
		return ": the send queue stayed full";
	default:
		return "";
	}
}

int cat_udp_sender(const struct cat_cfg *cfg)
{
	unsigned long long sent = 0, lineno = 0;
	union xvi_sockaddr local;
	char *line = NULL, a[64];
	size_t cap = 0;
	ssize_t len;
	struct xt t;
	int rc = 0;

	xt_any_addr(cfg->addr.sa.sa_family,
		    cfg->src_port ? (__u16)cfg->src_port : xt_pid_port(), &local);
	if (xt_open(&t, &cfg->xt, &local))
		return 1;
	while (!xt_stop && (!cfg->count || sent < cfg->count)) {
		ssize_t r;
		__u64 give_up;

		errno = 0;
		len = getline(&line, &cap, stdin);
		if (len < 0) {
			if (errno && errno != EINTR) {
				fprintf(stderr, "xvi-cat: cannot read stdin: %s\n", strerror(errno));
				rc = 1;
			}
			break;
		}
		lineno++;
		if ((size_t)len > t.max_payload) {
			fprintf(stderr, "xvi-cat: line %llu is %zd bytes, above the largest datagram this endpoint sends (%u bytes, EMSGSIZE): shorten the line\n",
				lineno, len, t.max_payload);
			rc = 1;
			break;
		}
		/* A full send queue drains as completions come back: retry a while. */
		give_up = xt_now_ns() + 1000000000ull;
		while ((r = xt_sendto(&t, line, (size_t)len, &cfg->addr)) == -EAGAIN &&
		       xt_now_ns() < give_up && !xt_stop)
			xt_flush(&t);
		if (r < 0) {
			fprintf(stderr, "xvi-cat: cannot send line %llu to %s: %s%s\n", lineno,
				xt_addr_str(&cfg->addr, a, sizeof(a)), strerror((int)-r),
				send_hint((int)-r));
			rc = 1;
			break;
		}
		sent++;
		/* Replies, if any, go to stdout as they come, like netcat. */
		if (drain(&t, 0, 0) < 0) {
			rc = 1;
			break;
		}
	}
	free(line);
	if (!rc && cfg->idle > 0) {
		__u64 deadline = xt_now_ns() + (__u64)(cfg->idle * 1e9);

		while (!xt_stop && xt_now_ns() < deadline) {
			int n = drain(&t, xt_ms_until(deadline), 0);

			if (n < 0) {
				rc = 1;
				break;
			}
			if (n > 0)
				deadline = xt_now_ns() + (__u64)(cfg->idle * 1e9);
		}
	}
	xt_close(&t);
	return rc;
}
