// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * preload_sem: the hard socket semantics, checked by an ordinary socket
 * program that the preload suite runs under xvi-run (and that also passes
 * on kernel sockets, which is how its expectations are kept honest).
 *
 *   preload_sem LOCAL_IP PORT PEER_IP PEER_PORT
 *
 * The peer echoes every datagram back to its sender.  Each check prints
 * "ok NAME" or "FAIL NAME: why" and the program exits 1 at the first
 * failure, 0 when all passed.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <ifaddrs.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <linux/net_tstamp.h>
#include <linux/time_types.h>

static struct sockaddr_in peer;
static int nchecks;

#define CHECK(name, cond, ...)							\
	do {									\
		if (!(cond)) {							\
			printf("FAIL %s: ", name);				\
			printf(__VA_ARGS__);					\
			printf(" (errno %s)\n", strerror(errno));		\
			exit(1);						\
		}								\
		printf("ok %s\n", name);					\
		nchecks++;							\
	} while (0)

static void on_alarm(int sig)
{
	(void)sig;
}

/* Send @msg to the peer and wait (bounded) for its echo through recvfrom. */
static int echo(int fd, const char *msg, char *back, size_t len)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;

	if (sendto(fd, msg, strlen(msg), 0, (struct sockaddr *)&peer, sizeof(peer)) < 0)
		return -1;
	if (poll(&p, 1, 5000) != 1)
		return -2;
	n = recv(fd, back, len - 1, 0);
	if (n < 0)
		return -3;
	back[n] = '\0';
	return strcmp(back, msg) ? -4 : 0;
}

/* Wait (bounded) for a datagram on @fd and read it into @buf: its length or -1. */
static int recv_within(int fd, char *buf, size_t len)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (poll(&p, 1, 5000) != 1)
		return -1;
	return (int)recv(fd, buf, len, 0);
}

/* The index of the interface holding @a, 0 if none. */
static unsigned int ifindex_of(struct in_addr a)
{
	struct ifaddrs *ifa, *i;
	unsigned int idx = 0;

	if (getifaddrs(&ifa))
		return 0;
	for (i = ifa; i; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		    ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr == a.s_addr)
			idx = if_nametoindex(i->ifa_name);
	freeifaddrs(ifa);
	return idx;
}

/*
 * Two sockets on one port, both SO_REUSEADDR, the first connected to the
 * peer: the peer's datagrams go to the connected one, as the kernel
 * chooses, whichever socket sent what they answer.
 */
static void check_reuse(const struct sockaddr_in *me)
{
	struct sockaddr_in p2 = *me;
	int one = 1, a, b, c, n;
	char buf[64];
	fd_set rd;
	struct timeval tv = { 5, 0 };

	p2.sin_port = htons(ntohs(me->sin_port) + 1);
	a = socket(AF_INET, SOCK_DGRAM, 0);
	CHECK("reuse_bind", !setsockopt(a, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) &&
	      !bind(a, (struct sockaddr *)&p2, sizeof(p2)), "bind with SO_REUSEADDR");
	c = socket(AF_INET, SOCK_DGRAM, 0);
	CHECK("reuse_refused", bind(c, (struct sockaddr *)&p2, sizeof(p2)) < 0 &&
	      errno == EADDRINUSE, "a second bind without SO_REUSEADDR");
	close(c);
	CHECK("reuse_connect", !connect(a, (struct sockaddr *)&peer, sizeof(peer)), "connect");
	b = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	CHECK("reuse_second", !setsockopt(b, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) &&
	      !bind(b, (struct sockaddr *)&p2, sizeof(p2)), "second bind with SO_REUSEADDR");
	sendto(b, "shared", 6, 0, (struct sockaddr *)&peer, sizeof(peer));
	n = recv_within(a, buf, sizeof(buf));
	CHECK("reuse_to_connected", n == 6 && !memcmp(buf, "shared", 6),
	      "the connected socket got %d bytes", n);
	CHECK("reuse_not_other", recv(b, buf, sizeof(buf), 0) < 0 && errno == EAGAIN,
	      "the unconnected socket got the peer's datagram");
	sendto(b, "sel", 3, 0, (struct sockaddr *)&peer, sizeof(peer));
	FD_ZERO(&rd);
	FD_SET(a, &rd);
	FD_SET(b, &rd);
	n = select((a > b ? a : b) + 1, &rd, NULL, NULL, &tv);
	CHECK("reuse_select", n == 1 && FD_ISSET(a, &rd) && !FD_ISSET(b, &rd),
	      "n=%d a=%d b=%d", n, FD_ISSET(a, &rd), FD_ISSET(b, &rd));
	recv(a, buf, sizeof(buf), 0);
	/* The connected one gone, the other takes the peer's datagrams again. */
	close(a);
	sendto(b, "alone", 5, 0, (struct sockaddr *)&peer, sizeof(peer));
	n = recv_within(b, buf, sizeof(buf));
	CHECK("reuse_after_close", n == 5 && !memcmp(buf, "alone", 5), "got %d bytes", n);
	close(b);
}

/*
 * A socket closed and its port bound again at once, as a server that
 * restarts its socket does: the second bind succeeds and echoes.  Under
 * the preload the first socket's endpoint may still be closing on a
 * thread of its own, its port taken until then; the closes of
 * REBIND_CROWD other sockets just before keep those threads busy, so that
 * it is still waiting to be closed.  As root only: a plain uid's
 * endpoints come from xdp-vid, whose policy allows a few opens a second.
 */
#define REBIND_CROWD 12

static void check_rebind(const struct sockaddr_in *me)
{
	struct sockaddr_in p5 = *me, pc = *me;
	int a, i, j, crowd[REBIND_CROWD], ncrowd = getuid() ? 0 : REBIND_CROWD;
	char buf[64] = "";

	p5.sin_port = htons(ntohs(me->sin_port) + 4);
	for (i = 0; i < 3; i++) {
		a = socket(AF_INET, SOCK_DGRAM, 0);
		CHECK("rebind_bind", a >= 0 && !bind(a, (struct sockaddr *)&p5, sizeof(p5)),
		      "bind of port %u, round %d, right after its last close",
		      ntohs(p5.sin_port), i);
		CHECK("rebind_echo", echo(a, "again", buf, sizeof(buf)) == 0, "round %d: got '%s'",
		      i, buf);
		for (j = 0; j < ncrowd; j++) {
			pc.sin_port = htons(ntohs(me->sin_port) + 6 + j);
			crowd[j] = socket(AF_INET, SOCK_DGRAM, 0);
			CHECK("rebind_crowd", crowd[j] >= 0 &&
			      !bind(crowd[j], (struct sockaddr *)&pc, sizeof(pc)),
			      "bind of port %u", ntohs(pc.sin_port));
		}
		for (j = 0; j < ncrowd; j++)
			close(crowd[j]);
		close(a);
	}
}

/* IP_PKTINFO and IP_RECVTOS on recvmsg, the kernel's layout (the peer sends TOS 0x20). */
static void check_cmsgs(const struct sockaddr_in *me)
{
	struct sockaddr_in p3 = *me;
	const struct in_pktinfo *pi = NULL;
	int one = 1, s, n, tos = -1;
	char buf[64], cb[256];
	struct iovec io = { buf, sizeof(buf) };
	struct msghdr mh = { .msg_iov = &io, .msg_iovlen = 1 };
	struct pollfd p;
	struct cmsghdr *c;

	p3.sin_port = htons(ntohs(me->sin_port) + 2);
	s = socket(AF_INET, SOCK_DGRAM, 0);
	CHECK("cmsg_opts", !setsockopt(s, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one)) &&
	      !setsockopt(s, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one)) &&
	      !bind(s, (struct sockaddr *)&p3, sizeof(p3)), "IP_PKTINFO, IP_RECVTOS, bind");
	sendto(s, "pkt", 3, 0, (struct sockaddr *)&peer, sizeof(peer));
	p = (struct pollfd){ .fd = s, .events = POLLIN };
	mh.msg_control = cb;
	mh.msg_controllen = sizeof(cb);
	n = poll(&p, 1, 5000) == 1 ? (int)recvmsg(s, &mh, 0) : -1;
	for (c = n == 3 ? CMSG_FIRSTHDR(&mh) : NULL; c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO &&
		    c->cmsg_len == CMSG_LEN(sizeof(*pi)))
			pi = (const struct in_pktinfo *)CMSG_DATA(c);
		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS &&
		    c->cmsg_len == CMSG_LEN(1))
			tos = *CMSG_DATA(c);
	}
	CHECK("pktinfo", pi && pi->ipi_addr.s_addr == me->sin_addr.s_addr &&
	      pi->ipi_spec_dst.s_addr == me->sin_addr.s_addr &&
	      pi->ipi_ifindex == (int)ifindex_of(me->sin_addr),
	      "recvmsg %d, controllen %zu, pktinfo %s ifindex %d", n, (size_t)mh.msg_controllen,
	      pi ? inet_ntoa(pi->ipi_addr) : "none", pi ? pi->ipi_ifindex : -1);
	CHECK("recvtos", tos == 0x20, "TOS 0x%x", tos);
	/* No room for them: MSG_CTRUNC. */
	sendto(s, "tr", 2, 0, (struct sockaddr *)&peer, sizeof(peer));
	mh.msg_controllen = sizeof(struct cmsghdr);
	n = poll(&p, 1, 5000) == 1 ? (int)recvmsg(s, &mh, 0) : -1;
	CHECK("cmsg_ctrunc", n == 2 && (mh.msg_flags & MSG_CTRUNC), "recvmsg %d flags 0x%x", n,
	      mh.msg_flags);
	close(s);
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/*
 * The receive time in @mh's first control message, which must be a
 * SOL_SOCKET one of @type (SO_TIMESTAMP_OLD/_NEW: a timeval of 16 bytes,
 * SO_TIMESTAMPNS_OLD/_NEW: a timespec), before IP_PKTINFO as the kernel
 * puts it (@pktinfo: that one follows).  -1 when it is not so.
 */
static double stamp_of(struct msghdr *mh, int type, bool pktinfo)
{
	struct cmsghdr *c = CMSG_FIRSTHDR(mh), *n;
	struct __kernel_timespec t;

	if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != type ||
	    c->cmsg_len != CMSG_LEN(sizeof(t)))
		return -1;
	n = CMSG_NXTHDR(mh, c);
	if (pktinfo != (n && n->cmsg_level == IPPROTO_IP && n->cmsg_type == IP_PKTINFO))
		return -1;
	memcpy(&t, CMSG_DATA(c), sizeof(t));
	if (type == SO_TIMESTAMP_OLD || type == SO_TIMESTAMP_NEW)
		return t.tv_nsec >= 0 && t.tv_nsec < 1000000 ? t.tv_sec + t.tv_nsec / 1e6 : -1;
	return t.tv_nsec >= 0 && t.tv_nsec < 1000000000 ? t.tv_sec + t.tv_nsec / 1e9 : -1;
}

/* Send @msg to the peer, and recvmsg its echo into @mh (@ctl bytes of control room). */
static int echo_msg(int s, const char *msg, struct msghdr *mh, size_t ctl)
{
	struct pollfd p = { .fd = s, .events = POLLIN };

	if (sendto(s, msg, strlen(msg), 0, (struct sockaddr *)&peer, sizeof(peer)) < 0 ||
	    poll(&p, 1, 5000) != 1)
		return -1;
	mh->msg_controllen = ctl;
	return (int)recvmsg(s, mh, 0);
}

/*
 * SO_TIMESTAMP and SO_TIMESTAMPNS (old and _NEW names): each datagram's
 * receive time, in CLOCK_REALTIME, no later than recvmsg's return, no
 * earlier than the send (a few seconds' slack: no timing is checked), never
 * going back; the kernel's order with IP_PKTINFO; MSG_CTRUNC without room.
 * SO_TIMESTAMPING is the kernel's only (an endpoint has no NIC stamps).
 */
static void check_tstamp(const struct sockaddr_in *me)
{
	static const struct { int opt, type; const char *name; } forms[] = {
		{ SO_TIMESTAMP_OLD, SO_TIMESTAMP_OLD, "SO_TIMESTAMP" },
		{ SO_TIMESTAMPNS_OLD, SO_TIMESTAMPNS_OLD, "SO_TIMESTAMPNS" },
		{ SO_TIMESTAMP_NEW, SO_TIMESTAMP_NEW, "SO_TIMESTAMP_NEW" },
		{ SO_TIMESTAMPNS_NEW, SO_TIMESTAMPNS_NEW, "SO_TIMESTAMPNS_NEW" },
	};
	const char *pre = getenv("LD_PRELOAD");
	bool xvi = pre && strstr(pre, "xvi");
	struct sockaddr_in p4 = *me;
	struct timeval tmo = { 5, 0 };
	int one = 1, zero = 0, s, n, i, v;
	socklen_t vl = sizeof(v);
	char buf[2][64], cb[2][256];
	struct iovec io[2] = { { buf[0], sizeof(buf[0]) }, { buf[1], sizeof(buf[1]) } };
	struct mmsghdr mm[2];
	struct msghdr mh = { .msg_iov = io, .msg_iovlen = 1, .msg_control = cb[0] };
	double sent, after, t, last = 0, t2;

	p4.sin_port = htons(ntohs(me->sin_port) + 3);
	s = socket(AF_INET, SOCK_DGRAM, 0);
	/* Set before bind, as a program does: the socket must stay on xvi for it. */
	CHECK("ts_opts", !setsockopt(s, SOL_SOCKET, SO_TIMESTAMP, &one, sizeof(one)) &&
	      !setsockopt(s, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one)) &&
	      !setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo)) &&
	      !bind(s, (struct sockaddr *)&p4, sizeof(p4)), "SO_TIMESTAMP, IP_PKTINFO, bind");
	for (i = 0; i < 4; i++) {
		if (i && setsockopt(s, SOL_SOCKET, forms[i].opt, &one, sizeof(one)))
			CHECK("ts_set", 0, "setsockopt %s", forms[i].name);
		v = -1;
		CHECK("ts_get", !getsockopt(s, SOL_SOCKET, forms[i].opt, &v, &vl) && v == 1,
		      "getsockopt %s: %d", forms[i].name, v);
		sent = now_s();
		n = echo_msg(s, "ts", &mh, sizeof(cb[0]));
		after = now_s();
		t = n == 2 ? stamp_of(&mh, forms[i].type, true) : -1;
		printf("# %s: %.6f, %.6f s after the send, %.6f s before recvmsg returned\n",
		       forms[i].name, t, t - sent, after - t);
		CHECK("ts_stamp", t > 0 && t <= after && t >= sent - 5 && t >= last,
		      "%s: recvmsg %d, controllen %zu, stamp %.6f, sent %.6f, returned %.6f, "
		      "previous %.6f", forms[i].name, n, (size_t)mh.msg_controllen, t, sent, after,
		      last);
		last = t;
	}
	/* A batch: both stamped, in order. */
	sendto(s, "m1", 2, 0, (struct sockaddr *)&peer, sizeof(peer));
	sendto(s, "m2", 2, 0, (struct sockaddr *)&peer, sizeof(peer));
	memset(mm, 0, sizeof(mm));
	for (i = 0; i < 2; i++) {
		mm[i].msg_hdr.msg_iov = &io[i];
		mm[i].msg_hdr.msg_iovlen = 1;
		mm[i].msg_hdr.msg_control = cb[i];
		mm[i].msg_hdr.msg_controllen = sizeof(cb[i]);
	}
	n = recvmmsg(s, mm, 2, 0, NULL);
	after = now_s();
	t = n == 2 ? stamp_of(&mm[0].msg_hdr, SO_TIMESTAMPNS_NEW, true) : -1;
	t2 = n == 2 ? stamp_of(&mm[1].msg_hdr, SO_TIMESTAMPNS_NEW, true) : -1;
	CHECK("ts_recvmmsg", t >= last && t2 >= t && t2 <= after,
	      "recvmmsg %d: stamps %.6f %.6f, previous %.6f, returned %.6f", n, t, t2, last, after);
	/* Room for the stamp only: it comes, IP_PKTINFO does not, MSG_CTRUNC. */
	n = echo_msg(s, "tr", &mh, CMSG_SPACE(sizeof(struct __kernel_timespec)));
	CHECK("ts_ctrunc_pktinfo", n == 2 && (mh.msg_flags & MSG_CTRUNC) &&
	      mh.msg_controllen == CMSG_SPACE(sizeof(struct __kernel_timespec)) &&
	      stamp_of(&mh, SO_TIMESTAMPNS_NEW, false) >= t2,
	      "recvmsg %d flags 0x%x controllen %zu", n, mh.msg_flags, (size_t)mh.msg_controllen);
	/* No room at all. */
	setsockopt(s, IPPROTO_IP, IP_PKTINFO, &zero, sizeof(zero));
	n = echo_msg(s, "tr", &mh, 0);
	CHECK("ts_ctrunc", n == 2 && (mh.msg_flags & MSG_CTRUNC) && !mh.msg_controllen,
	      "recvmsg %d flags 0x%x controllen %zu", n, mh.msg_flags, (size_t)mh.msg_controllen);
	/* Off: no control message. */
	setsockopt(s, SOL_SOCKET, SO_TIMESTAMP, &zero, sizeof(zero));
	n = echo_msg(s, "of", &mh, sizeof(cb[0]));
	CHECK("ts_off", n == 2 && !mh.msg_controllen && !(mh.msg_flags & MSG_CTRUNC) &&
	      !getsockopt(s, SOL_SOCKET, SO_TIMESTAMPNS_NEW, &v, &vl) && !v,
	      "recvmsg %d controllen %zu flags 0x%x", n, (size_t)mh.msg_controllen,
	      mh.msg_flags);
	v = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;
	errno = 0;
	n = setsockopt(s, SOL_SOCKET, SO_TIMESTAMPING, &v, sizeof(v));
	CHECK("ts_timestamping", xvi ? n < 0 && errno == ENOPROTOOPT : n == 0,
	      "SO_TIMESTAMPING on a bound socket %s: %d", xvi ? "under xvi-run" : "on the kernel",
	      n);
	close(s);
}

/* One timer signal, no SA_RESTART: blocking calls must return EINTR. */
static void arm_interrupt(void)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	struct itimerval it = { .it_value = { 0, 100000 } };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
}

int main(int argc, char **argv)
{
	struct sockaddr_in me = { .sin_family = AF_INET }, got;
	socklen_t gl = sizeof(got);
	struct epoll_event ev, out[4];
	char buf[2048], msg[64];
	int fd, ep, inner, pfd[2], n, r, st;
	struct timeval tv;
	fd_set rd;
	pid_t pid;

	if (argc != 5) {
		fprintf(stderr, "usage: preload_sem LOCAL_IP PORT PEER_IP PEER_PORT\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	inet_pton(AF_INET, argv[1], &me.sin_addr);
	me.sin_port = htons(atoi(argv[2]));
	peer.sin_family = AF_INET;
	inet_pton(AF_INET, argv[3], &peer.sin_addr);
	peer.sin_port = htons(atoi(argv[4]));

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	CHECK("socket", fd >= 0, "socket");
	CHECK("bind", !bind(fd, (struct sockaddr *)&me, sizeof(me)), "bind %s", argv[1]);
	CHECK("getsockname", !getsockname(fd, (struct sockaddr *)&got, &gl) &&
	      got.sin_port == me.sin_port, "port %u", ntohs(got.sin_port));
	CHECK("nonblock_eagain", recv(fd, buf, sizeof(buf), 0) < 0 && errno == EAGAIN,
	      "empty non-blocking recv");
	CHECK("fcntl_blocking", !fcntl(fd, F_SETFL, 0) && !(fcntl(fd, F_GETFL) & O_NONBLOCK),
	      "F_SETFL 0");
	CHECK("echo", echo(fd, "hello", buf, sizeof(buf)) == 0, "got '%s'", buf);

	/* epoll: an xvi socket and a pipe in one set, each reported alone. */
	CHECK("pipe", !pipe(pfd), "pipe");
	ep = epoll_create1(0);
	ev.events = EPOLLIN;
	ev.data.u64 = 1;
	CHECK("epoll_add_udp", !epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), "epoll_ctl");
	ev.data.u64 = 2;
	CHECK("epoll_add_pipe", !epoll_ctl(ep, EPOLL_CTL_ADD, pfd[0], &ev), "epoll_ctl");
	CHECK("epoll_idle", epoll_wait(ep, out, 4, 0) == 0, "nothing ready");
	(void)!write(pfd[1], "x", 1);
	n = epoll_wait(ep, out, 4, 5000);
	CHECK("epoll_pipe", n == 1 && out[0].data.u64 == 2, "n=%d data=%llu", n,
	      n > 0 ? (unsigned long long)out[0].data.u64 : 0ULL);
	(void)!read(pfd[0], buf, 1);
	sendto(fd, "ep", 2, 0, (struct sockaddr *)&peer, sizeof(peer));
	n = epoll_wait(ep, out, 4, 5000);
	CHECK("epoll_udp", n == 1 && out[0].data.u64 == 1, "n=%d", n);
	CHECK("fionread", !ioctl(fd, FIONREAD, &n) && n == 2, "FIONREAD %d", n);
	CHECK("peek", recv(fd, buf, sizeof(buf), MSG_PEEK) == 2, "MSG_PEEK");
	CHECK("epoll_after_peek", epoll_wait(ep, out, 4, 0) == 1, "peeked datagram ready");
	CHECK("recv_after_peek", recv(fd, buf, sizeof(buf), 0) == 2 && !memcmp(buf, "ep", 2),
	      "recv");
	CHECK("epoll_drained", epoll_wait(ep, out, 4, 0) == 0, "nothing left");

	/* Nested: the set above inside another set. */
	inner = ep;
	ep = epoll_create1(0);
	ev.events = EPOLLIN;
	ev.data.u64 = 3;
	CHECK("epoll_nest", !epoll_ctl(ep, EPOLL_CTL_ADD, inner, &ev), "epoll_ctl");
	sendto(fd, "nest", 4, 0, (struct sockaddr *)&peer, sizeof(peer));
	n = epoll_wait(ep, out, 4, 5000);
	CHECK("epoll_nested", n == 1 && out[0].data.u64 == 3, "n=%d", n);
	n = epoll_wait(inner, out, 4, 0);
	CHECK("epoll_inner", n == 1 && out[0].data.u64 == 1, "n=%d", n);
	CHECK("recv_nested", recv(fd, buf, sizeof(buf), 0) == 4, "recv");

	/* poll and select with the pipe next to the socket. */
	{
		struct pollfd p[2] = { { .fd = pfd[0], .events = POLLIN },
				       { .fd = fd, .events = POLLIN } };

		sendto(fd, "poll", 4, 0, (struct sockaddr *)&peer, sizeof(peer));
		n = poll(p, 2, 5000);
		CHECK("poll_mixed", n == 1 && (p[1].revents & POLLIN) && !p[0].revents &&
		      p[1].fd == fd, "n=%d", n);
		recv(fd, buf, sizeof(buf), 0);
	}
	sendto(fd, "sel", 3, 0, (struct sockaddr *)&peer, sizeof(peer));
	FD_ZERO(&rd);
	FD_SET(fd, &rd);
	FD_SET(pfd[0], &rd);
	tv.tv_sec = 5;
	tv.tv_usec = 0;
	n = select((fd > pfd[0] ? fd : pfd[0]) + 1, &rd, NULL, NULL, &tv);
	CHECK("select_mixed", n == 1 && FD_ISSET(fd, &rd) && !FD_ISSET(pfd[0], &rd), "n=%d", n);
	recv(fd, buf, sizeof(buf), 0);

	/* dup2: the copy sends, the original receives; closing the copy keeps it. */
	CHECK("dup2", dup2(fd, 100) == 100, "dup2");
	sendto(100, "dup", 3, 0, (struct sockaddr *)&peer, sizeof(peer));
	{
		struct pollfd p = { .fd = fd, .events = POLLIN };

		CHECK("dup2_echo", poll(&p, 1, 5000) == 1 && recv(fd, buf, sizeof(buf), 0) == 3,
		      "echo through the copy");
	}
	CHECK("dup2_close", !close(100) && echo(fd, "after", buf, sizeof(buf)) == 0,
	      "original after closing the copy");

	/* Vectors: sendmmsg 3, recvmmsg them back; writev/readv on a connected socket. */
	{
		struct mmsghdr mm[3];
		struct iovec io[3];
		char rb[3][64];
		const char *w[3] = { "m0", "m1", "m2" };
		int i, k = 0;

		memset(mm, 0, sizeof(mm));
		for (i = 0; i < 3; i++) {
			io[i].iov_base = (void *)w[i];
			io[i].iov_len = 2;
			mm[i].msg_hdr.msg_iov = &io[i];
			mm[i].msg_hdr.msg_iovlen = 1;
			mm[i].msg_hdr.msg_name = &peer;
			mm[i].msg_hdr.msg_namelen = sizeof(peer);
		}
		CHECK("sendmmsg", sendmmsg(fd, mm, 3, 0) == 3, "sendmmsg");
		while (k < 3) {
			struct pollfd p = { .fd = fd, .events = POLLIN };

			if (poll(&p, 1, 5000) != 1)
				break;
			for (i = 0; i < 3; i++) {
				io[i].iov_base = rb[i];
				io[i].iov_len = sizeof(rb[i]);
				mm[i].msg_hdr.msg_name = NULL;
			}
			r = recvmmsg(fd, mm, 3 - k, MSG_DONTWAIT, NULL);
			if (r <= 0)
				break;
			k += r;
		}
		CHECK("recvmmsg", k == 3, "got %d of 3", k);
	}
	CHECK("connect", !connect(fd, (struct sockaddr *)&peer, sizeof(peer)), "connect");
	{
		struct iovec io[2] = { { "wri", 3 }, { "tev", 3 } };
		struct pollfd p = { .fd = fd, .events = POLLIN };

		CHECK("writev", writev(fd, io, 2) == 6, "writev");
		CHECK("read", poll(&p, 1, 5000) == 1 && read(fd, buf, sizeof(buf)) == 6 &&
		      !memcmp(buf, "writev", 6), "read");
	}
	CHECK("getpeername", !getpeername(fd, (struct sockaddr *)&got, &gl) &&
	      got.sin_port == peer.sin_port, "peer");

	/* Signals: a blocking recv and an epoll_wait return EINTR. */
	arm_interrupt();
	r = recv(fd, buf, sizeof(buf), 0);
	CHECK("recv_eintr", r < 0 && errno == EINTR, "recv returned %d", r);
	arm_interrupt();
	r = epoll_wait(inner, out, 4, -1);
	CHECK("epoll_eintr", r < 0 && errno == EINTR, "epoll_wait returned %d", r);

	/* SO_RCVTIMEO: a blocking recv gives up with EAGAIN. */
	tv.tv_sec = 0;
	tv.tv_usec = 100000;
	CHECK("rcvtimeo", !setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) &&
	      recv(fd, buf, sizeof(buf), 0) < 0 && (errno == EAGAIN || errno == EWOULDBLOCK),
	      "recv with SO_RCVTIMEO");

	/* fork: the child talks over the socket, then the parent leaves it to it. */
	pid = fork();
	if (pid == 0) {
		snprintf(msg, sizeof(msg), "child-%d", getpid());
		r = echo(fd, msg, buf, sizeof(buf));
		if (r)
			printf("child: echo step %d failed: %s\n", -r, strerror(errno));
		_exit(r ? 1 : 0);
	}
	r = waitpid(pid, &st, 0);
	if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
		/* Where did the echo go?  (diagnostic only) */
		r = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		printf("parent after the child failed: recv %d (%s)\n", r,
		       r < 0 ? strerror(errno) : "got a datagram");
	}
	CHECK("fork", pid > 0 && WIFEXITED(st) && WIFEXITED(st) &&
	      WEXITSTATUS(st) == 0, "child status %d", st);
	check_reuse(&me);
	check_rebind(&me);
	check_cmsgs(&me);
	check_tstamp(&me);
	printf("all %d checks passed\n", nchecks);
	return 0;
}
