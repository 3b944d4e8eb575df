// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xdp-vid IFACE: the endpoint broker.  Gives unprivileged processes
 * protected endpoints on IFACE: one veth pair per endpoint, the client end
 * feeding the client's own AF_XDP socket, the host end guarded by
 * xvi_guard on the way out.  See docs/DESIGN.md section 8 and xdp-vid(8).
 *
 * One thread, one poll loop.  Every client request is untrusted: read once
 * into a fixed-size struct (anything of another size is refused), then
 * validated field by field; a bad request ends that connection, never the
 * daemon.  The daemon is on the path only during setup: once READY, frames
 * flow IFACE -> demux -> DEVMAP -> veth -> client socket and back through
 * the guard without it.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "broker.h"
#include "ctl.h"
#include "neigh.h"
#include "xvi.h"
#include "xvid.h"
#include "xvi_client.skel.h"
#include "xvi_guard.skel.h"

#ifndef AF_XDP
#define AF_XDP 44
#endif
#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59
#endif

#define MAX_CONNS		(XVI_MAX_ENDPOINTS + 64)
#define OPEN_TIMEOUT_MS		5000	/* connect -> OPEN */
#define READY_TIMEOUT_MS	10000	/* OPEN reply -> READY */
#define TICK_MS			200	/* deadlines and owner checks */

enum ep_state { ST_FREE = 0, ST_WAIT_OPEN, ST_WAIT_READY, ST_LIVE };

struct xvid_ep {
	enum ep_state state;
	int conn;
	long long deadline;
	struct xvid_client_id id;
	bool claimed;
	__u32 slot;
	struct xvi_slot_owner owner;	/* as claimed: release only this */
	char host[IF_NAMESIZE], client[IF_NAMESIZE];
	int host_ifx, client_ifx;
	int xsk;			/* our copy until READY */
	struct xvi_client_bpf *cskel;
	struct xvi_guard_bpf *gskel;
	char tagstr[80];
};

static struct {
	const char *ifname;
	struct xvi_iface ifc;
	struct xvi_ctl *ctl;
	struct xvid_policy policy;
	int lfd;
	char sock_path[108];
	char lock_path[128];
	struct xvid_ep eps[MAX_CONNS];
	bool quiet_lib;
} d;

int xvid_verbose;
static volatile sig_atomic_t stop;

void xvid_log(int level, const char *fmt, ...)
{
	va_list ap;

	if (level > xvid_verbose)
		return;
	va_start(ap, fmt);
	fprintf(stderr, "xdp-vid: ");
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

static int print_libxvi(enum xvi_print_level level, const char *fmt, va_list args)
{
	char buf[1024];
	const char *msg = buf;

	if (d.quiet_lib || (int)level > xvid_verbose)
		return 0;
	vsnprintf(buf, sizeof(buf), fmt, args);
	if (!strncmp(msg, "libxvi: ", 8))
		msg += 8;
	return fprintf(stderr, "xdp-vid: %s", msg);
}

static int print_libbpf(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (xvid_verbose < (level == LIBBPF_WARN ? 1 : 2))
		return 0;
	return vfprintf(stderr, fmt, args);
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void on_signal(int sig)
{
	stop = 1;
}

/* ---- replies ------------------------------------------------------------ */

static int reply(struct xvid_ep *e, __u16 op, int error, int fd, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static int reply(struct xvid_ep *e, __u16 op, int error, int fd, const char *fmt, ...)
{
	struct xvi_broker_resp r;
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = { .iov_base = &r, .iov_len = sizeof(r) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	va_list ap;

	memset(&r, 0, sizeof(r));
	r.magic = XVI_BROKER_MAGIC;
	r.version = XVI_BROKER_VERSION;
	r.op = op;
	r.size = sizeof(r);
	r.error = error;
	if (op == XVI_BROKER_OPEN && !error) {
		r.slot = e->slot;
		r.dev_ifindex = e->client_ifx;
		snprintf(r.dev, sizeof(r.dev), "%s", e->client);
	}
	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(r.msg, sizeof(r.msg), fmt, ap);
		va_end(ap);
	}
	if (fd >= 0) {
		struct cmsghdr *cm;

		memset(&cbuf, 0, sizeof(cbuf));
		msg.msg_control = cbuf.buf;
		msg.msg_controllen = sizeof(cbuf.buf);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(fd));
	}
	/* Never block on a client that does not read: it only loses its reply. */
	if (sendmsg(e->conn, &msg, MSG_NOSIGNAL | MSG_DONTWAIT) != sizeof(r))
		return -errno ?: -EIO;
	return 0;
}

/* ---- endpoint set-up and tear-down ------------------------------------ */

static void teardown(struct xvid_ep *e, const char *why)
{
	int err;

	if (e->state == ST_FREE)
		return;
	if (e->claimed) {
		/* The tag first: the datapath stops redirecting into the pair. */
		err = xvi_ctl__release_owner(d.ctl, e->slot, &e->owner);
		if (err && err != -ENOENT)
			log_warn("%s: releasing slot %u failed: %s\n", d.ifname, e->slot,
				 strerror(-err));
	}
	if (e->host_ifx > 0) {
		err = xvid_link_del(e->host_ifx);
		if (err && err != -ENODEV)
			log_warn("cannot delete %s: %s\n", e->host, strerror(-err));
	}
	xvi_client_bpf__destroy(e->cskel);
	xvi_guard_bpf__destroy(e->gskel);
	if (e->xsk >= 0)
		close(e->xsk);
	if (e->conn >= 0)
		close(e->conn);
	if (e->claimed)
		log_info("%s: pid %d uid %u: %s slot %u released (%s)\n", d.ifname,
			 (int)e->id.pid, e->id.uid, e->tagstr, e->slot, why);
	else
		log_debug("connection of pid %d closed (%s)\n", (int)e->id.pid, why);
	memset(e, 0, sizeof(*e));
	e->state = ST_FREE;
	e->conn = -1;
	e->xsk = -1;
}

static bool addr_on_iface(const struct xvi_tag *t)
{
	static const __u8 zero[16];
	struct xvi_ip ip = { 0 };

	if (t->kind == XVI_TAG_RAW)
		return true;
	ip.family = t->kind == XVI_TAG_UDP6 ? AF_INET6 : AF_INET;
	memcpy(ip.a, t->addr, 16);
	if (!memcmp(ip.a, zero, 16))
		return true;	/* wildcard: the interface's addresses */
	return xvi_iface__has_addr(d.ifc.ifindex, &ip) == 1;
}

static int load_programs(struct xvid_ep *e, const struct xvi_tag *tag, char *why, size_t len)
{
	struct xvi_guard_cfg cfg;
	__u32 zero = 0, out = d.ifc.ifindex;
	static const __u8 nul[16];
	int err, n;

	e->cskel = xvi_client_bpf__open_and_load();
	if (!e->cskel) {
		err = -errno;
		snprintf(why, len, "cannot load %s: %s", XVI_CLIENT_PROG_NAME, strerror(-err));
		return err;
	}
	e->gskel = xvi_guard_bpf__open();
	if (!e->gskel) {
		err = -errno;
		snprintf(why, len, "cannot open %s: %s", XVI_GUARD_PROG_NAME, strerror(-err));
		return err;
	}
	/* Guard drops land in the endpoint's slot of the datapath's counters. */
	err = bpf_map__reuse_fd(e->gskel->maps.xvi_ep_stats, xvi_ctl__ep_stats_fd(d.ctl));
	if (!err)
		err = xvi_guard_bpf__load(e->gskel);
	if (err) {
		snprintf(why, len, "cannot load %s: %s", XVI_GUARD_PROG_NAME, strerror(-err));
		return err;
	}

	memset(&cfg, 0, sizeof(cfg));
	cfg.slot = e->slot;
	cfg.kind = tag->kind;
	cfg.port = tag->port;
	cfg.raw_tag = tag->raw_tag;
	memcpy(cfg.mac, d.ifc.mac, 6);
	if (tag->kind != XVI_TAG_RAW) {
		if (memcmp(tag->addr, nul, 16)) {
			memcpy(cfg.addrs[0], tag->addr, 16);
			n = 1;
		} else {
			n = xvid_iface_addrs(d.ifname, tag->kind == XVI_TAG_UDP6 ? AF_INET6 : AF_INET,
					     cfg.addrs, XVI_GUARD_MAX_ADDRS);
			if (n < 0)
				n = 0;
		}
		cfg.naddrs = n;
	}
	if (bpf_map_update_elem(bpf_map__fd(e->gskel->maps.xvi_guard_cfg), &zero, &cfg, 0) ||
	    bpf_map_update_elem(bpf_map__fd(e->gskel->maps.xvi_guard_out), &zero, &out, 0)) {
		err = -errno;
		snprintf(why, len, "cannot configure the guard: %s", strerror(-err));
		return err;
	}

	err = bpf_xdp_attach(e->client_ifx, bpf_program__fd(e->cskel->progs.xvi_client),
			     XDP_FLAGS_DRV_MODE, NULL);
	if (!err)
		err = bpf_xdp_attach(e->host_ifx, bpf_program__fd(e->gskel->progs.xvi_guard),
				     XDP_FLAGS_DRV_MODE, NULL);
	if (err) {
		snprintf(why, len, "cannot attach XDP to %s/%s: %s", e->host, e->client,
			 strerror(-err));
		return err;
	}
	return 0;
}

/* A request that passed validation and policy: build the endpoint. */
static int setup(struct xvid_ep *e, const struct xvi_tag *tag, char *why, size_t len)
{
	int i, err;

	memset(&e->owner, 0, sizeof(e->owner));
	e->owner.tag = *tag;
	e->owner.pid = e->id.pid;
	e->owner.uid = e->id.uid;
	e->owner.queue_id = XVI_QUEUE_NONE;
	e->owner.mode = XVI_EP_MODE_PROTECTED;
	err = xvi_ctl__claim(d.ctl, &e->owner, &e->slot);
	if (err) {
		if (err == -EADDRINUSE)
			snprintf(why, len, "%s is in use on %s", e->tagstr, d.ifname);
		else if (err == -ENOSPC)
			snprintf(why, len, "all %d endpoint slots of %s are in use",
				 XVI_MAX_ENDPOINTS, d.ifname);
		else
			snprintf(why, len, "cannot claim %s: %s", e->tagstr, strerror(-err));
		return err;
	}
	e->claimed = true;
	/* gc may have handed us the slot of a client whose hangup is still queued */
	for (i = 0; i < MAX_CONNS; i++)
		if (&d.eps[i] != e && d.eps[i].state != ST_FREE && d.eps[i].claimed &&
		    d.eps[i].slot == e->slot)
			teardown(&d.eps[i], "slot collected and reused");

	err = xvid_veth_names(d.ifc.ifindex, e->slot, e->host, e->client);
	if (!err)
		err = xvid_veth_create(e->host, e->client, d.ifc.mtu, &e->host_ifx,
				       &e->client_ifx);
	if (err) {
		e->host_ifx = 0;
		snprintf(why, len, "cannot create the veth pair %s/%s: %s", e->host, e->client,
			 strerror(-err));
		return err;
	}
	err = load_programs(e, tag, why, len);
	if (err)
		return err;

	e->xsk = socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (e->xsk < 0) {
		err = -errno;
		snprintf(why, len, "cannot create an AF_XDP socket: %s", strerror(-err));
		return err;
	}
	/* The client can bind it to the client end only, and cannot undo this
	 * without CAP_NET_RAW. */
	if (setsockopt(e->xsk, SOL_SOCKET, SO_BINDTODEVICE, e->client, strlen(e->client) + 1)) {
		err = -errno;
		snprintf(why, len, "SO_BINDTODEVICE %s: %s", e->client, strerror(-err));
		return err;
	}
	return 0;
}

/* ---- requests ----------------------------------------------------------- */

static bool zero_bytes(const void *p, size_t n)
{
	const __u8 *b = p;

	while (n--)
		if (*b++)
			return false;
	return true;
}

static int count_uid(uid_t uid)
{
	int i, n = 0;

	for (i = 0; i < MAX_CONNS; i++)
		if (d.eps[i].state != ST_FREE && d.eps[i].claimed && d.eps[i].id.uid == uid)
			n++;
	return n;
}

/* Returns false when the connection must be closed. */
static bool handle_open(struct xvid_ep *e, const struct xvi_broker_req *q)
{
	char why[200] = "";
	__u64 seg;
	int err;

	xvi_tag__format(&q->tag, e->tagstr, sizeof(e->tagstr));
	if (strnlen(q->ifname, sizeof(q->ifname)) == sizeof(q->ifname) ||
	    strcmp(q->ifname, d.ifname)) {
		reply(e, q->op, -EINVAL, -1, "this is the broker of %s, not of the requested interface",
		      d.ifname);
		return false;
	}
	if (q->family || !zero_bytes(q->addr, sizeof(q->addr))) {
		reply(e, q->op, -EINVAL, -1, "OPEN carries no resolve fields");
		return false;
	}
	seg = (__u64)q->frame_size * q->num_frames;
	if ((q->frame_size != 2048 && q->frame_size != 4096) || !q->num_frames ||
	    (q->num_frames & (q->num_frames - 1)) || seg > d.policy.max_segment) {
		reply(e, q->op, -EINVAL, -1,
		      "segment of %u frames of %u bytes refused: frames of 2048 or 4096 bytes, "
		      "a power of 2 of them, at most %llu bytes (policy limit segment-bytes)",
		      q->num_frames, q->frame_size, (unsigned long long)d.policy.max_segment);
		return false;
	}
	if (count_uid(e->id.uid) >= (int)d.policy.max_per_uid) {
		reply(e, q->op, -EMFILE, -1, "uid %u already holds %u endpoints on %s "
		      "(policy limit endpoints-per-uid)", e->id.uid, d.policy.max_per_uid,
		      d.ifname);
		return false;
	}
	if (q->tag.kind != XVI_TAG_UDP4 && q->tag.kind != XVI_TAG_UDP6 &&
	    q->tag.kind != XVI_TAG_RAW) {
		reply(e, q->op, -EINVAL, -1, "unknown tag kind %u", q->tag.kind);
		return false;
	}
	err = xvid_policy_check(&d.policy, &e->id, &q->tag, addr_on_iface(&q->tag), d.ifname,
				why, sizeof(why));
	if (err) {
		log_info("%s\n", why);
		reply(e, q->op, err, -1, "%s", why);
		return false;
	}
	err = setup(e, &q->tag, why, sizeof(why));
	if (err) {
		log_warn("%s: pid %d: %s\n", d.ifname, (int)e->id.pid, why);
		reply(e, q->op, err, -1, "%s", why);
		return false;
	}
	if (reply(e, q->op, 0, e->xsk, NULL))
		return false;
	log_info("%s: pid %d uid %u: %s on slot %u via %s/%s\n", d.ifname, (int)e->id.pid,
		 e->id.uid, e->tagstr, e->slot, e->host, e->client);
	e->state = ST_WAIT_READY;
	e->deadline = now_ms() + READY_TIMEOUT_MS;
	return true;
}

static bool handle_ready(struct xvid_ep *e, const struct xvi_broker_req *q)
{
	__u32 zero = 0;
	int err;

	if (!zero_bytes(&q->frame_size, offsetof(struct xvi_broker_req, reserved) -
					 offsetof(struct xvi_broker_req, frame_size))) {
		reply(e, q->op, -EINVAL, -1, "READY carries no fields");
		return false;
	}
	/* Succeeds only for a socket bound (by the client) with an RX ring. */
	if (bpf_map_update_elem(bpf_map__fd(e->cskel->maps.xvi_client_xsk), &zero, &e->xsk, 0)) {
		err = -errno;
		reply(e, q->op, err, -1, "the socket is not bound to %s queue 0 with an RX ring (%s)",
		      e->client, strerror(-err));
		return false;
	}
	err = xvi_ctl__publish_dev(d.ctl, e->slot, e->host_ifx);
	if (err) {
		reply(e, q->op, err, -1, "cannot publish %s: %s", e->tagstr, strerror(-err));
		return false;
	}
	/* Off the data path from here: the kernel objects hold what they need. */
	close(e->xsk);
	e->xsk = -1;
	xvi_client_bpf__destroy(e->cskel);
	xvi_guard_bpf__destroy(e->gskel);
	e->cskel = NULL;
	e->gskel = NULL;
	if (reply(e, q->op, 0, -1, NULL))
		return false;
	e->state = ST_LIVE;
	return true;
}

static bool handle_resolve(struct xvid_ep *e, const struct xvi_broker_req *q)
{
	struct xvi_ip ip = { 0 };
	__u8 mac[6];
	int err, alen = q->family == AF_INET6 ? 16 : 4;
	struct xvi_broker_resp r;

	if ((q->family != AF_INET && q->family != AF_INET6) ||
	    !zero_bytes(q->addr + alen, 16 - alen) || !zero_bytes(&q->tag, sizeof(q->tag)) ||
	    q->frame_size || q->num_frames || !zero_bytes(q->ifname, sizeof(q->ifname))) {
		reply(e, q->op, -EINVAL, -1, "malformed RESOLVE");
		return false;
	}
	ip.family = q->family;
	memcpy(ip.a, q->addr, alen);
	/* Zero wait: start resolution if needed, never block the loop. */
	d.quiet_lib = true;
	err = xvi_neigh__resolve(d.ifc.ifindex, &ip, mac, 0);
	d.quiet_lib = false;
	if (err) {
		reply(e, q->op, -EAGAIN, -1, NULL);
		return true;
	}
	/* reply() has no MAC field: build this one here. */
	memset(&r, 0, sizeof(r));
	r.magic = XVI_BROKER_MAGIC;
	r.version = XVI_BROKER_VERSION;
	r.op = q->op;
	r.size = sizeof(r);
	memcpy(r.mac, mac, 6);
	return send(e->conn, &r, sizeof(r), MSG_NOSIGNAL | MSG_DONTWAIT) == sizeof(r);
}

/* Read one message, once, into a fixed-size struct; then validate the copy. */
static void handle_msg(struct xvid_ep *e)
{
	__u8 buf[sizeof(struct xvi_broker_req) + 1];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	/* No control buffer: fds a client tries to pass are discarded by the kernel. */
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct xvi_broker_req q;
	bool keep;
	ssize_t n;

	n = recvmsg(e->conn, &msg, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		teardown(e, n ? "connection error" : "client closed the connection");
		return;
	}
	if (n != sizeof(q) || (msg.msg_flags & MSG_TRUNC)) {
		log_info("pid %d: refused a request of %zd%s bytes (expected %zu)\n",
			 (int)e->id.pid, n, (msg.msg_flags & MSG_TRUNC) ? "+" : "", sizeof(q));
		reply(e, 0, -EBADMSG, -1, "request of %zd%s bytes refused: expected %zu",
		      n, (msg.msg_flags & MSG_TRUNC) ? "+" : "", sizeof(q));
		teardown(e, "bad request size");
		return;
	}
	memcpy(&q, buf, sizeof(q));
	if (q.magic != XVI_BROKER_MAGIC || q.version != XVI_BROKER_VERSION ||
	    q.size != sizeof(q) || !zero_bytes(q.reserved, sizeof(q.reserved))) {
		log_info("pid %d: refused a request with bad magic/version/size\n", (int)e->id.pid);
		reply(e, q.op, -EBADMSG, -1, "bad magic, version (want %u) or size field",
		      XVI_BROKER_VERSION);
		teardown(e, "bad request header");
		return;
	}
	switch (q.op) {
	case XVI_BROKER_OPEN:
		keep = e->state == ST_WAIT_OPEN && handle_open(e, &q);
		if (e->state != ST_WAIT_OPEN && e->state != ST_WAIT_READY)
			reply(e, q.op, -EALREADY, -1, "one endpoint per connection");
		break;
	case XVI_BROKER_READY:
		keep = e->state == ST_WAIT_READY && handle_ready(e, &q);
		break;
	case XVI_BROKER_RESOLVE:
		keep = (e->state == ST_WAIT_READY || e->state == ST_LIVE) &&
		       handle_resolve(e, &q);
		break;
	default:
		reply(e, q.op, -EOPNOTSUPP, -1, "unknown request %u", q.op);
		keep = false;
	}
	if (!keep)
		teardown(e, "request refused or out of order");
}

static void accept_one(void)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct xvid_ep *e = NULL;
	int fd, i;

	fd = accept4(d.lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return;
	for (i = 0; i < MAX_CONNS && !e; i++)
		if (d.eps[i].state == ST_FREE)
			e = &d.eps[i];
	if (!e || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len)) {
		if (!e)
			log_warn("%d connections open: refusing another\n", MAX_CONNS);
		close(fd);
		return;
	}
	memset(e, 0, sizeof(*e));
	e->conn = fd;
	e->xsk = -1;
	e->id.pid = cred.pid;
	e->id.uid = cred.uid;
	e->id.gid = cred.gid;
	len = sizeof(e->id.groups);
	if (!getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, e->id.groups, &len))
		e->id.ngroups = len / sizeof(gid_t);
	e->state = ST_WAIT_OPEN;
	e->deadline = now_ms() + OPEN_TIMEOUT_MS;
	log_debug("connection from pid %d uid %u\n", (int)cred.pid, cred.uid);
}

/* Deadlines, and clients that died without closing (the fd lives elsewhere). */
static void tick(void)
{
	long long now = now_ms();
	int i;

	for (i = 0; i < MAX_CONNS; i++) {
		struct xvid_ep *e = &d.eps[i];

		if (e->state == ST_FREE)
			continue;
		if (e->state != ST_LIVE && now > e->deadline)
			teardown(e, "timed out");
		else if (e->claimed &&
			 !xvi_ctl__owner_alive(e->owner.pid, e->owner.start_time))
			teardown(e, "owner process is gone");
	}
}

/* ---- start and stop ------------------------------------------------------- */

/* Revoke what a previous daemon left: its veths and protected slots. */
static void revoke_leftovers(void)
{
	struct xvi_slot_owner o;
	__u32 slot = XVI_CTL_SLOT_START;
	int n = 0;

	while (xvi_ctl__next_owner(d.ctl, &slot, &o) == 1)
		if (o.mode == XVI_EP_MODE_PROTECTED && !xvi_ctl__release(d.ctl, slot))
			n++;
	if (n)
		log_info("%s: revoked %d protected endpoint(s) of a previous xdp-vid\n",
			 d.ifname, n);
	xvid_veth_sweep(d.ifc.ifindex);
}

static int listen_socket(void)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	const char *dir = getenv("XVI_RUN_DIR");
	int lock, err;

	if (!dir || !*dir)
		dir = XVI_BROKER_RUN_DIR;
	if (mkdir(dir, 0755) && errno != EEXIST) {
		log_warn("cannot create %s: %s\n", dir, strerror(errno));
		return -errno;
	}
	chmod(dir, 0755);
	err = xvi_broker__path(d.ifname, d.sock_path, sizeof(d.sock_path));
	if (err)
		return err;
	snprintf(d.lock_path, sizeof(d.lock_path), "%.100s.lock", d.sock_path);
	lock = open(d.lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lock < 0 || flock(lock, LOCK_EX | LOCK_NB)) {
		log_warn("%s: another xdp-vid serves this interface (%s is locked)\n", d.ifname,
			 d.lock_path);
		return -EBUSY;
	}
	/* the lock fd stays open (and locked) for the daemon's life */
	unlink(d.sock_path);
	d.lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (d.lfd < 0)
		return -errno;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", d.sock_path);
	if (bind(d.lfd, (struct sockaddr *)&sun, sizeof(sun)) || listen(d.lfd, 64)) {
		err = -errno;
		log_warn("cannot listen on %s: %s\n", d.sock_path, strerror(-err));
		return err;
	}
	/* Anyone may connect: SO_PEERCRED and the policy decide. */
	chmod(d.sock_path, 0666);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: xdp-vid [-v] [--policy FILE] [--run-dir DIR] [--bpffs DIR] IFACE\n"
		"Endpoint broker: protected xdp-vi endpoints on IFACE for unprivileged\n"
		"processes.  Needs root and the datapath ('xdp-vi attach IFACE').\n"
		"  --policy FILE   rules (default %s, built-in default if missing)\n"
		"  --run-dir DIR   where the socket goes (default %s, env XVI_RUN_DIR)\n"
		"  --bpffs DIR     bpffs of the datapath pins (default /sys/fs/bpf)\n"
		"  -v              more messages (-vv: libbpf too)\n",
		XVID_DEFAULT_POLICY, XVI_BROKER_RUN_DIR);
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "policy", required_argument, NULL, 'p' },
		{ "run-dir", required_argument, NULL, 'r' },
		{ "bpffs", required_argument, NULL, 'b' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct xvi_ctl_opts copts = { .sz = sizeof(copts) };
	const char *policy = XVID_DEFAULT_POLICY;
	bool explicit_policy = false;
	struct sigaction sa = { .sa_handler = on_signal };
	static struct pollfd pfds[MAX_CONNS + 1];
	static int idx[MAX_CONNS + 1];
	int c, i, n, err;

	while ((c = getopt_long(argc, argv, "p:r:b:vh", lopts, NULL)) != -1) {
		switch (c) {
		case 'p': policy = optarg; explicit_policy = true; break;
		case 'r': setenv("XVI_RUN_DIR", optarg, 1); break;
		case 'b': copts.bpffs = optarg; break;
		case 'v': xvid_verbose++; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	d.ifname = argv[optind];
	d.lfd = -1;
	for (i = 0; i < MAX_CONNS; i++) {
		d.eps[i].conn = -1;
		d.eps[i].xsk = -1;
	}
	xvi_set_print(print_libxvi);
	libbpf_set_print(print_libbpf);
	if (xvid_verbose == 0)
		xvid_verbose = 1;	/* info by default: a daemon's log is its record */

	if (xvid_policy_load(&d.policy, policy, explicit_policy))
		return 1;
	if (xvi_iface__query(d.ifname, &d.ifc))
		return 1;
	d.ctl = xvi_ctl__open(d.ifname, &copts);
	if (!d.ctl)
		return 1;
	err = listen_socket();
	if (err)
		return 1;
	revoke_leftovers();

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	log_info("%s: serving protected endpoints at %s\n", d.ifname, d.sock_path);

	while (!stop) {
		n = 0;
		pfds[n].fd = d.lfd;
		pfds[n].events = POLLIN;
		idx[n++] = -1;
		for (i = 0; i < MAX_CONNS; i++) {
			if (d.eps[i].state == ST_FREE)
				continue;
			pfds[n].fd = d.eps[i].conn;
			pfds[n].events = POLLIN | POLLRDHUP;
			idx[n++] = i;
		}
		if (poll(pfds, n, TICK_MS) < 0 && errno != EINTR) {
			log_warn("poll: %s\n", strerror(errno));
			break;
		}
		for (i = 1; i < n; i++) {
			struct xvid_ep *e = &d.eps[idx[i]];

			if (!pfds[i].revents || e->state == ST_FREE || e->conn != pfds[i].fd)
				continue;
			if (pfds[i].revents & POLLIN)
				handle_msg(e);
			/* queued messages were read above; the peer is gone */
			if (e->state != ST_FREE && (pfds[i].revents & (POLLHUP | POLLERR | POLLRDHUP)))
				teardown(e, "client closed the connection");
		}
		if (pfds[0].revents & POLLIN)
			for (i = 0; i < 16; i++)
				accept_one();
		tick();
	}

	for (i = 0; i < MAX_CONNS; i++)
		teardown(&d.eps[i], "xdp-vid is stopping");
	close(d.lfd);
	unlink(d.sock_path);
	unlink(d.lock_path);
	xvi_ctl__close(d.ctl);
	log_info("%s: stopped\n", d.ifname);
	return 0;
}
