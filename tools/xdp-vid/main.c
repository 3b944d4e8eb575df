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
#include <limits.h>
#include <getopt.h>
#include <ifaddrs.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <arpa/inet.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "broker/broker.h"
#include "ctl/ctl.h"
#include "nl/neigh.h"
#include "ctl/reserve.h"
#include "common/rundir.h"
#include "common/util.h"
#include "xvi.h"
#include "print.h"
#include "xvid.h"
#include "xvi_client.skel.h"
#include "xvi_guard.skel.h"

#ifndef AF_XDP
#define AF_XDP 44
#endif

#define MAX_CONNS		XVID_MAX_CONNS
#define OPEN_TIMEOUT_MS		5000	/* connect -> OPEN */
#define READY_TIMEOUT_MS	10000	/* OPEN reply -> READY */
#define TICK_MS			200	/* deadlines and owner checks */
#define MAPS_CHECK_TICKS	5	/* datapath re-attached?  every second */
#define ACCEPT_BACKOFF_MS	500	/* out of fds: the listening socket rests */
#define LINGER_MAX		64	/* refused connections held until read */
#define LINGER_MS		1000
#define IDX_LINGER		-3	/* poll index of linger[i]: IDX_LINGER - i */
/*
 * RESOLVE makes the kernel create a neighbour entry and broadcast: a
 * connection gets RESOLVE_BURST new resolutions, then RESOLVE_PER_SEC.
 * Polling the same next hop again within RESOLVE_REPOLL_MS is free (the
 * library polls every few ms while it waits).
 */
/*
 * Every message costs the one thread a read and a decision, and a RESOLVE
 * a route lookup and the interface's addresses besides: a connection may
 * send MSG_BURST at once, then MSG_PER_SEC; beyond that the daemon reads
 * it no faster (the client's sends block), so others are served.
 */
#define MSG_BURST		40
#define MSG_PER_SEC		20
#define RESOLVE_BURST		20
#define RESOLVE_PER_SEC		5
#define RESOLVE_REPOLL_MS	1000
/* OPEN costs a veth pair and two programs: per uid, policy opens-per-second,
 * with a burst of OPEN_BURST_SECONDS worth. */
#define OPEN_BURST_SECONDS	4
#define UID_TABLE		64	/* uids with a recent OPEN */

enum ep_state { ST_FREE = 0, ST_WAIT_OPEN, ST_WAIT_READY, ST_LIVE };

/* Token bucket in milli-tokens; zero-initialised means full. */
struct bucket {
	long long milli;
	long long last_ms;
};

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
	bool veth;			/* the pair exists: delete it by name */
	int xsk;			/* our copy until READY */
	int resv;			/* UDP port reservation (reserve.h), or -1 */
	int guard_cfg;			/* the guard's xvi_guard_cfg map, kept for
					 * address changes, or -1 */
	__u32 guard_allow;		/* XVI_GUARD_ALLOW_*: from the policy rule */
	bool ext_ok;			/* the rule grants ext: handlers may be loaded */
	struct xvid_ext_tab ext;	/* the handler tables (ext.c) */
	struct xvi_client_bpf *cskel;
	struct xvi_guard_bpf *gskel;
	char tagstr[80];
	struct bucket msg_tb;		/* every message, before any work */
	long long msg_resume;		/* over msg_tb: not read before this */
	unsigned int msg_limited;
	struct bucket resolve_tb;
	struct xvi_ip last_nh;		/* last next hop charged to resolve_tb */
	long long last_nh_ms;
};

struct uid_state {
	bool used;
	uid_t uid;
	struct bucket open_tb;
};

static struct {
	const char *ifname;
	struct xvi_iface ifc;
	struct xvi_ctl *ctl;
	struct xvi_ctl_opts copts;
	__u32 prog_id;			/* the datapath program d.ctl's maps belong to */
	__u32 xdp_id;			/* the XDP program on the interface then */
	struct xvid_policy policy;
	int lfd;
	int run_fd;			/* the checked run directory */
	const char *sock_name;		/* in it */
	char sock_path[108];
	int lock_fd, lock_dir;		/* flock held for the daemon's life */
	char lock_name[IF_NAMESIZE + 32];
	char lock_path[160];
	struct xvid_ep eps[MAX_CONNS];
	struct uid_state uids[UID_TABLE];
	struct bucket open_tb;		/* OPENs of all uids together */
	long long accept_resume;	/* out of fds: no accept before this */
	struct {
		int fd;			/* refused, answered, waiting for the
					 * client to close (linger_close) */
		long long until;
	} linger[LINGER_MAX];
	int addr_fd;			/* rtnetlink address events */
	__u64 start_time;		/* ours, recorded in every slot we claim */
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

static void on_signal(int sig)
{
	stop = 1;
}

/* ---- replies ------------------------------------------------------------ */

static void resp_init(struct xvi_broker_resp *r, __u16 op, int error)
{
	memset(r, 0, sizeof(*r));
	r->magic = XVI_BROKER_MAGIC;
	r->version = XVI_BROKER_VERSION;
	r->op = op;
	r->size = sizeof(*r);
	r->error = error;
}

/* One reply on @conn, with @fd attached (SCM_RIGHTS) if >= 0. */
static int send_resp(int conn, const struct xvi_broker_resp *r, int fd)
{
	/* Never block on a client that does not read: it only loses its reply. */
	ssize_t n = xvi_broker__send_fd(conn, r, sizeof(*r), fd, MSG_DONTWAIT);

	if (n < 0)
		return n;
	return n == sizeof(*r) ? 0 : -EIO;
}

static int reply(struct xvid_ep *e, __u16 op, int error, int fd, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static int reply(struct xvid_ep *e, __u16 op, int error, int fd, const char *fmt, ...)
{
	struct xvi_broker_resp r;
	va_list ap;

	resp_init(&r, op, error);
	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(r.msg, sizeof(r.msg), fmt, ap);
		va_end(ap);
	}
	if (op == XVI_BROKER_OPEN && !error) {
		r.slot = e->slot;
		r.dev_ifindex = e->client_ifx;
		snprintf(r.dev, sizeof(r.dev), "%s", e->client);
	}
	return send_resp(e->conn, &r, fd);
}

/* A successful RESOLVE: the next hop's MAC. */
static int reply_mac(struct xvid_ep *e, __u16 op, const __u8 mac[6])
{
	struct xvi_broker_resp r;

	resp_init(&r, op, 0);
	memcpy(r.mac, mac, 6);
	return send_resp(e->conn, &r, -1);
}

/*
 * Close a refused connection without losing its answer.  A Unix socket
 * closed with unread data (the client's OPEN, sent meanwhile) resets its
 * peer, whose next read then fails with ECONNRESET before it sees the
 * answer queued for it.  So the daemon says it is done (SHUT_WR), and
 * holds the fd, discarding what arrives, until the client closes or
 * LINGER_MS passes; at most LINGER_MAX such fds at once.
 */
static void linger_close(int fd)
{
	int i;

	shutdown(fd, SHUT_WR);
	for (i = 0; i < LINGER_MAX; i++)
		if (d.linger[i].fd < 0) {
			d.linger[i].fd = fd;
			d.linger[i].until = xvi_now_ms() + LINGER_MS;
			return;
		}
	close(fd);
}

/* Discard what a lingering connection sent; close it once done.  */
static void linger_poll(int i, short revents, long long now)
{
	char buf[sizeof(struct xvi_broker_req)];
	int n = 0;

	if (revents & POLLIN)
		while (n++ < 4 && recv(d.linger[i].fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
			;
	if ((revents & (POLLHUP | POLLERR | POLLRDHUP)) || now >= d.linger[i].until) {
		close(d.linger[i].fd);
		d.linger[i].fd = -1;
	}
}

/* Refuse a connection before it has a slot (its OPEN gets this answer). */
static void refuse_conn(int conn, int error, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void refuse_conn(int conn, int error, const char *fmt, ...)
{
	struct xvi_broker_resp r;
	va_list ap;

	resp_init(&r, XVI_BROKER_OPEN, error);
	va_start(ap, fmt);
	vsnprintf(r.msg, sizeof(r.msg), fmt, ap);
	va_end(ap);
	send_resp(conn, &r, -1);
	linger_close(conn);
}

/* ---- rate limits ---------------------------------------------------------- */

static bool bucket_take(struct bucket *b, __u32 burst, __u32 per_sec, long long now)
{
	long long cap = (long long)burst * 1000;

	if (!b->last_ms) {
		b->milli = cap;
		b->last_ms = now;
	}
	b->milli += (now - b->last_ms) * per_sec;	/* ms x tokens/s = milli-tokens */
	if (b->milli > cap)
		b->milli = cap;
	b->last_ms = now;
	if (b->milli < 1000)
		return false;
	b->milli -= 1000;
	return true;
}

static bool bucket_full(const struct bucket *b, __u32 burst, __u32 per_sec, long long now)
{
	return !b->last_ms || b->milli + (now - b->last_ms) * per_sec >= (long long)burst * 1000;
}

/*
 * Charge one OPEN to @uid.  The table holds uids that opened recently; an
 * entry whose bucket has refilled carries no state and is reused.  false:
 * over the rate (or 64 uids opening at full speed at once).
 */
static bool open_allowed(uid_t uid)
{
	__u32 rate = d.policy.opens_per_sec, burst = rate * OPEN_BURST_SECONDS;
	struct uid_state *u = NULL;
	long long now = xvi_now_ms();
	int i;

	for (i = 0; i < UID_TABLE && !u; i++)
		if (d.uids[i].used && d.uids[i].uid == uid)
			u = &d.uids[i];
	for (i = 0; i < UID_TABLE && !u; i++)
		if (!d.uids[i].used || bucket_full(&d.uids[i].open_tb, burst, rate, now))
			u = &d.uids[i];
	if (!u)
		return false;
	if (!u->used || u->uid != uid) {
		memset(u, 0, sizeof(*u));
		u->used = true;
		u->uid = uid;
	}
	return bucket_take(&u->open_tb, burst, rate, now);
}

/* ---- endpoint set-up and tear-down ------------------------------------ */

static void ep_reset(struct xvid_ep *e)
{
	memset(e, 0, sizeof(*e));
	e->state = ST_FREE;
	e->conn = -1;
	e->xsk = -1;
	e->resv = -1;
	e->guard_cfg = -1;
	e->ext.ext_fd = e->ext.gen_fd = e->ext.ret_fd = -1;
	e->ext.host_pass_fd = e->ext.stack_drop_fd = e->ext.stats_fd = -1;
}

/*
 * The handler tables' last fds: the kernel empties a PROG_ARRAY with its
 * last file reference (docs/KERNEL.md, fact 27), and with it go the
 * handlers and their maps.
 */
static void ext_close(struct xvid_ext_tab *t)
{
	int *fds[] = { &t->ext_fd, &t->gen_fd, &t->ret_fd, &t->host_pass_fd, &t->stack_drop_fd,
		       &t->stats_fd };
	size_t i;

	for (i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

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
	/* The kernel may have the port back once the datapath stopped taking it. */
	if (e->resv >= 0)
		close(e->resv);
	xvi_client_bpf__destroy(e->cskel);
	xvi_guard_bpf__destroy(e->gskel);
	if (e->xsk >= 0)
		close(e->xsk);
	if (e->guard_cfg >= 0)
		close(e->guard_cfg);
	if (e->ext.mask)
		log_info("%s: %s: its handlers go with it\n", d.ifname, e->tagstr);
	ext_close(&e->ext);
	/* After the fds above: out of fds, the netlink socket needs one. */
	if (e->veth)
		xvid_veth_delete(e->host);
	if (e->conn >= 0)
		close(e->conn);
	if (e->claimed)
		log_info("%s: pid %d uid %u: %s slot %u released (%s)\n", d.ifname,
			 (int)e->id.pid, e->id.uid, e->tagstr, e->slot, why);
	else
		log_debug("connection of pid %d closed (%s)\n", (int)e->id.pid, why);
	xvid_peer_free(&e->id);
	ep_reset(e);
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

/*
 * The guard runs at TC ingress of the host end (see bpf/xvi_guard.bpf.c for
 * why not XDP), xvi_host_egress at its TC egress.  The clsact qdisc and the
 * filters go away with the veth pair, so nothing here needs undoing on the
 * way out.
 */
static int tc_attach(int ifindex, enum bpf_tc_attach_point point, int prog_fd)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = point);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .prog_fd = prog_fd, .handle = 1,
			    .priority = 1);
	int err;

	err = bpf_tc_hook_create(&hook);
	if (err && err != -EEXIST)
		return err;
	return bpf_tc_attach(&hook, &opts);
}

/* Directed broadcast addresses of the interface's IPv4 subnets, up to @max. */
static int iface_bcast4(__be32 *out, int max)
{
	struct ifaddrs *ifa, *a;
	int n = 0;

	if (getifaddrs(&ifa))
		return 0;
	for (a = ifa; a && n < max; a = a->ifa_next)
		if (a->ifa_addr && a->ifa_addr->sa_family == AF_INET &&
		    (a->ifa_flags & IFF_BROADCAST) && a->ifa_broadaddr &&
		    !strcmp(a->ifa_name, d.ifname))
			out[n++] = ((struct sockaddr_in *)a->ifa_broadaddr)->sin_addr.s_addr;
	freeifaddrs(ifa);
	return n;
}

/*
 * What the guard lets out: the endpoint's identity, and nothing a host's
 * own sockets would not send unless the policy rule that allowed the
 * endpoint says so ("guard-allow"): group destinations, IPv4 options,
 * network-control DSCP and control ports are dropped otherwise.
 */
static void guard_config(const struct xvid_ep *e, const struct xvi_tag *tag, __u32 mtu,
			 struct xvi_guard_cfg *cfg)
{
	static const __u8 nul[16];
	int n;

	memset(cfg, 0, sizeof(*cfg));
	cfg->slot = e->slot;
	cfg->kind = tag->kind;
	cfg->port = tag->port;
	cfg->raw_tag = tag->raw_tag;
	memcpy(cfg->mac, d.ifc.mac, 6);
	cfg->out_ifindex = d.ifc.ifindex;
	cfg->allow = e->guard_allow;
	cfg->max_frame = mtu + 14;	/* the Ethernet header; VLAN tags never pass */
	n = iface_bcast4(cfg->bcast4, XVI_GUARD_MAX_ADDRS);
	cfg->nbcast = n;
	if (tag->kind == XVI_TAG_RAW)
		return;
	if (memcmp(tag->addr, nul, 16)) {
		memcpy(cfg->addrs[0], tag->addr, 16);
		n = 1;
	} else {
		n = xvid_iface_addrs(d.ifname, tag->kind == XVI_TAG_UDP6 ? AF_INET6 : AF_INET,
				     cfg->addrs, XVI_GUARD_MAX_ADDRS);
		if (n < 0)
			n = 0;
	}
	cfg->naddrs = n;
}

static int veth_set_mtu(const struct xvid_ep *e, __u32 mtu, char *why, size_t len)
{
	int err = xvid_link_set_mtu(e->host_ifx, mtu);

	if (!err)
		err = xvid_link_set_mtu(e->client_ifx, mtu);
	if (err)
		snprintf(why, len, "cannot set the MTU of %s/%s to %u: %s", e->host, e->client,
			 mtu, strerror(-err));
	return err;
}

/*
 * Neither end of the pair takes a frame longer than what one frame of the
 * client's segment holds: the guard and the client do not handle
 * multi-buffer frames, and copy-mode AF_XDP puts a received frame at
 * XDP_PACKET_HEADROOM (256) in one segment frame.  Never more than the
 * interface's MTU, nor than the kernel lets the host end carry into a
 * single-buffer XDP program on the client end (what one page holds,
 * docs/KERNEL.md, fact 25): called with xvi_client attached, when the
 * kernel reports that bound as the host end's max_mtu.  Returns the MTU
 * set.
 */
static int veth_cap_mtu(const struct xvid_ep *e, __u32 frame_size, char *why, size_t len)
{
	__u32 mtu = frame_size - 256 - 14;
	struct xvi_iface host;
	int err;

	if (mtu > d.ifc.mtu)
		mtu = d.ifc.mtu;
	if (!xvi_iface__query_index(e->host_ifx, &host) && host.max_mtu && mtu > host.max_mtu)
		mtu = host.max_mtu;
	err = veth_set_mtu(e, mtu, why, len);
	return err ? err : (int)mtu;
}

/*
 * Where the policy grants ext: keep xvi_client's handler tables and the
 * two programs of the first handler load past READY, with the handlers'
 * way back (xvi_client_deliver) in place.
 */
static int ext_keep(struct xvid_ep *e)
{
	struct xvi_client_bpf *c = e->cskel;
	/* The return paths, in the order of XVI_EXT_RET_* (include/xvi_ext.h). */
	const struct bpf_program *ret[XVI_EXT_RET_NR] = {
		c->progs.xvi_client_deliver, c->progs.xvi_client_ret_reply,
		c->progs.xvi_client_ret_forward, c->progs.xvi_client_ret_place,
		c->progs.xvi_client_ret_drop, c->progs.xvi_client_ret_pass,
	};
	__u32 i;
	int fd;

	for (i = 0; i < XVI_EXT_RET_NR; i++) {
		fd = bpf_program__fd(ret[i]);
		if (bpf_map_update_elem(bpf_map__fd(c->maps.xvi_ext_ret), &i, &fd, 0))
			return -errno;
	}
	e->ext.ext_fd = fcntl(bpf_map__fd(c->maps.xvi_client_ext), F_DUPFD_CLOEXEC, 0);
	e->ext.gen_fd = fcntl(bpf_map__fd(c->maps.xvi_client_gen), F_DUPFD_CLOEXEC, 0);
	e->ext.ret_fd = fcntl(bpf_map__fd(c->maps.xvi_ext_ret), F_DUPFD_CLOEXEC, 0);
	e->ext.host_pass_fd = fcntl(bpf_program__fd(c->progs.xvi_client_host_pass),
				    F_DUPFD_CLOEXEC, 0);
	e->ext.stack_drop_fd = fcntl(bpf_program__fd(c->progs.xvi_client_stack_drop),
				     F_DUPFD_CLOEXEC, 0);
	e->ext.stats_fd = fcntl(bpf_map__fd(c->maps.xvi_cext_stats), F_DUPFD_CLOEXEC, 0);
	if (e->ext.ext_fd < 0 || e->ext.gen_fd < 0 || e->ext.ret_fd < 0 ||
	    e->ext.host_pass_fd < 0 || e->ext.stack_drop_fd < 0 || e->ext.stats_fd < 0) {
		ext_close(&e->ext);
		return -EMFILE;
	}
	return 0;
}

static int load_programs(struct xvid_ep *e, const struct xvi_tag *tag, __u32 frame_size,
			 char *why, size_t len)
{
	struct xvi_guard_cfg cfg;
	__u32 zero = 0;
	int err, mtu;

	/*
	 * Both programs count in the endpoint's slot of the datapath's
	 * counters; the client takes only metadata for that slot.
	 */
	e->cskel = xvi_client_bpf__open();
	if (!e->cskel) {
		err = -errno;
		snprintf(why, len, "cannot open %s: %s", XVI_CLIENT_PROG_NAME, strerror(-err));
		return err;
	}
	e->cskel->rodata->xvi_slot = e->slot;
	err = bpf_map__reuse_fd(e->cskel->maps.xvi_ep_stats, xvi_ctl__ep_stats_fd(d.ctl));
	/* Its handlers trace into the datapath's trace, under its switch. */
	if (!err)
		err = bpf_map__reuse_fd(e->cskel->maps.xvi_trace, xvi_ctl__trace_fd(d.ctl));
	if (!err)
		err = bpf_map__reuse_fd(e->cskel->maps.xvi_config, xvi_ctl__config_fd(d.ctl));
	if (!err)
		err = bpf_map__reuse_fd(e->cskel->maps.xvi_global_stats,
					xvi_ctl__global_stats_fd(d.ctl));
	if (!err)
		err = xvi_client_bpf__load(e->cskel);
	if (err) {
		snprintf(why, len, "cannot load %s: %s", XVI_CLIENT_PROG_NAME, strerror(-err));
		return err;
	}
	if (e->ext_ok) {
		err = ext_keep(e);
		if (err) {
			snprintf(why, len, "cannot keep the handler tables: %s", strerror(-err));
			return err;
		}
	}
	e->gskel = xvi_guard_bpf__open();
	if (!e->gskel) {
		err = -errno;
		snprintf(why, len, "cannot open %s: %s", XVI_GUARD_PROG_NAME, strerror(-err));
		return err;
	}
	err = bpf_map__reuse_fd(e->gskel->maps.xvi_ep_stats, xvi_ctl__ep_stats_fd(d.ctl));
	if (!err)
		err = xvi_guard_bpf__load(e->gskel);
	if (err) {
		snprintf(why, len, "cannot load %s: %s", XVI_GUARD_PROG_NAME, strerror(-err));
		return err;
	}

	/*
	 * The pair came with the interface's MTU, and the kernel refuses a
	 * single-buffer XDP program on a veth whose peer's MTU exceeds a page:
	 * 1500 first, which any page holds, the cap once the program is on.
	 */
	err = veth_set_mtu(e, d.ifc.mtu < 1500 ? d.ifc.mtu : 1500, why, len);
	if (err)
		return err;
	err = bpf_xdp_attach(e->client_ifx, bpf_program__fd(e->cskel->progs.xvi_client),
			     XDP_FLAGS_DRV_MODE, NULL);
	if (err) {
		snprintf(why, len, "cannot attach XDP to %s: %s", e->client, strerror(-err));
		return err;
	}
	mtu = veth_cap_mtu(e, frame_size, why, len);
	if (mtu < 0)
		return mtu;

	guard_config(e, tag, mtu, &cfg);
	if (bpf_map_update_elem(bpf_map__fd(e->gskel->maps.xvi_guard_cfg), &zero, &cfg, 0)) {
		err = -errno;
		snprintf(why, len, "cannot configure the guard: %s", strerror(-err));
		return err;
	}
	err = tc_attach(e->host_ifx, BPF_TC_INGRESS, bpf_program__fd(e->gskel->progs.xvi_guard));
	if (err) {
		snprintf(why, len, "cannot attach the guard at TC ingress of %s: %s", e->host,
			 strerror(-err));
		return err;
	}
	/* No local socket can send into the pair (SO_BINDTODEVICE on the host end). */
	err = tc_attach(e->host_ifx, BPF_TC_EGRESS,
			bpf_program__fd(e->gskel->progs.xvi_host_egress));
	if (err) {
		snprintf(why, len, "cannot attach %s at TC egress of %s: %s",
			 XVI_HOST_EGRESS_PROG_NAME, e->host, strerror(-err));
		return err;
	}
	return 0;
}

/* A request that passed validation and policy: build the endpoint. */
static int setup(struct xvid_ep *e, const struct xvi_tag *tag, __u32 frame_size, char *why,
		 size_t len)
{
	int i, err;

	memset(&e->owner, 0, sizeof(e->owner));
	e->owner.tag = *tag;
	e->owner.pid = e->id.pid;
	e->owner.start_time = e->id.start_time;	/* the process that connected */
	e->owner.uid = e->id.uid;
	e->owner.queue_id = XVI_QUEUE_NONE;
	e->owner.mode = XVI_EP_MODE_PROTECTED;
	/* gc takes the slot and its veth pair down if this daemon dies */
	e->owner.broker_pid = getpid();
	e->owner.broker_start_time = d.start_time;
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

	/*
	 * The port in the kernel's port space too, held until teardown: a
	 * kernel socket that has it keeps it (the datapath would take its
	 * datagrams), and no kernel socket can take it from the endpoint.
	 * After the claim, so a tag another endpoint holds gets claim's message.
	 */
	if (tag->kind != XVI_TAG_RAW) {
		err = xvi_udp_reserve(tag);
		if (err < 0) {
			if (err == -EADDRINUSE)
				snprintf(why, len, "%s is in use on this host (a kernel socket or "
					 "an endpoint on an overlapping address holds the port): "
					 "close it or choose another port", e->tagstr);
			else
				snprintf(why, len, "cannot reserve %s in the kernel: %s",
					 e->tagstr, strerror(-err));
			return err;
		}
		e->resv = err;
	}

	err = xvi_veth_names(d.ifc.ifindex, e->slot, e->host, e->client);
	if (!err)
		err = xvid_veth_create(e->host, e->client, d.ifc.mtu, &e->host_ifx,
				       &e->client_ifx);
	if (err) {
		snprintf(why, len, "cannot create the veth pair %s/%s: %s", e->host, e->client,
			 strerror(-err));
		return err;
	}
	e->veth = true;
	err = load_programs(e, tag, frame_size, why, len);
	if (err)
		return err;
	/* Addresses come and go: the allowed sources must follow (addrs_changed). */
	e->guard_cfg = fcntl(bpf_map__fd(e->gskel->maps.xvi_guard_cfg), F_DUPFD_CLOEXEC, 0);
	if (e->guard_cfg < 0) {
		err = -errno;
		snprintf(why, len, "cannot keep the guard's configuration: %s", strerror(-err));
		return err;
	}

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

static int count_uid(uid_t uid)
{
	int i, n = 0;

	for (i = 0; i < MAX_CONNS; i++)
		if (d.eps[i].state != ST_FREE && d.eps[i].claimed && d.eps[i].id.uid == uid)
			n++;
	return n;
}

/* Connections of @uid, pending or open. */
static int count_conns(uid_t uid)
{
	int i, n = 0;

	for (i = 0; i < MAX_CONNS; i++)
		if (d.eps[i].state != ST_FREE && d.eps[i].id.uid == uid)
			n++;
	return n;
}

/* Connections that have not sent their OPEN yet. */
static int count_pending(void)
{
	int i, n = 0;

	for (i = 0; i < MAX_CONNS; i++)
		if (d.eps[i].state == ST_WAIT_OPEN)
			n++;
	return n;
}

/* Id of the datapath program attached to the interface now, 0 if none. */
static __u32 attached_prog_id(void)
{
	struct xvi_prog_info info;

	return xvi_ctl__prog_info(d.ifname, &info) ? 0 : info.prog_id;
}

/* Id of the XDP program on the interface (the dispatcher, if libxdp's), 0 for none. */
static int xdp_prog_on_iface(__u32 *id)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	int err;

	err = bpf_xdp_query(d.ifc.ifindex, 0, &q);
	if (err)
		return err;
	*id = q.prog_id ?: q.drv_prog_id ?: q.skb_prog_id;
	return 0;
}

/*
 * Fds held back for the datapath query: it needs several (netlink, the
 * program, its BTF), and out of fds every one of its answers would be
 * "not attached", which revokes every endpoint.
 */
#define FD_RESERVE	16
static int fd_reserve[FD_RESERVE];

/* Refill the reserve: true once it is whole again. */
static bool fd_reserve_take(void)
{
	bool whole = true;
	int i;

	for (i = 0; i < FD_RESERVE; i++) {
		if (fd_reserve[i] < 0)
			fd_reserve[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
		whole &= fd_reserve[i] >= 0;
	}
	return whole;
}

static void fd_reserve_give(void)
{
	int i;

	for (i = 0; i < FD_RESERVE; i++)
		if (fd_reserve[i] >= 0) {
			close(fd_reserve[i]);
			fd_reserve[i] = -1;
		}
}

/* Is no datapath attached, for sure?  (Out of fds, the query fails too.) */
static bool datapath_absent(void)
{
	struct xvi_prog_info info;

	return xvi_ctl__prog_info(d.ifname, &info) && (errno == ENOENT || errno == ENODEV);
}

/*
 * `xdp-vi detach` + `attach` while the daemon runs replaces every map: the
 * handle must follow, or new endpoints land in maps nobody reads.
 * Endpoints made on the old maps are dead (their tags are not in the new
 * table): revoke them.  Returns 0 when d.ctl is the live datapath's.
 */
static int check_datapath(struct xvid_ep *except)
{
	struct xvi_ctl *ctl;
	int i, n = 0;
	__u32 id, xdp;
	bool absent;

	/*
	 * The cheap question first, every second: is the XDP program on the
	 * interface the one it was?  (bpf_xdp_query opens no program: asking
	 * libxdp opens one, and leaves one fd behind each time.)
	 */
	if (xdp_prog_on_iface(&xdp))
		return d.prog_id ? 0 : -EAGAIN;		/* cannot tell now */
	if (xdp && xdp == d.xdp_id && d.prog_id)
		return 0;
	/* short of fds, the query fails half way (and libxdp leaks): ask later */
	if (!fd_reserve_take())
		return d.prog_id ? 0 : -EAGAIN;
	fd_reserve_give();
	id = attached_prog_id();
	fd_reserve_take();

	if (id && id == d.prog_id) {
		d.xdp_id = xdp;
		return 0;
	}
	/* cannot tell (no fds): keep what we have, revoke nothing */
	if (!id) {
		fd_reserve_give();
		absent = datapath_absent();
		fd_reserve_take();
		if (!absent)
			return d.prog_id ? 0 : -EAGAIN;
	}
	for (i = 0; i < MAX_CONNS; i++)
		if (&d.eps[i] != except && d.eps[i].state != ST_FREE && d.eps[i].claimed) {
			teardown(&d.eps[i], "the datapath was detached or re-attached");
			n++;
		}
	if (!id) {
		if (d.prog_id)
			log_warn("%s: the datapath was detached (%d endpoint(s) revoked): "
				 "run 'xdp-vi attach %s'\n", d.ifname, n, d.ifname);
		d.prog_id = 0;
		return -ENOENT;
	}
	ctl = xvi_ctl__open(d.ifname, &d.copts);
	if (!ctl)
		return errno ? -errno : -ENOENT;
	xvi_ctl__close(d.ctl);
	d.ctl = ctl;
	d.prog_id = xvi_ctl__prog_id(ctl) ?: id;
	d.xdp_id = xdp;
	log_info("%s: the datapath was re-attached: using its new maps (%d endpoint(s) of the "
		 "old one revoked)\n", d.ifname, n);
	return 0;
}

/* Returns false when the connection must be closed. */
static bool handle_open(struct xvid_ep *e, const struct xvi_broker_req *q)
{
	char why[256] = "", allowed[64];
	struct xvid_grant grant = {};
	int err;

	xvi_tag__format(&q->tag, e->tagstr, sizeof(e->tagstr));
	/* The policy first: a refused request is charged nothing. */
	err = xvid_policy_check(&d.policy, &e->id, &q->tag, addr_on_iface(&q->tag), d.ifname,
				&grant, why, sizeof(why));
	e->guard_allow = grant.guard_allow;
	e->ext_ok = grant.ext;
	if (err) {
		log_info("%s\n", why);
		reply(e, q->op, err, -1, "%s", why);
		return false;
	}
	if (count_uid(e->id.uid) >= (int)d.policy.max_per_uid) {
		reply(e, q->op, -EMFILE, -1, "uid %u already holds %u endpoints on %s "
		      "(policy limit endpoints-per-uid)", e->id.uid, d.policy.max_per_uid,
		      d.ifname);
		return false;
	}
	if (!open_allowed(e->id.uid)) {
		reply(e, q->op, -EAGAIN, -1, "uid %u opens endpoints faster than %u per second on "
		      "%s (policy limit opens-per-second): retry later", e->id.uid,
		      d.policy.opens_per_sec, d.ifname);
		return false;
	}
	if (!bucket_take(&d.open_tb, d.policy.total_opens_per_sec * OPEN_BURST_SECONDS,
			 d.policy.total_opens_per_sec, xvi_now_ms())) {
		reply(e, q->op, -EAGAIN, -1, "the broker of %s opens %u endpoints per second in all "
		      "(policy limit total-opens-per-second): retry later", d.ifname,
		      d.policy.total_opens_per_sec);
		return false;
	}
	err = check_datapath(e);
	if (err) {
		reply(e, q->op, err, -1, "the xdp-vi datapath of %s is not attached (%s): "
		      "ask the administrator to run 'xdp-vi attach %s'", d.ifname, strerror(-err),
		      d.ifname);
		return false;
	}
	err = setup(e, &q->tag, q->frame_size, why, sizeof(why));
	if (err) {
		log_warn("%s: pid %d: %s\n", d.ifname, (int)e->id.pid, why);
		reply(e, q->op, err, -1, "%s", why);
		return false;
	}
	if (reply(e, q->op, 0, e->xsk, NULL))
		return false;
	log_info("%s: pid %d uid %u: %s on slot %u via %s/%s, guard allows %s too%s\n",
		 d.ifname, (int)e->id.pid, e->id.uid, e->tagstr, e->slot, e->host, e->client,
		 xvid_guard_allow_str(e->guard_allow, allowed, sizeof(allowed)),
		 e->ext_ok ? ", handlers allowed" : "");
	e->state = ST_WAIT_READY;
	e->deadline = xvi_now_ms() + READY_TIMEOUT_MS;
	return true;
}

static bool handle_ready(struct xvid_ep *e, const struct xvi_broker_req *q)
{
	__u32 zero = 0;
	int err;

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

static bool is_unicast(const struct xvi_ip *ip)
{
	static const __u8 zero[16];
	static const __u8 loop6[16] = { [15] = 1 };
	static const __u8 mapped[12] = { [10] = 0xff, [11] = 0xff };

	if (ip->family == AF_INET)
		return ip->a[0] && ip->a[0] != 127 && ip->a[0] < 224;
	return ip->a[0] != 0xff && memcmp(ip->a, zero, 16) && memcmp(ip->a, loop6, 16) &&
	       memcmp(ip->a, mapped, 12);
}

/*
 * Is @ip on one of the interface's own subnets (and not its own address)?
 * The route lookup alone cannot say: asked with an output interface, the
 * kernel assumes any destination without a route is on-link.
 */
static bool on_link(const struct xvi_ip *ip)
{
	struct ifaddrs *ifa, *i;
	bool found = false;
	int alen = ip->family == AF_INET6 ? 16 : 4, k;

	if (getifaddrs(&ifa))
		return false;
	for (i = ifa; i && !found; i = i->ifa_next) {
		const __u8 *a, *m;

		if (!i->ifa_addr || !i->ifa_netmask || i->ifa_addr->sa_family != ip->family ||
		    strcmp(i->ifa_name, d.ifname))
			continue;
		if (ip->family == AF_INET) {
			a = (const __u8 *)&((struct sockaddr_in *)i->ifa_addr)->sin_addr;
			m = (const __u8 *)&((struct sockaddr_in *)i->ifa_netmask)->sin_addr;
		} else {
			a = (const __u8 *)&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr;
			m = (const __u8 *)&((struct sockaddr_in6 *)i->ifa_netmask)->sin6_addr;
		}
		if (!memcmp(a, ip->a, alen))
			break;		/* our own address: nothing to resolve */
		for (k = 0; k < alen && !((a[k] ^ ip->a[k]) & m[k]); k++)
			;
		found = k == alen;
	}
	freeifaddrs(ifa);
	return found;
}

/*
 * Start resolution of the next hop for @q->addr, never blocking the loop.
 * The daemon routes the address itself and resolves only the on-link next
 * hop out of its interface, at a bounded rate: every new resolution is a
 * neighbour entry and a broadcast made with root's rights.  Refusals keep
 * the connection (the endpoint stays usable).
 */
static bool handle_resolve(struct xvid_ep *e, const struct xvi_broker_req *q)
{
	struct xvi_ip ip = { 0 }, nh = { 0 };
	char a[INET6_ADDRSTRLEN] = "?";
	long long now = xvi_now_ms();
	int err, alen = q->family == AF_INET6 ? 16 : 4;
	__u8 mac[6];

	ip.family = q->family;
	memcpy(ip.a, q->addr, alen);
	inet_ntop(ip.family, ip.a, a, sizeof(a));
	if (!is_unicast(&ip)) {
		reply(e, q->op, -EINVAL, -1, "%s is not a unicast address", a);
		return true;
	}
	print_quiet(true);
	err = xvi_route__lookup(d.ifc.ifindex, &ip, &nh, NULL);
	print_quiet(false);
	if (err) {
		reply(e, q->op, err, -1, err == -EXDEV ?
		      "%s is routed out of another interface, not %s" :
		      "no route to %s out of %s", a, d.ifname);
		return true;
	}
	if (!is_unicast(&nh) || !on_link(&nh)) {
		reply(e, q->op, -ENETUNREACH, -1, "%s is not reachable through a neighbour on "
		      "a subnet of %s", a, d.ifname);
		return true;
	}
	/* Polling the same next hop is free; each new one costs a token. */
	if (memcmp(&nh, &e->last_nh, sizeof(nh)) || now - e->last_nh_ms >= RESOLVE_REPOLL_MS) {
		if (!bucket_take(&e->resolve_tb, RESOLVE_BURST, RESOLVE_PER_SEC, now)) {
			reply(e, q->op, -EBUSY, -1, "too many resolutions on this endpoint "
			      "(%d, then %d per second): retry later", RESOLVE_BURST,
			      RESOLVE_PER_SEC);
			return true;
		}
		e->last_nh = nh;
		e->last_nh_ms = now;
	}
	/* Zero wait: start resolution if needed, never block the loop. */
	print_quiet(true);
	err = xvi_neigh__resolve(d.ifc.ifindex, &nh, mac, 0);
	print_quiet(false);
	if (err) {
		reply(e, q->op, -EAGAIN, -1, NULL);
		return true;
	}
	return !reply_mac(e, q->op, mac);
}

/* ---- extension handlers (ext.c does the loading and the generations) ------ */

static struct xvid_ep *ext_target(const struct xvi_tag *tag)
{
	int i;

	for (i = 0; i < MAX_CONNS; i++)
		if (d.eps[i].state == ST_LIVE && !memcmp(&d.eps[i].owner.tag, tag, sizeof(*tag)))
			return &d.eps[i];
	return NULL;
}

/* Handlers the endpoints of @uid have loaded. */
static int ext_count_uid(uid_t uid)
{
	int i, n = 0;

	for (i = 0; i < MAX_CONNS; i++)
		if (d.eps[i].state != ST_FREE && d.eps[i].id.uid == uid)
			n += __builtin_popcount(d.eps[i].ext.mask);
	return n;
}

/*
 * Before the first handler: the host end runs XDP, so that a handler's
 * XDP_TX reaches it and its guard (docs/KERNEL.md, facts 7 and 28), and
 * the client end's stack takes nothing a handler passes.  Both stay until
 * the pair goes.
 */
static int ext_attach(struct xvid_ep *t, char *why, size_t len)
{
	int err;

	if (t->ext.attached)
		return 0;
	err = tc_attach(t->client_ifx, BPF_TC_INGRESS, t->ext.stack_drop_fd);
	if (err) {
		snprintf(why, len, "cannot attach TC ingress of %s: %s", t->client, strerror(-err));
		return err;
	}
	err = bpf_xdp_attach(t->host_ifx, t->ext.host_pass_fd, XDP_FLAGS_DRV_MODE, NULL);
	if (err) {
		snprintf(why, len, "cannot attach XDP to %s: %s", t->host, strerror(-err));
		return err;
	}
	t->ext.attached = true;
	return 0;
}

/* The answer to an EXT_* request, then the verifier's @log if any. */
static void ext_reply(struct xvid_ep *e, __u16 op, int error, __u32 prog_id, const char *log,
		      const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static void ext_reply(struct xvid_ep *e, __u16 op, int error, __u32 prog_id, const char *log,
		      const char *fmt, ...)
{
	struct xvi_broker_resp r;
	va_list ap;

	resp_init(&r, op, error);
	r.prog_id = prog_id;
	r.log_len = log ? strlen(log) : 0;
	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(r.msg, sizeof(r.msg), fmt, ap);
		va_end(ap);
		if (error)
			log_info("pid %d uid %u: %s\n", (int)e->id.pid, e->id.uid, r.msg);
	}
	if (send_resp(e->conn, &r, -1) == 0 && r.log_len)
		send(e->conn, log, r.log_len, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/*
 * EXT_LOAD (with the object's fd, @obj_fd) or EXT_UNLOAD from @e, for an
 * endpoint of the same uid that the policy lets load handlers.  The
 * connection is done after the answer.
 */
static void handle_ext(struct xvid_ep *e, const struct xvi_broker_req *q, int obj_fd)
{
	struct xvid_ext_limits lim = { .insns = d.policy.ext_insns,
				       .map_bytes = d.policy.ext_map_bytes };
	__u32 h = q->ext_handler, prog_id = 0;
	char why[200] = "", tagstr[80], *log;
	struct xvid_ep *t;
	bool have;
	int fd, err;

	xvi_tag__format(&q->tag, tagstr, sizeof(tagstr));
	t = ext_target(&q->tag);
	if (!t) {
		ext_reply(e, q->op, -ENOENT, 0, NULL, "no open protected endpoint %s on %s: "
			  "handlers are loaded for an open endpoint of yours", tagstr, d.ifname);
		return;
	}
	if (t->id.uid != e->id.uid) {
		ext_reply(e, q->op, -EPERM, 0, NULL, "%s on %s belongs to uid %u, not to uid %u: "
			  "a handler runs for its owner's endpoints only", tagstr, d.ifname,
			  t->id.uid, e->id.uid);
		return;
	}
	if (!t->ext_ok || t->ext.ext_fd < 0) {
		ext_reply(e, q->op, -EPERM, 0, NULL, "the policy rule that allowed %s on %s does "
			  "not grant ext: ask the administrator to add 'ext' to it (xdp-vid(8))",
			  tagstr, d.ifname);
		return;
	}
	have = t->ext.mask & (1u << h);
	if (q->op == XVI_BROKER_EXT_UNLOAD) {
		if (!have) {
			ext_reply(e, q->op, -ENOENT, 0, NULL, "%s has no handler at index %u",
				  tagstr, h);
			return;
		}
		err = xvid_ext_swap(&t->ext, h, -1, why, sizeof(why));
		ext_reply(e, q->op, err, 0, NULL, "%s", err ? why : "");
		if (!err)
			log_info("%s: uid %u: handler %u of %s unloaded\n", d.ifname, e->id.uid, h,
				 tagstr);
		return;
	}
	if (have && !(q->ext_flags & XVI_BROKER_EXT_REPLACE)) {
		ext_reply(e, q->op, -EEXIST, 0, NULL, "%s has a handler at index %u already: "
			  "unload it first (or replace it)", tagstr, h);
		return;
	}
	if (!have && ext_count_uid(e->id.uid) >= (int)d.policy.ext_handlers_per_uid) {
		ext_reply(e, q->op, -EDQUOT, 0, NULL, "uid %u has %d handlers loaded on %s "
			  "(policy limit ext-handlers-per-uid %u)", e->id.uid,
			  ext_count_uid(e->id.uid), d.ifname, d.policy.ext_handlers_per_uid);
		return;
	}
	if (obj_fd < 0) {
		ext_reply(e, q->op, -EINVAL, 0, NULL, "EXT_LOAD comes with the object's fd");
		return;
	}
	/* A load forks and runs the verifier while the daemon waits: it is
	 * charged as an OPEN, to the uid and to everyone's bucket. */
	if (!open_allowed(e->id.uid) ||
	    !bucket_take(&d.open_tb, d.policy.total_opens_per_sec * OPEN_BURST_SECONDS,
			 d.policy.total_opens_per_sec, xvi_now_ms())) {
		ext_reply(e, q->op, -EAGAIN, 0, NULL, "uid %u loads handlers or opens endpoints "
			  "faster than policy limits opens-per-second or total-opens-per-second "
			  "allow on %s: retry later", e->id.uid, d.ifname);
		return;
	}
	err = ext_attach(t, why, sizeof(why));
	if (err) {
		ext_reply(e, q->op, err, 0, NULL, "%s", why);
		return;
	}
	log = malloc(XVI_BROKER_EXT_LOG_MAX);
	if (!log) {
		ext_reply(e, q->op, -ENOMEM, 0, NULL, "out of memory");
		return;
	}
	fd = xvid_ext_load(obj_fd, q->ext_prog, t->ext.ret_fd, &lim, &prog_id, log,
			   XVI_BROKER_EXT_LOG_MAX, why, sizeof(why));
	if (fd < 0) {
		ext_reply(e, q->op, fd, 0, log[0] ? log : NULL, "%s", why);
		free(log);
		return;
	}
	free(log);
	/* A new handler at an empty index starts from zero; a replacement keeps its index's counts. */
	if (!have)
		xvid_ext_zero(&t->ext, h);
	err = xvid_ext_swap(&t->ext, h, fd, why, sizeof(why));
	close(fd);	/* the table holds the program */
	if (err) {
		ext_reply(e, q->op, err, 0, NULL, "%s", why);
		return;
	}
	ext_reply(e, q->op, 0, prog_id, NULL, NULL);
	log_info("%s: uid %u: handler %u of %s is program %u (generation %u)\n", d.ifname,
		 e->id.uid, h, tagstr, prog_id, t->ext.gen);
}

/*
 * EXT_LIST from @e: the handlers of the endpoints of @e's uid (every
 * endpoint's for uid 0, who may read them from the maps anyway), with
 * their counters.  The connection is done after the answer.
 */
static void handle_ext_list(struct xvid_ep *e)
{
	struct xvi_broker_ext_entry *out;
	struct xvi_broker_resp r;
	__u32 n = 0, h;
	int i;

	out = calloc(XVI_BROKER_EXT_LIST_MAX, sizeof(*out));
	if (!out) {
		ext_reply(e, XVI_BROKER_EXT_LIST, -ENOMEM, 0, NULL, "out of memory");
		return;
	}
	for (i = 0; i < MAX_CONNS; i++) {
		struct xvid_ep *t = &d.eps[i];

		if (t->state != ST_LIVE || t->ext.ext_fd < 0 || (e->id.uid && t->id.uid != e->id.uid))
			continue;
		for (h = 0; h < XVI_EXT_MAX_HANDLERS && n < XVI_BROKER_EXT_LIST_MAX; h++) {
			if (!(t->ext.mask & (1u << h)))
				continue;
			out[n].tag = t->owner.tag;
			out[n].slot = t->slot;
			out[n].uid = t->id.uid;
			out[n].handler = h;
			if (xvid_ext_read(&t->ext, h, &out[n].prog_id, &out[n].c))
				continue;
			n++;
		}
	}
	resp_init(&r, XVI_BROKER_EXT_LIST, 0);
	r.ext_count = n;
	if (send_resp(e->conn, &r, -1) == 0 && n)
		send(e->conn, out, n * sizeof(*out), MSG_NOSIGNAL | MSG_DONTWAIT);
	free(out);
}

static enum xvid_req_stage stage_of(const struct xvid_ep *e)
{
	return e->state == ST_WAIT_OPEN ? XVID_REQ_WAIT_OPEN :
	       e->state == ST_WAIT_READY ? XVID_REQ_WAIT_READY : XVID_REQ_LIVE;
}

/* Read one message, once, into a fixed-size buffer; request.c validates it. */
static void handle_msg(struct xvid_ep *e)
{
	__u8 buf[sizeof(struct xvi_broker_req) + 1];
	int obj_fd = -1, mflags = 0;
	struct xvid_req_limits lim = { .ifname = d.ifname,
				       .max_segment = d.policy.max_segment };
	struct xvi_broker_req q;
	long long now;
	char why[200];
	__u16 op;
	bool keep;
	ssize_t n;
	int err;

	/* Before any work, even reading: every message costs the one thread. */
	now = xvi_now_ms();
	if (!bucket_take(&e->msg_tb, MSG_BURST, MSG_PER_SEC, now)) {
		e->msg_resume = now + 1000 / MSG_PER_SEC;
		if (!e->msg_limited++)
			log_info("pid %d: over %d messages per second: reading it slower\n",
				 (int)e->id.pid, MSG_PER_SEC);
		return;
	}
	/* Room for one fd, the EXT_LOAD object's; any other is closed unread. */
	n = xvi_broker__recv_fd(e->conn, buf, sizeof(buf), &obj_fd, MSG_DONTWAIT, &mflags);
	if (n == -EAGAIN || n == -EINTR)
		return;
	if (obj_fd >= 0) {
		__u16 rop = 0;

		if (n >= (ssize_t)offsetof(struct xvi_broker_req, size))
			memcpy(&rop, buf + offsetof(struct xvi_broker_req, op), sizeof(rop));
		if ((mflags & MSG_CTRUNC) || rop != XVI_BROKER_EXT_LOAD) {
			close(obj_fd);
			obj_fd = -1;
		}
	}
	if (n <= 0) {
		teardown(e, n ? "connection error" : "client closed the connection");
		return;
	}
	err = xvid_req_decode(buf, n, mflags & MSG_TRUNC, stage_of(e), &lim, &q, &op,
			      why, sizeof(why));
	if (err && obj_fd >= 0)
		close(obj_fd);
	if (err) {
		log_info("pid %d: refused a request: %s\n", (int)e->id.pid, why);
		reply(e, op, err, -1, "%s", why);
		teardown(e, "request refused or out of order");
		return;
	}
	switch (q.op) {
	case XVI_BROKER_EXT_LIST:
		handle_ext_list(e);
		teardown(e, "handler request answered");
		return;
	case XVI_BROKER_EXT_LOAD:
	case XVI_BROKER_EXT_UNLOAD:
		handle_ext(e, &q, obj_fd);
		if (obj_fd >= 0)
			close(obj_fd);
		teardown(e, "handler request answered");
		return;
	case XVI_BROKER_OPEN:
		keep = handle_open(e, &q);
		break;
	case XVI_BROKER_READY:
		keep = handle_ready(e, &q);
		break;
	default:
		keep = handle_resolve(e, &q);
		break;
	}
	if (!keep)
		teardown(e, "request refused");
}

/* At most one warning of a kind (*last) a second: clients choose their rate. */
static bool warn_ok(long long *last)
{
	long long now = xvi_now_ms();

	if (now - *last < 1000)
		return false;
	*last = now;
	return true;
}

/*
 * Accept one connection.  false: nothing more to accept now.  Out of file
 * descriptors, the connection stays queued and poll would report it again
 * at once: the listening socket rests for ACCEPT_BACKOFF_MS instead.
 */
static bool accept_one(void)
{
	static long long last, last_fd;	/* refusals, running out of fds */
	struct xvid_client_id id;
	struct xvid_ep *e = NULL;
	char why[200];
	int fd, i, err;

	fd = accept4(d.lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0) {
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
			d.accept_resume = xvi_now_ms() + ACCEPT_BACKOFF_MS;
			if (warn_ok(&last_fd))
				log_warn("cannot accept connections: %s; pausing for %d ms (raise "
					 "LimitNOFILE / ulimit -n of xdp-vid)\n", strerror(errno),
					 ACCEPT_BACKOFF_MS);
		}
		return false;
	}
	err = xvid_peer_identify(fd, &id, why, sizeof(why));
	if (err) {
		if (warn_ok(&last))
			log_warn("refused a connection of pid %d uid %u: %s\n", (int)id.pid,
				 id.peer_uid, why);
		xvid_peer_free(&id);
		refuse_conn(fd, err, "%s", why);
		return true;
	}
	/*
	 * A uid no rule allows anything takes no entry in any table.  Root
	 * is admitted for EXT_LIST (every endpoint's handlers, which it
	 * could read from the maps anyway); its OPEN still needs a rule.
	 */
	if (id.uid && !xvid_policy_admits(&d.policy, &id)) {
		if (warn_ok(&last))
			log_warn("refused a connection of pid %d uid %u: no rule allows it "
				 "anything\n", (int)id.pid, id.uid);
		xvid_policy_explain(&d.policy, &id, d.ifname, why, sizeof(why));
		refuse_conn(fd, -EPERM, "%s", why);
		xvid_peer_free(&id);
		return true;
	}
	if (count_conns(id.uid) >= (int)d.policy.max_conns_per_uid) {
		if (warn_ok(&last))
			log_warn("uid %u has %u connections: refusing more (policy limit "
				 "connections-per-uid)\n", id.uid, d.policy.max_conns_per_uid);
		refuse_conn(fd, -EMFILE, "uid %u already has %u connections to the broker of %s "
			    "(policy limit connections-per-uid)", id.uid,
			    d.policy.max_conns_per_uid, d.ifname);
		xvid_peer_free(&id);
		return true;
	}
	if (count_pending() >= (int)d.policy.max_pending) {
		if (warn_ok(&last))
			log_warn("%u connections wait for their OPEN: refusing more (policy "
				 "limit pending-connections)\n", d.policy.max_pending);
		refuse_conn(fd, -EAGAIN, "the broker of %s has %u connections waiting to open "
			    "(policy limit pending-connections): retry later", d.ifname,
			    d.policy.max_pending);
		xvid_peer_free(&id);
		return true;
	}
	for (i = 0; i < MAX_CONNS && !e; i++)
		if (d.eps[i].state == ST_FREE)
			e = &d.eps[i];
	if (!e) {
		if (warn_ok(&last))
			log_warn("%d connections open: refusing another\n", MAX_CONNS);
		refuse_conn(fd, -EAGAIN, "the broker of %s serves %d connections: retry later",
			    d.ifname, MAX_CONNS);
		xvid_peer_free(&id);
		return true;
	}
	ep_reset(e);
	e->id = id;
	e->conn = fd;
	e->state = ST_WAIT_OPEN;
	e->deadline = xvi_now_ms() + OPEN_TIMEOUT_MS;
	log_debug("connection from pid %d uid %u (%d groups)\n", (int)id.pid, id.uid,
		  id.ngroups);
	return true;
}

/* Deadlines, and clients that died without closing (the fd lives elsewhere). */
static void tick(void)
{
	static unsigned int ticks;
	static long long next;
	long long now = xvi_now_ms();
	int i;

	if (now < next)
		return;
	next = now + TICK_MS;

	if (++ticks % MAPS_CHECK_TICKS == 0) {
		check_datapath(NULL);
		xvid_veth_retry();
	}

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

/* ---- the interface's addresses change ----------------------------------- */

/* Tell the client why its endpoint goes (it reads this when a send fails). */
static void revoke_ep(struct xvid_ep *e, int error, const char *why)
{
	log_info("%s: pid %d uid %u: %s revoked: %s\n", d.ifname, (int)e->id.pid, e->id.uid,
		 e->tagstr, why);
	reply(e, XVI_BROKER_REVOKE, error, -1, "%s", why);
	teardown(e, why);
}

/*
 * A wildcard endpoint may send from the interface's addresses of its
 * family: rewrite its guard's list.  Fields other than the addresses are
 * read back and kept as they are.
 */
static int guard_follow(struct xvid_ep *e)
{
	int family = e->owner.tag.kind == XVI_TAG_UDP6 ? AF_INET6 : AF_INET;
	struct xvi_guard_cfg cfg, now;
	__u32 zero = 0;
	int n;

	if (bpf_map_lookup_elem(e->guard_cfg, &zero, &cfg))
		return -errno;
	now = cfg;
	n = xvid_iface_addrs(d.ifname, family, now.addrs, XVI_GUARD_MAX_ADDRS);
	if (n < 0)
		return n;
	memset(now.addrs[n], 0, sizeof(now.addrs) - n * sizeof(now.addrs[0]));
	now.naddrs = n;
	if (!memcmp(&now, &cfg, sizeof(cfg)))
		return 0;
	if (bpf_map_update_elem(e->guard_cfg, &zero, &now, BPF_EXIST))
		return -errno;
	log_info("%s: %s: allowed sources now the interface's %d address(es)\n", d.ifname,
		 e->tagstr, n);
	return 0;
}

/*
 * An address came or went on the interface: wildcard endpoints' guards
 * follow; an endpoint bound to an address the interface no longer has is
 * revoked (its guard would otherwise let it send as that address, which
 * may now be someone else's).
 */
static void addrs_changed(int what)
{
	static const __u8 nul[16];
	char why[160], a[INET6_ADDRSTRLEN];
	int i, err;

	/*
	 * Wildcard endpoints take datagrams to any of the host's addresses
	 * (the datapath's local address table): keep the table current
	 * between opens, whichever interface the address came or went on.
	 */
	if (what & XVID_ADDR_ANY) {
		err = d.ctl ? xvi_ctl__sync_local_addrs(d.ctl) : 0;
		if (err)
			log_warn("%s: cannot update the datapath's local addresses: %s\n",
				 d.ifname, strerror(-err));
	}
	if (!(what & XVID_ADDR_OURS))
		return;
	for (i = 0; i < MAX_CONNS; i++) {
		struct xvid_ep *e = &d.eps[i];
		const struct xvi_tag *t = &e->owner.tag;

		if (e->state == ST_FREE || e->guard_cfg < 0 || t->kind == XVI_TAG_RAW)
			continue;
		if (memcmp(t->addr, nul, 16)) {
			if (addr_on_iface(t))
				continue;
			inet_ntop(t->kind == XVI_TAG_UDP6 ? AF_INET6 : AF_INET, t->addr, a,
				  sizeof(a));
			snprintf(why, sizeof(why), "address %s was removed from %s", a, d.ifname);
			revoke_ep(e, -EADDRNOTAVAIL, why);
			continue;
		}
		err = guard_follow(e);
		if (err) {
			snprintf(why, sizeof(why), "the allowed source addresses cannot follow "
				 "%s's (%s)", d.ifname, strerror(-err));
			revoke_ep(e, err, why);
		}
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

/*
 * One daemon per interface and network namespace, whatever its run
 * directory: two daemons would revoke each other's endpoints.  The lock
 * lives in /run/xdp-vi/locks/<ifname>@<netns inode>.lock always.
 */
static int take_lock(void)
{
	char name[IF_NAMESIZE + 32];
	struct stat st, now;
	int dfd, fd, tries;

	if (stat("/proc/self/ns/net", &st))
		return -errno;
	snprintf(name, sizeof(name), "%s@%llu.lock", d.ifname, (unsigned long long)st.st_ino);
	snprintf(d.lock_path, sizeof(d.lock_path), "%s/locks/%s", XVI_BROKER_RUN_DIR, name);
	fd = xvi_rundir_open(XVI_BROKER_RUN_DIR, 0755);
	if (fd < 0)
		return fd;
	close(fd);
	dfd = xvi_rundir_open(XVI_BROKER_RUN_DIR "/locks", 0700);
	if (dfd < 0)
		return dfd;
	for (tries = 0; tries < 3; tries++) {
		fd = openat(dfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB)) {
			log_warn("%s: another xdp-vid serves this interface (%s is locked)\n",
				 d.ifname, d.lock_path);
			if (fd >= 0)
				close(fd);
			close(dfd);
			return -EBUSY;
		}
		/* the previous holder unlinks it on exit: ours must still be the file */
		if (!fstat(fd, &st) && !fstatat(dfd, name, &now, AT_SYMLINK_NOFOLLOW) &&
		    st.st_ino == now.st_ino && st.st_dev == now.st_dev)
			break;
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		close(dfd);
		return -EBUSY;
	}
	d.lock_fd = fd;
	d.lock_dir = dfd;
	snprintf(d.lock_name, sizeof(d.lock_name), "%s", name);
	return 0;
}

static int listen_socket(void)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	const char *dir = getenv("XVI_RUN_DIR");
	int err, n;
	mode_t old;

	if (!dir || !*dir)
		dir = XVI_BROKER_RUN_DIR;
	err = xvi_broker__path(d.ifname, d.sock_path, sizeof(d.sock_path));
	if (err)
		return err;
	d.sock_name = strrchr(d.sock_path, '/') + 1;
	d.run_fd = xvi_rundir_open(dir, 0755);
	if (d.run_fd < 0)
		return d.run_fd;
	err = take_lock();
	if (err)
		return err;
	/* the lock fd stays open (and locked) for the daemon's life */
	unlinkat(d.run_fd, d.sock_name, 0);
	d.lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (d.lfd < 0)
		return -errno;
	/* Through the checked directory's fd: the path may not be swapped meanwhile. */
	n = snprintf(sun.sun_path, sizeof(sun.sun_path), "/proc/self/fd/%d/%s", d.run_fd,
		     d.sock_name);
	if (n < 0 || (size_t)n >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	/* Anyone may connect (mode 0666): SO_PEERCRED and the policy decide.
	 * The mode comes from the umask at bind, never from a chmod by path. */
	old = umask(0111);
	err = bind(d.lfd, (struct sockaddr *)&sun, sizeof(sun)) ? -errno : 0;
	umask(old);
	if (!err && listen(d.lfd, 64))
		err = -errno;
	if (err) {
		log_warn("cannot listen on %s: %s\n", d.sock_path, strerror(-err));
		return err;
	}
	return 0;
}

/*
 * Every connection costs an fd, and one being set up about a dozen (veth
 * lookups, programs, maps, sockets): take the whole hard limit.
 */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			log_warn("cannot raise RLIMIT_NOFILE to %llu: %s\n",
				 (unsigned long long)rl.rlim_max, strerror(errno));
	}
	if (rl.rlim_cur < (rlim_t)MAX_CONNS * 16)
		log_warn("RLIMIT_NOFILE is %llu: fewer fds than %d connections may need; some "
			 "set-ups will fail (raise LimitNOFILE= or ulimit -Hn)\n",
			 (unsigned long long)rl.rlim_cur, MAX_CONNS);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: xdp-vid [-v] [--policy FILE | --builtin-policy] [--group GROUP]\n"
		"               [--run-dir DIR] [--bpffs DIR] IFACE\n"
		"Endpoint broker: protected xdp-vi endpoints on IFACE for unprivileged\n"
		"processes.  Needs root and the datapath ('xdp-vi attach IFACE').\n"
		"  --policy FILE   rules (default %s; built-in policy if missing)\n"
		"  --builtin-policy  the built-in policy whatever the file says\n"
		"  --group GROUP   whom the built-in policy allows (default %s)\n"
		"  --run-dir DIR   where the socket goes (default %s, env XVI_RUN_DIR)\n"
		"  --bpffs DIR     bpffs of the datapath pins (default /sys/fs/bpf)\n"
		"  -v              more messages (-vv: libbpf too)\n",
		XVID_DEFAULT_POLICY, XVID_DEFAULT_GROUP, XVI_BROKER_RUN_DIR);
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "policy", required_argument, NULL, 'p' },
		{ "builtin-policy", no_argument, NULL, 'B' },
		{ "group", required_argument, NULL, 'g' },
		{ "run-dir", required_argument, NULL, 'r' },
		{ "bpffs", required_argument, NULL, 'b' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *policy = XVID_DEFAULT_POLICY, *group = XVID_DEFAULT_GROUP;
	bool explicit_policy = false;
	struct sigaction sa = { .sa_handler = on_signal };
	static struct pollfd pfds[2 + LINGER_MAX + MAX_CONNS];
	static int idx[2 + LINGER_MAX + MAX_CONNS];
	long long now, wait;
	int c, i, n, err;

	while ((c = getopt_long(argc, argv, "p:r:b:vh", lopts, NULL)) != -1) {
		switch (c) {
		case 'p': policy = optarg; explicit_policy = true; break;
		case 'B': policy = NULL; break;
		case 'g': group = optarg; break;
		case 'r': setenv("XVI_RUN_DIR", optarg, 1); break;
		case 'b': d.copts.bpffs = optarg; break;
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
	d.copts.sz = sizeof(d.copts);
	d.lfd = -1;
	d.run_fd = -1;
	d.lock_fd = -1;
	d.lock_dir = -1;
	for (i = 0; i < MAX_CONNS; i++)
		ep_reset(&d.eps[i]);
	for (i = 0; i < LINGER_MAX; i++)
		d.linger[i].fd = -1;
	print_setup(&(struct print_opts){ .verbosity = &xvid_verbose, .prog = "xdp-vid",
					  .info_from = 1, .debug_from = 2, .libbpf = true });
	if (xvid_verbose == 0)
		xvid_verbose = 1;	/* info by default: a daemon's log is its record */

	if (xvid_policy_load(&d.policy, policy, explicit_policy, group))
		return 1;
	raise_nofile();
	for (i = 0; i < FD_RESERVE; i++)
		fd_reserve[i] = -1;
	fd_reserve_take();
	d.start_time = xvi_ctl__proc_start_time(getpid());
	err = xvid_peer_init();
	if (err) {
		log_warn("cannot read /proc/self/ns: %s (is /proc mounted?)\n", strerror(-err));
		return 1;
	}
	if (xvi_iface__query(d.ifname, &d.ifc))
		return 1;
	d.ctl = xvi_ctl__open(d.ifname, &d.copts);
	if (!d.ctl)
		return 1;
	d.prog_id = xvi_ctl__prog_id(d.ctl) ?: attached_prog_id();
	/* Subscribed before any endpoint exists: no address change is missed. */
	d.addr_fd = xvid_addr_watch_open();
	if (d.addr_fd < 0) {
		log_warn("cannot follow the addresses of %s (rtnetlink): %s\n", d.ifname,
			 strerror(-d.addr_fd));
		return 1;
	}
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
		/* poll ignores a negative fd: the listening socket rests */
		pfds[n].fd = xvi_now_ms() < d.accept_resume ? -1 : d.lfd;
		pfds[n].events = POLLIN;
		idx[n++] = -1;
		pfds[n].fd = d.addr_fd;
		pfds[n].events = POLLIN;
		idx[n++] = -1;
		/* only fds in use: poll refuses more entries than RLIMIT_NOFILE */
		for (i = 0; i < LINGER_MAX; i++) {
			if (d.linger[i].fd < 0)
				continue;
			pfds[n].fd = d.linger[i].fd;
			pfds[n].events = POLLIN | POLLRDHUP;
			idx[n++] = IDX_LINGER - i;
		}
		now = xvi_now_ms();
		wait = TICK_MS;
		for (i = 0; i < MAX_CONNS; i++) {
			struct xvid_ep *e = &d.eps[i];

			if (e->state == ST_FREE)
				continue;
			pfds[n].fd = e->conn;
			/* over its message rate: not read (its sends block) until then */
			pfds[n].events = now < e->msg_resume ? POLLRDHUP : POLLIN | POLLRDHUP;
			if (now < e->msg_resume && e->msg_resume - now < wait)
				wait = e->msg_resume - now;
			idx[n++] = i;
		}
		if (poll(pfds, n, wait) < 0 && errno != EINTR) {
			log_warn("poll: %s\n", strerror(errno));
			break;
		}
		/* before the requests: no OPEN is served on addresses that left */
		if (pfds[1].revents & POLLIN)
			addrs_changed(xvid_addr_watch_read(d.ifc.ifindex));
		for (i = 2; i < n; i++) {
			if (idx[i] > IDX_LINGER)
				continue;
			linger_poll(IDX_LINGER - idx[i], pfds[i].revents, xvi_now_ms());
		}
		for (i = 2; i < n; i++) {
			struct xvid_ep *e = idx[i] >= 0 ? &d.eps[idx[i]] : NULL;

			if (!e || !pfds[i].revents || e->state == ST_FREE || e->conn != pfds[i].fd)
				continue;
			if (pfds[i].revents & POLLIN)
				handle_msg(e);
			/* queued messages were read above; the peer is gone */
			if (e->state != ST_FREE && (pfds[i].revents & (POLLHUP | POLLERR | POLLRDHUP)))
				teardown(e, "client closed the connection");
		}
		if (pfds[0].revents & POLLIN)
			for (i = 0; i < 16 && accept_one(); i++)
				;
		tick();
	}

	for (i = 0; i < MAX_CONNS; i++)
		teardown(&d.eps[i], "xdp-vid is stopping");
	close(d.lfd);
	unlinkat(d.run_fd, d.sock_name, 0);
	/* still locked: a newcomer that opened the old file sees it unlinked */
	unlinkat(d.lock_dir, d.lock_name, 0);
	close(d.lock_fd);
	xvi_ctl__close(d.ctl);
	log_info("%s: stopped\n", d.ifname);
	return 0;
}
