// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* xdp-vi status / stats */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/if_xdp.h>

#include "cmd.h"
#include "ctl/ctl.h"
#include "handlers.h"
#include "broker/broker.h"
#include "xvi_ext.h"
#include "json.h"
#include "nl/neigh.h"
#include "nl/netdev.h"

#ifndef AF_XDP
#define AF_XDP 44
#endif
#ifndef SOL_XDP
#define SOL_XDP 283
#endif

/* Counter names for text and JSON, bound to the struct fields by offset. */
struct counter_name {
	const char *name;
	size_t off;
};

#define EPC(f) { #f, offsetof(struct xvi_ep_counters, f) }
static const struct counter_name ep_fields[] = {
	EPC(rx_frames), EPC(rx_bytes), EPC(drop_bad_ip_csum), EPC(drop_bad_l4_csum),
	EPC(drop_malformed), EPC(drop_no_socket), EPC(drop_meta), EPC(rx_csum_partial),
	{ NULL },
};
/* TX guard of protected endpoints (host end of the veth pair). */
static const struct counter_name guard_fields[] = {
	EPC(tx_guard_pass), EPC(drop_guard_mac), EPC(drop_guard_ip), EPC(drop_guard_port),
	EPC(drop_guard_tag), EPC(drop_guard_other), EPC(drop_guard_group),
	EPC(drop_guard_ip_options), EPC(drop_guard_dscp), EPC(drop_guard_ctl_port),
	EPC(drop_guard_len), EPC(drop_host_egress), EPC(drop_client_meta), { NULL },
};
/* Active messages to direct endpoints (docs/EXTENSIONS.md). */
static const struct counter_name ext_fields[] = {
	EPC(ext_msgs), EPC(ext_missing), EPC(ext_bad_index), EPC(ext_bad_version),
	EPC(ext_delivered), { NULL },
};
#define GC(f) { #f, offsetof(struct xvi_global_counters, f) }
static const struct counter_name global_fields[] = {
	GC(rx_frames), GC(redirected), GC(passed), GC(dropped), GC(no_endpoint),
	GC(malformed), GC(fragments), GC(group_dst), GC(other_host), GC(vlan_protected),
	GC(not_local), GC(ext_stray), GC(trace_lost),
	GC(spread_no_queue), GC(port_hooked), GC(port_hook_missing), { NULL },
};
/* The IP router (docs/EXTENSIONS.md): shown in text when routing is on. */
static const struct counter_name router_fields[] = {
	GC(rt_forwarded), GC(rt_pass_ttl), GC(rt_pass_frag), GC(rt_pass_options),
	GC(rt_pass_csum_partial), GC(rt_pass_local), GC(rt_pass_no_neigh), GC(rt_pass_mtu),
	GC(rt_pass_disabled), GC(rt_pass_no_egress), GC(rt_pass_other), { NULL },
};
#define XC(f) { #f, offsetof(struct xdp_statistics, f) }
static const struct counter_name xsk_fields[] = {
	XC(rx_dropped), XC(rx_invalid_descs), XC(tx_invalid_descs), XC(rx_ring_full),
	XC(rx_fill_ring_empty_descs), XC(tx_ring_empty_descs), { NULL },
};

static __u64 field(const void *s, const struct counter_name *c)
{
	return *(const __u64 *)((const char *)s + c->off);
}

struct ep_sample {
	__u32 slot;
	struct xvi_slot_owner owner;
	struct xvi_ep_counters c;
	int nh;				/* handlers with a program or counts */
	struct handler_sample h[XVI_EXT_MAX_HANDLERS];
	bool have_xsk;
	struct xdp_statistics xsk;
	/* Protected: the host end the datapath redirects into, and whether
	 * it takes redirected frames now (docs/KERNEL.md, fact 7): 1, 0, or
	 * -1 when the kernel cannot say. */
	bool have_dev;
	struct xvi_iface dev;
	int dev_accepts;
};

struct if_sample {
	char ifname[IF_NAMESIZE];
	char pin_dir[512];
	bool pinned;			/* pin_dir exists */
	bool via_pins;			/* maps found through the pins, not the program */
	int prog_err;			/* 0, -ENOENT (not attached), -ENODEV (gone) */
	struct xvi_prog_info prog;
	struct xvi_config cfg;
	struct xvi_iface ifc;		/* the interface's own drop counters */
	int napi_err;			/* 0: napi_threaded says */
	bool napi_threaded;
	struct xvi_global_counters g;
	int nep;
	struct ep_sample ep[XVI_MAX_ENDPOINTS];
	double t;			/* CLOCK_MONOTONIC seconds */
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = 1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * The kernel's own drop counters of an endpoint's socket: borrow the fd from
 * its owner (pidfd_getfd) and ask XDP_STATISTICS.  Best effort: any failure
 * (owner gone, no ptrace right, fd number reused) just means no numbers.
 */
static bool xsk_stats(const struct xvi_slot_owner *o, struct xdp_statistics *st)
{
	socklen_t len = sizeof(*st);
	int pidfd, fd, domain = 0;
	socklen_t dlen = sizeof(domain);
	bool ok = false;

	if (o->xsk_fd < 0)
		return false;
	pidfd = syscall(SYS_pidfd_open, o->pid, 0);
	if (pidfd < 0)
		return false;
	/* the pidfd pins the process: if it is still the owner now, fd is its */
	if (!xvi_ctl__owner_alive(o->pid, o->start_time))
		goto out;
	fd = syscall(SYS_pidfd_getfd, pidfd, o->xsk_fd, 0);
	if (fd < 0)
		goto out;
	memset(st, 0, sizeof(*st));
	if (!getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &dlen) && domain == AF_XDP &&
	    !getsockopt(fd, SOL_XDP, XDP_STATISTICS, st, &len))
		ok = true;
	close(fd);
out:
	close(pidfd);
	return ok;
}

/*
 * The device a protected endpoint's frames are redirected to, if any, and
 * whether it accepts them: a frame the device refuses is dropped by the
 * kernel and counted in the interface's rx_dropped, nowhere else.
 */
static bool dev_stats(struct xvi_ctl *ctl, struct ep_sample *e)
{
	__u64 feat;
	int ifindex;

	if (xvi_ctl__dev_of(ctl, e->slot, &ifindex) || ifindex <= 0 ||
	    xvi_iface__query_index(ifindex, &e->dev))
		return false;
	e->dev_accepts = xvi_netdev__xdp_features(ifindex, &feat) ? -1 :
			 !!(feat & XVI_NETDEV_XDP_ACT_NDO_XMIT);
	return true;
}

/*
 * Protected endpoints run their handlers on their client ends, in tables
 * xdp-vid holds: their counters come from it (EXT_LIST), when it serves
 * the interface.  Nothing shown for them otherwise.
 */
static void client_end_handlers(struct if_sample *s)
{
	struct xvi_ext_opts opts = { .sz = sizeof(opts) };
	struct xvi_ext_stats *st;
	bool any = false;
	int n, i, k;

	for (i = 0; i < s->nep; i++)
		any |= s->ep[i].owner.mode == XVI_EP_MODE_PROTECTED;
	if (!any || !xvi_broker__listening(s->ifname))
		return;
	st = calloc(XVI_BROKER_EXT_LIST_MAX, sizeof(*st));
	if (!st)
		return;
	n = xvi_ext__list(s->ifname, st, XVI_BROKER_EXT_LIST_MAX, &opts);
	for (k = 0; k < n && k < XVI_BROKER_EXT_LIST_MAX; k++) {
		for (i = 0; i < s->nep; i++) {
			struct ep_sample *e = &s->ep[i];
			struct handler_sample *h;

			if (e->slot != st[k].info.slot || e->owner.mode != XVI_EP_MODE_PROTECTED ||
			    e->nh >= XVI_EXT_MAX_HANDLERS)
				continue;
			h = &e->h[e->nh++];
			h->index = st[k].info.handler;
			h->prog_id = st[k].info.prog_id;
			h->c.runs = st[k].runs;
			memcpy(h->c.act, st[k].act, sizeof(h->c.act));
		}
	}
	free(st);
}

static int take_sample(const char *ifname, const struct xvi_ctl_opts *opts, bool gc,
		       bool want_xsk, struct if_sample *s)
{
	struct xvi_slot_owner o;
	struct xvi_ctl *ctl;
	__u32 slot = XVI_CTL_SLOT_START;
	int err;

	memset(s, 0, sizeof(*s));
	snprintf(s->ifname, sizeof(s->ifname), "%s", ifname);
	if (!xvi_ctl__pin_dir(ifname, opts, s->pin_dir, sizeof(s->pin_dir)) &&
	    !access(s->pin_dir, F_OK))
		s->pinned = true;
	s->prog_err = xvi_ctl__prog_info(ifname, &s->prog);
	if (s->prog_err) {
		s->prog_err = -errno;
		/* Not attached, or gone: shown as such if pins are left. */
		if ((s->prog_err == -ENOENT || s->prog_err == -ENODEV) && s->pinned)
			return 0;
		if (s->prog_err == -ENOENT)
			fprintf(stderr, "xdp-vi: %s: the datapath is not attached\n", ifname);
		else if (s->prog_err == -ENODEV)
			fprintf(stderr, "xdp-vi: %s: no such interface\n", ifname);
		return s->prog_err;
	}
	s->napi_err = xvi_ctl__napi_threaded(ifname, &s->napi_threaded);
	ctl = xvi_ctl__open(ifname, opts);
	if (!ctl)
		return -errno;
	s->via_pins = !xvi_ctl__prog_id(ctl);
	if (gc && xvi_ctl__gc(ctl) < 0)
		fprintf(stderr, "xdp-vi: %s: garbage collection failed: %s\n", ifname,
			strerror(errno));
	s->t = now_s();
	err = xvi_ctl__config(ctl, &s->cfg);
	if (!err)
		err = xvi_ctl__global_counters(ctl, &s->g);
	while (!err && (err = xvi_ctl__next_owner(ctl, &slot, &o)) == 1) {
		struct ep_sample *e = &s->ep[s->nep++];

		e->slot = slot;
		e->owner = o;
		err = xvi_ctl__ep_counters(ctl, slot, &e->c);
		if (!err && o.mode == XVI_EP_MODE_DIRECT) {
			e->nh = handler_samples(ctl, slot, e->h);
			err = e->nh < 0 ? e->nh : 0;
		}
		if (!err && want_xsk)
			e->have_xsk = xsk_stats(&o, &e->xsk);
		if (!err)
			e->have_dev = dev_stats(ctl, e);
	}
	if (!err)
		client_end_handlers(s);
	if (!err && xvi_iface__query_index(s->prog.ifindex, &s->ifc))
		memset(&s->ifc, 0, sizeof(s->ifc));
	xvi_ctl__close(ctl);
	if (err < 0)
		fprintf(stderr, "xdp-vi: %s: reading the maps failed: %s\n", ifname,
			strerror(-err));
	return err < 0 ? err : 0;
}

/* Interfaces to show: the one named, or every one that runs the datapath. */
static int list_ifaces(const struct xvi_cfg *cfg, const struct xvi_ctl_opts *opts,
		       char ***names)
{
	int n;

	if (cfg->ifname) {
		*names = calloc(2, sizeof(char *));
		if (!*names || !((*names)[0] = strdup(cfg->ifname)))
			return -ENOMEM;
		return 1;
	}
	n = xvi_ctl__list_ifaces(opts, names);
	if (n < 0)
		fprintf(stderr, "xdp-vi: cannot list the interfaces: %s\n", strerror(-n));
	return n;
}

static const char *mode_str(__u32 mode)
{
	return mode == XVI_EP_MODE_DIRECT ? "direct" :
	       mode == XVI_EP_MODE_PROTECTED ? "protected" : "unknown";
}

static const char *bind_str(const struct xvi_slot_owner *o)
{
	/* protected: the socket is the client's, always copy mode on a veth */
	if (o->mode == XVI_EP_MODE_PROTECTED && o->bind_flags)
		return "copy";
	if (o->xsk_fd < 0)
		return "pending";	/* claimed, socket not published yet */
	if (o->bind_flags & XDP_ZEROCOPY)
		return "zerocopy";
	if (o->bind_flags & XDP_COPY)
		return "copy";
	return "unknown";
}

static const char *prog_state(const struct if_sample *s)
{
	return !s->prog_err ? "attached" : s->prog_err == -ENODEV ? "interface gone" :
	       "program missing";
}

/* ---- JSON ------------------------------------------------------------ */

static void json_counters(struct json *j, const char *key, const void *s,
			  const struct counter_name *names)
{
	json_obj_open(j, key);
	for (; names->name; names++)
		json_u64(j, names->name, field(s, names));
	json_obj_close(j);
}

static void json_prog(struct json *j, const struct if_sample *s)
{
	json_str(j, "ifname", s->ifname);
	if (s->pinned)
		json_str(j, "pin_dir", s->pin_dir);
	else
		json_null(j, "pin_dir");
	json_bool(j, "attached", !s->prog_err);
	json_str(j, "state", prog_state(s));
	if (!s->prog_err) {
		json_int(j, "ifindex", s->prog.ifindex);
		json_u64(j, "prog_id", s->prog.prog_id);
		json_str(j, "mode", s->prog.generic ? "generic" : "native");
		json_bool(j, "multiprog", s->prog.multiprog);
		json_str(j, "maps_from", s->via_pins ? "pins" : "program");
	}
	json_bool(j, "local_link", s->cfg.flags & XVI_CFG_LOCAL_LINK);
	if (!s->prog_err && !s->napi_err)
		json_bool(j, "napi_threaded", s->napi_threaded);
	else
		json_null(j, "napi_threaded");
}

static void json_endpoint_head(struct json *j, const struct ep_sample *e)
{
	char tag[80];

	xvi_tag__format(&e->owner.tag, tag, sizeof(tag));
	json_u64(j, "slot", e->slot);
	json_str(j, "tag", tag);
}

/* A device's name and the kernel's drop counters. */
static void json_device(struct json *j, const char *key, const struct xvi_iface *d)
{
	json_obj_open(j, key);
	json_str(j, "ifname", d->name);
	json_int(j, "ifindex", d->ifindex);
	json_u64(j, "mtu", d->mtu);
	json_u64(j, "rx_dropped", d->rx_dropped);
	json_u64(j, "tx_dropped", d->tx_dropped);
}

static void status_json(struct json *j, const struct if_sample *s)
{
	int i;

	json_obj_open(j, NULL);
	json_prog(j, s);
	json_counters(j, "global", &s->g, global_fields);
	json_counters(j, "router", &s->g, router_fields);
	json_bool(j, "tracing", s->cfg.flags & XVI_CFG_TRACE);
	json_device(j, "device", &s->ifc);
	json_obj_close(j);
	json_arr_open(j, "endpoints");
	for (i = 0; i < s->nep; i++) {
		const struct ep_sample *e = &s->ep[i];

		json_obj_open(j, NULL);
		json_endpoint_head(j, e);
		json_str(j, "mode", mode_str(e->owner.mode));
		json_u64(j, "pid", e->owner.pid);
		json_u64(j, "uid", e->owner.uid);
		if (e->owner.queue_id == XVI_QUEUE_NONE)
			json_null(j, "queue");
		else
			json_u64(j, "queue", e->owner.queue_id);
		/* One of a port's endpoints, one per queue (XVI_EP_SPREAD). */
		json_bool(j, "spread", e->owner.tag.queue != 0);
		json_str(j, "bind", bind_str(&e->owner));
		json_counters(j, "counters", &e->c, ep_fields);
		if (e->owner.mode == XVI_EP_MODE_PROTECTED)
			json_counters(j, "guard", &e->c, guard_fields);
		else
			json_null(j, "guard");
		json_counters(j, "ext", &e->c, ext_fields);
		json_arr_open(j, "handlers");
		for (int h = 0; h < e->nh; h++)
			handler_json(j, &e->h[h]);
		json_arr_close(j);
		if (e->have_xsk)
			json_counters(j, "socket", &e->xsk, xsk_fields);
		else
			json_null(j, "socket");
		if (e->have_dev) {
			json_device(j, "host_end", &e->dev);
			if (e->dev_accepts < 0)
				json_null(j, "accepts_redirect");
			else
				json_bool(j, "accepts_redirect", e->dev_accepts);
			json_obj_close(j);
		} else {
			json_null(j, "host_end");
		}
		json_obj_close(j);
	}
	json_arr_close(j);
	json_obj_close(j);
}

/* ---- text --------------------------------------------------------------- */

static void text_counters(const char *label, const void *s, const struct counter_name *n)
{
	printf("%s", label);
	for (; n->name; n++)
		printf("  %s %llu", n->name, (unsigned long long)field(s, n));
	printf("\n");
}

static void text_prog(const struct if_sample *s)
{
	if (!s->prog_err)
		printf("%s: prog %s id %u, %s mode, %s; %s%s\n", s->ifname, XVI_PROG_NAME,
		       s->prog.prog_id, s->prog.generic ? "generic" : "native",
		       s->prog.multiprog ? "multiprog" : "single program",
		       s->pinned ? "pins " : "maps not pinned", s->pinned ? s->pin_dir : "");
	else
		printf("%s: %s, stale pins %s (clean up: xdp-vi detach %s)\n", s->ifname,
		       prog_state(s), s->pin_dir, s->ifname);
}

static void status_text(const struct if_sample *s)
{
	char tag[80];
	int i;

	text_prog(s);
	if (s->prog_err)
		return;
	if (s->cfg.flags & XVI_CFG_LOCAL_LINK)
		printf("  local link: partial UDP checksums from local kernels accepted "
		       "(rx_csum_partial)\n");
	if (!s->napi_err && s->napi_threaded)
		printf("  NAPI: threaded (receive work in a kernel thread, off the sending core)\n");
	else if (!s->napi_err && !strcmp(s->ifc.kind, "veth"))
		printf("  NAPI: softirq (a veth's receive work runs on the sending core; "
		       "attach --napi thread moves it off)\n");
	else if (!s->napi_err)
		printf("  NAPI: softirq\n");
	text_counters("  global:", &s->g, global_fields);
	if (s->cfg.flags & XVI_CFG_ROUTE)
		text_counters("  router:", &s->g, router_fields);
	if (s->cfg.flags & XVI_CFG_TRACE)
		printf("  tracing: on (xdp-vi trace %s)\n", s->ifname);
	printf("  device:  rx_dropped %llu  tx_dropped %llu (the kernel's: rx_dropped "
	       "counts frames the datapath redirected that their target refused)\n",
	       (unsigned long long)s->ifc.rx_dropped, (unsigned long long)s->ifc.tx_dropped);
	printf("  endpoints: %d\n", s->nep);
	for (i = 0; i < s->nep; i++) {
		const struct ep_sample *e = &s->ep[i];
		char q[16];

		xvi_tag__format(&e->owner.tag, tag, sizeof(tag));
		if (e->owner.queue_id == XVI_QUEUE_NONE)
			snprintf(q, sizeof(q), "-");
		else
			snprintf(q, sizeof(q), "%u", e->owner.queue_id);
		printf("  slot %-3u %-28s %-9s pid %-7u uid %-5u queue %-3s %s%s\n", e->slot,
		       tag, mode_str(e->owner.mode), e->owner.pid, e->owner.uid,
		       q, bind_str(&e->owner), e->owner.tag.queue ? " spread" : "");
		text_counters("      datapath:", &e->c, ep_fields);
		if (e->owner.mode == XVI_EP_MODE_PROTECTED)
			text_counters("      guard:   ", &e->c, guard_fields);
		else
			text_counters("      ext:     ", &e->c, ext_fields);
		if (e->owner.mode == XVI_EP_MODE_PROTECTED && e->nh)
			printf("      handlers on the client end (xdp-vid):\n");
		for (int h = 0; h < e->nh; h++)
			handler_text("        ", &e->h[h]);
		if (e->have_xsk)
			text_counters("      socket:  ", &e->xsk, xsk_fields);
		if (e->have_dev)
			printf("      host end %s, mtu %u: %s\n", e->dev.name, e->dev.mtu,
			       e->dev_accepts > 0 ? "accepts redirected frames" :
			       !e->dev_accepts ? "REFUSES redirected frames (the client end "
			       "lost its program): they are dropped, counted in rx_dropped above" :
			       "cannot tell whether it accepts redirected frames");
	}
}

/* ---- commands ------------------------------------------------------------- */

static int for_each_iface(const struct xvi_cfg *cfg, char ***names, int *n,
			  struct xvi_ctl_opts *opts)
{
	*opts = (struct xvi_ctl_opts){ .sz = sizeof(*opts), .bpffs = cfg->bpffs };
	*n = list_ifaces(cfg, opts, names);
	return *n < 0 ? 1 : 0;
}

int cmd_status(const struct xvi_cfg *cfg)
{
	struct xvi_ctl_opts opts;
	struct if_sample *s;
	struct json j;
	char **names;
	int n, i, ret = 0;

	if (for_each_iface(cfg, &names, &n, &opts))
		return 1;
	s = malloc(sizeof(*s));
	if (!s) {
		xvi_ctl__free_names(names);
		return 1;
	}
	json_init(&j, stdout);
	if (cfg->json) {
		json_obj_open(&j, NULL);
		json_arr_open(&j, "interfaces");
	} else if (!n) {
		printf("no interface of this network namespace runs xdp-vi\n");
	}
	for (i = 0; i < n; i++) {
		if (take_sample(names[i], &opts, true, true, s)) {
			ret = 1;
			continue;
		}
		if (cfg->json)
			status_json(&j, s);
		else
			status_text(s);
	}
	if (cfg->json) {
		json_arr_close(&j);
		json_obj_close(&j);
	}
	free(s);
	xvi_ctl__free_names(names);
	return ret;
}

/* Counters that went backwards belong to a new owner of the slot. */
static double rate(__u64 now, __u64 before, double dt)
{
	return now >= before && dt > 0 ? (now - before) / dt : 0;
}

static const struct ep_sample *find_ep(const struct if_sample *s, const struct ep_sample *e)
{
	for (int i = 0; i < s->nep; i++)
		if (s->ep[i].slot == e->slot && s->ep[i].owner.pid == e->owner.pid &&
		    s->ep[i].owner.start_time == e->owner.start_time)
			return &s->ep[i];
	return NULL;
}

/* Every drop_* counter of the datapath's and the guard's tables. */
static __u64 ep_drops(const struct xvi_ep_counters *c)
{
	const struct counter_name *tabs[] = { ep_fields, guard_fields }, *n;
	__u64 sum = 0;
	size_t t;

	for (t = 0; t < sizeof(tabs) / sizeof(tabs[0]); t++)
		for (n = tabs[t]; n->name; n++)
			if (!strncmp(n->name, "drop_", 5))
				sum += field(c, n);
	return sum;
}

static void rates_print(struct json *j, bool json, const struct if_sample *a,
			const struct if_sample *b)
{
	double dt = b->t - a->t;
	const struct counter_name *n;
	char tag[80];
	int i;

	if (json) {
		json_obj_open(j, NULL);
		json_prog(j, b);
		json_double(j, "seconds", dt);
		json_obj_open(j, "global_per_sec");
		for (n = global_fields; n->name; n++)
			json_double(j, n->name, rate(field(&b->g, n), field(&a->g, n), dt));
		json_obj_close(j);
		json_counters(j, "global", &b->g, global_fields);
		json_arr_open(j, "endpoints");
	} else {
		printf("%s (%.2f s):", b->ifname, dt);
		for (n = global_fields; n->name; n++)
			printf("  %s %.0f/s", n->name, rate(field(&b->g, n), field(&a->g, n), dt));
		printf("\n");
	}
	for (i = 0; i < b->nep; i++) {
		const struct ep_sample *e = &b->ep[i], *p = find_ep(a, e);
		struct xvi_ep_counters zero = {};
		const struct xvi_ep_counters *pc = p ? &p->c : &zero;

		xvi_tag__format(&e->owner.tag, tag, sizeof(tag));
		if (json) {
			json_obj_open(j, NULL);
			json_endpoint_head(j, e);
			json_obj_open(j, "per_sec");
			for (n = ep_fields; n->name; n++)
				json_double(j, n->name, rate(field(&e->c, n), field(pc, n), dt));
			json_obj_close(j);
			json_counters(j, "counters", &e->c, ep_fields);
			json_obj_close(j);
		} else {
			printf("  slot %-3u %-28s rx %.0f pps  %.3f Mbit/s  drops %.0f/s\n",
			       e->slot, tag, rate(e->c.rx_frames, pc->rx_frames, dt),
			       rate(e->c.rx_bytes, pc->rx_bytes, dt) * 8 / 1e6,
			       rate(ep_drops(&e->c), ep_drops(pc), dt));
		}
	}
	if (json) {
		json_arr_close(j);
		json_obj_close(j);
	}
}

static void stats_once(struct json *j, bool json, const struct if_sample *s)
{
	char tag[80];
	int i;

	if (json) {
		json_obj_open(j, NULL);
		json_prog(j, s);
		json_counters(j, "global", &s->g, global_fields);
	json_counters(j, "router", &s->g, router_fields);
	json_bool(j, "tracing", s->cfg.flags & XVI_CFG_TRACE);
		json_arr_open(j, "endpoints");
		for (i = 0; i < s->nep; i++) {
			json_obj_open(j, NULL);
			json_endpoint_head(j, &s->ep[i]);
			json_counters(j, "counters", &s->ep[i].c, ep_fields);
			json_obj_close(j);
		}
		json_arr_close(j);
		json_obj_close(j);
		return;
	}
	text_counters(s->ifname, &s->g, global_fields);
	for (i = 0; i < s->nep; i++) {
		xvi_tag__format(&s->ep[i].owner.tag, tag, sizeof(tag));
		printf("  slot %-3u %-28s", s->ep[i].slot, tag);
		text_counters("", &s->ep[i].c, ep_fields);
	}
}

static void sleep_s(double s)
{
	struct timespec ts = { .tv_sec = (time_t)s,
			       .tv_nsec = (long)((s - (time_t)s) * 1e9) };

	/* a signal cuts the sleep short; stop is then set */
	nanosleep(&ts, NULL);
}

int cmd_stats(const struct xvi_cfg *cfg)
{
	struct if_sample *prev = NULL, *cur = NULL;
	struct xvi_ctl_opts opts;
	struct sigaction sa = { .sa_handler = on_signal };
	unsigned int k;
	struct json j;
	char **names;
	int n, i, ret = 0;

	if (cfg->count && !cfg->interval) {
		fprintf(stderr, "xdp-vi stats: --count needs --interval\n");
		return 1;
	}
	if (for_each_iface(cfg, &names, &n, &opts))
		return 1;
	prev = calloc(n ? n : 1, sizeof(*prev));
	cur = calloc(n ? n : 1, sizeof(*cur));
	if (!prev || !cur) {
		ret = 1;
		goto out;
	}
	json_init(&j, stdout);
	if (!n && !cfg->json)
		printf("no interface of this network namespace runs xdp-vi\n");

	for (i = 0; i < n; i++)
		if (take_sample(names[i], &opts, true, false, &prev[i]))
			ret = 1;
	if (ret)
		goto out;
	if (!cfg->interval) {
		if (cfg->json) {
			json_obj_open(&j, NULL);
			json_arr_open(&j, "interfaces");
		}
		for (i = 0; i < n; i++)
			stats_once(&j, cfg->json, &prev[i]);
		if (cfg->json) {
			json_arr_close(&j);
			json_obj_close(&j);
		}
		goto out;
	}

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* one array for the whole run, streamed: valid JSON even after ^C */
	if (cfg->json)
		json_arr_open(&j, NULL);
	for (k = 0; !stop && (!cfg->count || k < cfg->count); k++) {
		sleep_s(cfg->interval);
		if (stop)
			break;
		if (cfg->json) {
			json_obj_open(&j, NULL);
			json_u64(&j, "sample", k + 1);
			json_arr_open(&j, "interfaces");
		}
		for (i = 0; i < n; i++) {
			if (take_sample(names[i], &opts, false, false, &cur[i])) {
				ret = 1;
				stop = 1;
				break;
			}
			rates_print(&j, cfg->json, &prev[i], &cur[i]);
			prev[i] = cur[i];
		}
		if (cfg->json) {
			json_arr_close(&j);
			json_obj_close(&j);
		}
		fflush(stdout);
	}
	if (cfg->json)
		json_arr_close(&j);
out:
	free(prev);
	free(cur);
	xvi_ctl__free_names(names);
	return ret;
}
