// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xvi-kvcache: put the key-value cache extension (kvcache.bpf.o) in front of
 * a memcached on this host (docs/EXTENSIONS.md, "Key-value cache").
 *
 *   xvi-kvcache attach IFACE --port PORT [--xdp [--bpffs DIR]] [--obj FILE]
 *   xvi-kvcache stats IFACE [--json]
 *   xvi-kvcache detach IFACE
 *
 * The two programs go on IFACE's clsact hook (ingress and egress) as tc
 * filters with our handle, which hold them and their maps: nothing to pin,
 * and this process need not stay.  With --xdp the hit path, kv_xdp, goes
 * into the port hook of IFACE's datapath for PORT too, whose program table
 * holds it: the datapath must have been attached with pins (a bpffs, DIR
 * or $XVI_BPFFS or /sys/fs/bpf), which keep that table filled.  Root only (CAP_BPF,
 * CAP_NET_ADMIN).
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "xvi_kvcache.h"
#include "ctl/ctl.h"
#include "kvcache.skel.h"

/* Our tc filters: this handle and priority on both hooks. */
#define KV_TC_HANDLE	0x5856
#define KV_TC_PRIO	0x5856

static const char *const kv_stat_names[XVI_KV_STATS_MAX] = {
	[XVI_KV_HIT] = "hits", [XVI_KV_MISS] = "misses", [XVI_KV_FILL] = "fills",
	[XVI_KV_FILL_STALE] = "fill_stale", [XVI_KV_FILL_SKIP] = "fill_skipped",
	[XVI_KV_INVAL] = "invalidations", [XVI_KV_EPOCH] = "epoch_bumps",
	[XVI_KV_NOCACHE] = "nocache_buckets", [XVI_KV_HIT_XDP] = "xdp_hits",
	[XVI_KV_XDP_ERR] = "xdp_errors",
};

/* The datapath's bpffs (--bpffs), for its port hooks; NULL: the default. */
static const char *kv_bpffs;

/* Set around queries whose failure is an answer ("no qdisc", "no filter"). */
static bool kv_quiet;

static int kv_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG || kv_quiet)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: xvi-kvcache attach IFACE --port PORT [--xdp [--bpffs DIR]] "
		   "[--obj FILE]\n"
		   "       xvi-kvcache stats IFACE [--json]\n"
		   "       xvi-kvcache detach IFACE\n");
}

static void hook_init(struct bpf_tc_hook *h, int ifindex, enum bpf_tc_attach_point ap)
{
	memset(h, 0, sizeof(*h));
	h->sz = sizeof(*h);
	h->ifindex = ifindex;
	h->attach_point = ap;
}

/* The program id of our filter on @ap, 0 if none, negative errno. */
static int our_filter(int ifindex, enum bpf_tc_attach_point ap)
{
	struct bpf_tc_hook h;
	struct bpf_tc_opts o = { .sz = sizeof(o), .handle = KV_TC_HANDLE, .priority = KV_TC_PRIO };
	int err;

	hook_init(&h, ifindex, ap);
	kv_quiet = true;
	err = bpf_tc_query(&h, &o);
	kv_quiet = false;
	if (err == -ENOENT || err == -EINVAL)
		return 0;
	return err ? err : (int)o.prog_id;
}

static int detach_one(int ifindex, enum bpf_tc_attach_point ap)
{
	struct bpf_tc_hook h;
	struct bpf_tc_opts o = { .sz = sizeof(o), .handle = KV_TC_HANDLE, .priority = KV_TC_PRIO };

	int err;

	hook_init(&h, ifindex, ap);
	kv_quiet = true;
	err = bpf_tc_detach(&h, &o);
	kv_quiet = false;
	return err;
}

static int attach_one(const char *ifname, int ifindex, enum bpf_tc_attach_point ap,
		      const struct bpf_program *prog)
{
	struct bpf_tc_opts o = { .sz = sizeof(o), .handle = KV_TC_HANDLE, .priority = KV_TC_PRIO,
				 .prog_fd = bpf_program__fd(prog) };
	struct bpf_tc_hook h;
	int err;

	hook_init(&h, ifindex, ap);
	err = bpf_tc_attach(&h, &o);
	if (err)
		fprintf(stderr, "xvi-kvcache: %s: attaching at %s: %s\n", ifname,
			ap == BPF_TC_INGRESS ? "ingress" : "egress", strerror(-err));
	return err;
}

/* IFACE's datapath (xdp-vi attach), for its port hooks; NULL with a message. */
static struct xvi_ctl *kv_datapath(const char *ifname)
{
	struct xvi_ctl_opts opts = { .sz = sizeof(opts), .bpffs = kv_bpffs };
	struct xvi_ctl *ctl = xvi_ctl__open(ifname, &opts);

	if (!ctl)
		fprintf(stderr, "xvi-kvcache: %s: no xdp-vi datapath to hook into (%s); --xdp "
				"needs `xdp-vi attach %s` first\n", ifname, strerror(errno),
			ifname);
	return ctl;
}

/* Whether program @id is our kv_xdp. */
static bool kv_is_ours(__u32 id)
{
	struct bpf_prog_info pi = {};
	__u32 len = sizeof(pi);
	int fd = bpf_prog_get_fd_by_id(id);
	bool ours;

	if (fd < 0)
		return false;
	ours = !bpf_obj_get_info_by_fd(fd, &pi, &len) && !strcmp(pi.name, "kv_xdp");
	close(fd);
	return ours;
}

/*
 * Take our kv_xdp out of the port hook for @port, if it is there: 0, 1 if
 * there was nothing of ours, -1 on failure (said).
 */
static int kv_unhook(const char *ifname, __u16 port)
{
	struct xvi_ctl_opts opts = { .sz = sizeof(opts), .bpffs = kv_bpffs };
	struct xvi_ctl *ctl;
	__u32 id;
	int err;

	ctl = xvi_ctl__open(ifname, &opts);
	if (!ctl)
		return 1;		/* no datapath: no hook */
	if (xvi_ctl__port_hook_get(ctl, port, &id) || !kv_is_ours(id)) {
		xvi_ctl__close(ctl);
		return 1;
	}
	err = xvi_ctl__port_hook_clear(ctl, port);
	xvi_ctl__close(ctl);
	if (err) {
		fprintf(stderr, "xvi-kvcache: %s: cannot remove the hook of UDP port %u: %s\n",
			ifname, port, strerror(-err));
		return -1;
	}
	return 0;
}

static int prog_map(__u32 prog_id, const char *name);

/* memcached's port, as the attached cache has it; 0 if unknown. */
static __u16 kv_attached_port(int ifindex)
{
	struct xvi_kv_cfg cfg = {};
	int id = our_filter(ifindex, BPF_TC_INGRESS), fd;
	__u32 zero = 0;

	if (id <= 0 || (fd = prog_map(id, "xvi_kv_cfg")) < 0)
		return 0;
	if (bpf_map_lookup_elem(fd, &zero, &cfg))
		cfg.port = 0;
	close(fd);
	return cfg.port;
}

static int cmd_attach(const char *ifname, int ifindex, int port, bool xdp, const char *obj_path)
{
	struct xvi_kv_cfg cfg = { .port = port };
	struct bpf_program *in, *eg, *hit;
	struct xvi_ctl *ctl = NULL;
	struct bpf_object *obj;
	struct bpf_tc_hook h;
	__u32 zero = 0;
	int err;

	if (our_filter(ifindex, BPF_TC_INGRESS) > 0 || our_filter(ifindex, BPF_TC_EGRESS) > 0) {
		fprintf(stderr, "xvi-kvcache: %s: already attached; run `xvi-kvcache detach %s` "
				"first\n", ifname, ifname);
		return 1;
	}
	if (xdp) {
		ctl = kv_datapath(ifname);
		if (!ctl)
			return 1;
	}
	if (obj_path) {
		obj = bpf_object__open_file(obj_path, NULL);
	} else {
		/* The programs built into this binary (kvcache.skel.h). */
		size_t sz;
		const void *elf = kvcache_bpf__elf_bytes(&sz);

		obj_path = "the built-in kvcache.bpf.o";
		obj = bpf_object__open_mem(elf, sz, NULL);
	}
	if (!obj) {
		fprintf(stderr, "xvi-kvcache: %s: %s\n", obj_path, strerror(errno));
		xvi_ctl__close(ctl);
		return 1;
	}
	hit = bpf_object__find_program_by_name(obj, "kv_xdp");
	/* Only the hook's tail call runs it: not loaded for tc alone. */
	if (hit && !xdp)
		bpf_program__set_autoload(hit, false);
	err = bpf_object__load(obj);
	if (err) {
		fprintf(stderr, "xvi-kvcache: loading %s failed: %s\n", obj_path, strerror(-err));
		goto out;
	}
	in = bpf_object__find_program_by_name(obj, "kv_ingress");
	eg = bpf_object__find_program_by_name(obj, "kv_egress");
	if (!in || !eg || (xdp && !hit)) {
		fprintf(stderr, "xvi-kvcache: %s has no kv_ingress and kv_egress programs%s\n",
			obj_path, xdp ? ", or no kv_xdp for --xdp" : "");
		err = -ENOENT;
		goto out;
	}
	err = bpf_map_update_elem(bpf_object__find_map_fd_by_name(obj, "xvi_kv_cfg"), &zero,
				  &cfg, 0);
	if (err) {
		fprintf(stderr, "xvi-kvcache: setting the port: %s\n", strerror(errno));
		goto out;
	}
	hook_init(&h, ifindex, BPF_TC_INGRESS | BPF_TC_EGRESS);
	kv_quiet = true;	/* a clsact qdisc already there is fine */
	err = bpf_tc_hook_create(&h);
	kv_quiet = false;
	if (err && err != -EEXIST) {
		fprintf(stderr, "xvi-kvcache: %s: cannot create the clsact qdisc: %s\n", ifname,
			strerror(-err));
		goto out;
	}
	/* Egress first: a GET must never be answered from a cache that is
	 * not yet watching the writes' replies go out. */
	err = attach_one(ifname, ifindex, BPF_TC_EGRESS, eg);
	if (err)
		goto out;
	err = attach_one(ifname, ifindex, BPF_TC_INGRESS, in);
	if (err) {
		detach_one(ifindex, BPF_TC_EGRESS);
		goto out;
	}
	/* The hit path last: kv_ingress must already see every miss and
	 * write that kv_xdp passes on. */
	if (xdp) {
		struct xvi_ctl_opts opts = { .sz = sizeof(opts), .bpffs = kv_bpffs };

		err = xvi_ctl__port_hook_set(ctl, &opts, port, bpf_program__fd(hit), false);
		if (err) {
			detach_one(ifindex, BPF_TC_INGRESS);
			detach_one(ifindex, BPF_TC_EGRESS);
			goto out;
		}
	}
	printf("%s: key-value cache for UDP port %d attached%s\n", ifname, port,
	       xdp ? ", hits answered in XDP" : "");
out:
	bpf_object__close(obj);
	xvi_ctl__close(ctl);
	return err ? 1 : 0;
}

static int cmd_detach(const char *ifname, int ifindex)
{
	__u16 port = kv_attached_port(ifindex);
	int e1, e2;

	/* The hit path first: it answers from entries only the tc programs
	 * keep valid. */
	if (port && kv_unhook(ifname, port) < 0)
		return 1;
	e1 = detach_one(ifindex, BPF_TC_INGRESS);
	e2 = detach_one(ifindex, BPF_TC_EGRESS);

	/* No clsact qdisc at all: EINVAL. */
	if ((e1 == -ENOENT || e1 == -EINVAL) && (e2 == -ENOENT || e2 == -EINVAL)) {
		fprintf(stderr, "xvi-kvcache: %s: not attached\n", ifname);
		return 1;
	}
	if ((e1 && e1 != -ENOENT && e1 != -EINVAL) || (e2 && e2 != -ENOENT && e2 != -EINVAL)) {
		fprintf(stderr, "xvi-kvcache: %s: detach: %s\n", ifname, strerror(-(e1 ? e1 : e2)));
		return 1;
	}
	printf("%s: key-value cache detached\n", ifname);
	return 0;
}

/* The map @name of program @prog_id, as an fd; -1 if none. */
static int prog_map(__u32 prog_id, const char *name)
{
	struct bpf_prog_info pi = {};
	__u32 ids[16], len = sizeof(pi), i;
	int pfd, fd = -1;

	pfd = bpf_prog_get_fd_by_id(prog_id);
	if (pfd < 0)
		return -1;
	pi.nr_map_ids = 16;
	pi.map_ids = (__u64)(unsigned long)ids;
	if (bpf_obj_get_info_by_fd(pfd, &pi, &len))
		goto out;
	for (i = 0; i < pi.nr_map_ids && i < 16 && fd < 0; i++) {
		struct bpf_map_info mi = {};
		__u32 mlen = sizeof(mi);
		int mfd = bpf_map_get_fd_by_id(ids[i]);

		if (mfd < 0)
			continue;
		if (!bpf_obj_get_info_by_fd(mfd, &mi, &mlen) && !strcmp(mi.name, name))
			fd = mfd;
		else
			close(mfd);
	}
out:
	close(pfd);
	return fd;
}

static int cmd_stats(const char *ifname, int ifindex, int json)
{
	int id = our_filter(ifindex, BPF_TC_INGRESS), fd, ncpu, i, c;
	__u64 *vals, sum[XVI_KV_STATS_MAX] = {};

	if (id <= 0) {
		fprintf(stderr, "xvi-kvcache: %s: not attached (xvi-kvcache attach %s --port PORT)\n",
			ifname, ifname);
		return 1;
	}
	fd = prog_map(id, "xvi_kv_stats");
	ncpu = libbpf_num_possible_cpus();
	if (fd < 0 || ncpu <= 0) {
		fprintf(stderr, "xvi-kvcache: %s: cannot read the counters of program %d\n",
			ifname, id);
		return 1;
	}
	vals = calloc(ncpu, sizeof(*vals));
	if (!vals) {
		close(fd);
		return 1;
	}
	for (i = 0; i < XVI_KV_STATS_MAX; i++) {
		__u32 k = i;

		if (bpf_map_lookup_elem(fd, &k, vals))
			continue;
		for (c = 0; c < ncpu; c++)
			sum[i] += vals[c];
	}
	free(vals);
	close(fd);
	for (i = 0; i < XVI_KV_STATS_MAX; i++) {
		if (json)
			printf("%s\"%s\":%llu", i ? "," : "{", kv_stat_names[i],
			       (unsigned long long)sum[i]);
		else
			printf("%-16s %llu\n", kv_stat_names[i], (unsigned long long)sum[i]);
	}
	if (json)
		printf("}\n");
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "obj", required_argument, NULL, 'o' },
		{ "json", no_argument, NULL, 'j' },
		{ "xdp", no_argument, NULL, 'x' },
		{ "bpffs", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *obj = NULL, *cmd, *ifname;
	int c, port = 0, json = 0, xdp = 0, ifindex;
	char *end;

	while ((c = getopt_long(argc, argv, "p:o:jxb:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			errno = 0;
			port = strtol(optarg, &end, 10);
			if (errno || *end || port < 1 || port > 65535) {
				fprintf(stderr, "xvi-kvcache: --port %s: give memcached's UDP "
						"port, 1..65535\n", optarg);
				return 2;
			}
			break;
		case 'o':
			obj = optarg;
			break;
		case 'j':
			json = 1;
			break;
		case 'x':
			xdp = 1;
			break;
		case 'b':
			kv_bpffs = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (argc - optind != 2) {
		usage(stderr);
		return 2;
	}
	cmd = argv[optind];
	ifname = argv[optind + 1];
	ifindex = if_nametoindex(ifname);
	if (!ifindex) {
		fprintf(stderr, "xvi-kvcache: no interface %s\n", ifname);
		return 1;
	}
	libbpf_set_strict_mode(LIBBPF_STRICT_ALL);
	libbpf_set_print(kv_print);
	if (!strcmp(cmd, "attach")) {
		if (!port) {
			fprintf(stderr, "xvi-kvcache: attach needs --port, memcached's UDP port "
					"(memcached -U PORT)\n");
			return 2;
		}
		return cmd_attach(ifname, ifindex, port, xdp, obj);
	}
	if (!strcmp(cmd, "detach"))
		return cmd_detach(ifname, ifindex);
	if (!strcmp(cmd, "stats"))
		return cmd_stats(ifname, ifindex, json);
	fprintf(stderr, "xvi-kvcache: unknown command '%s'\n", cmd);
	usage(stderr);
	return 2;
}
