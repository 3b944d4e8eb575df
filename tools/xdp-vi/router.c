// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xdp-vi router enable / disable / status: the datapath's IP router
 * (docs/EXTENSIONS.md, "IP router").  Routing is per interface: an
 * interface routes (XVI_CFG_ROUTE) what reaches it for its MAC and no
 * endpoint, to the interfaces in its xvi_route_devs.  Interfaces enabled
 * together, or at different times, all forward to each other.  The
 * datapath must be attached first: the command does not attach, so that
 * the XDP mode stays the operator's choice.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <net/if.h>
#include <bpf/bpf.h>

#include "cmd.h"
#include "json.h"
#include "ctl/ctl.h"

struct rt_if {
	struct xvi_ctl *ctl;
	const char *name;
	__u32 ifindex;
};

static void close_all(struct rt_if *ifs, int n)
{
	int i;

	for (i = 0; i < n; i++)
		xvi_ctl__close(ifs[i].ctl);
	free(ifs);
}

/* Open every interface's datapath, or none: nothing changes on an error. */
static struct rt_if *open_all(const struct xvi_cfg *cfg, const char *verb)
{
	struct xvi_ctl_opts opts = { .sz = sizeof(opts), .bpffs = cfg->bpffs };
	struct rt_if *ifs;
	int i, j;

	ifs = calloc(cfg->nargs, sizeof(*ifs));
	if (!ifs) {
		fprintf(stderr, "xdp-vi: out of memory\n");
		return NULL;
	}
	for (i = 0; i < cfg->nargs; i++) {
		for (j = 0; j < i; j++)
			if (!strcmp(cfg->args[i], cfg->args[j])) {
				fprintf(stderr, "xdp-vi router %s: %s is named twice\n", verb,
					cfg->args[i]);
				goto err;
			}
		ifs[i].name = cfg->args[i];
		ifs[i].ctl = xvi_ctl__open(ifs[i].name, &opts);
		if (!ifs[i].ctl) {
			fprintf(stderr, "xdp-vi router %s: %s has no xdp-vi datapath; attach it "
				"first ('xdp-vi attach %s')\n", verb, ifs[i].name, ifs[i].name);
			goto err;
		}
		ifs[i].ifindex = xvi_ctl__ifindex(ifs[i].ctl);
	}
	return ifs;
err:
	close_all(ifs, i);
	return NULL;
}

/* The kernel's forwarding setting of @ifname for @family ("ipv4", "ipv6"). */
static int forwarding(const char *family, const char *ifname)
{
	char path[128];
	FILE *f;
	int v = -1;

	snprintf(path, sizeof(path), "/proc/sys/net/%s/conf/%s/forwarding", family, ifname);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%d", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

static void warn_forwarding(const char *ifname)
{
	static const char *fam[] = { "ipv4", "ipv6" };
	int i;

	for (i = 0; i < 2; i++)
		if (forwarding(fam[i], ifname) == 0)
			fprintf(stderr, "xdp-vi router: warning: %s: the kernel does not forward "
				"%s on it, and neither does the router (frames go to the "
				"kernel, counted rt_pass_disabled); 'sysctl -w net.%s.conf.%s."
				"forwarding=1' to route\n", ifname, fam[i], fam[i], ifname);
}

int cmd_router_enable(const struct xvi_cfg *cfg)
{
	struct rt_if *ifs;
	int i, j, n = cfg->nargs, ret = 1;

	ifs = open_all(cfg, "enable");
	if (!ifs)
		return 1;
	/*
	 * Every named interface into every one's egress map (kept entries
	 * of earlier enables stay), then into the maps of the interfaces
	 * already routing, the flags last: a frame is never routed to an
	 * interface whose map is not complete.  On an error, what was added
	 * stays only where it does no harm (an egress map entry without the
	 * flag is never used).
	 */
	for (i = 0; i < n; i++)
		for (j = 0; j < n; j++) {
			__u32 k = ifs[j].ifindex;

			if (bpf_map_update_elem(xvi_ctl__route_devs_fd(ifs[i].ctl), &k, &k, 0)) {
				int e = errno;

				fprintf(stderr, "xdp-vi router enable: %s: cannot add %s to its "
					"egress interfaces: %s", ifs[i].name, ifs[j].name,
					strerror(e));
				if (e == E2BIG)
					fprintf(stderr, " (at most %d routing interfaces; disable "
						"some first)", XVI_ROUTE_MAX_IFACES);
				fprintf(stderr, "\n");
				goto out;
			}
		}
	/* Interfaces routing already (in a map here, not named): both ways. */
	for (i = 0; i < n; i++) {
		__u32 key, next, *prev = NULL;
		int fd = xvi_ctl__route_devs_fd(ifs[i].ctl);

		while (!bpf_map_get_next_key(fd, prev, &next)) {
			char name[IF_NAMESIZE];
			struct xvi_ctl *o;
			struct xvi_ctl_opts opts = { .sz = sizeof(opts), .bpffs = cfg->bpffs };

			key = next;
			prev = &key;
			for (j = 0; j < n && ifs[j].ifindex != key; j++)
				;
			if (j < n || !if_indextoname(key, name))
				continue;
			o = xvi_ctl__open(name, &opts);
			if (!o)
				continue;	/* gone or detached: its entry is stale */
			for (j = 0; j < n; j++) {
				__u32 k = ifs[j].ifindex;

				bpf_map_update_elem(xvi_ctl__route_devs_fd(o), &k, &k, 0);
			}
			xvi_ctl__close(o);
		}
	}
	for (i = 0; i < n; i++)
		if (xvi_ctl__route_set(ifs[i].ctl, true))
			goto undo;
	for (i = 0; i < n; i++) {
		warn_forwarding(ifs[i].name);
		printf("%s: routing on\n", ifs[i].name);
	}
	ret = 0;
	goto out;
undo:
	while (i-- > 0)
		xvi_ctl__route_set(ifs[i].ctl, false);
out:
	close_all(ifs, n);
	return ret;
}

int cmd_router_disable(const struct xvi_cfg *cfg)
{
	struct xvi_ctl_opts opts = { .sz = sizeof(opts), .bpffs = cfg->bpffs };
	struct rt_if *ifs;
	int i, n = cfg->nargs, ret = 0;

	ifs = open_all(cfg, "disable");
	if (!ifs)
		return 1;
	/* Flags first: from now on nothing is routed from these. */
	for (i = 0; i < n; i++)
		if (xvi_ctl__route_set(ifs[i].ctl, false))
			ret = 1;
	for (i = 0; i < n; i++) {
		int fd = xvi_ctl__route_devs_fd(ifs[i].ctl);
		__u32 key, k = ifs[i].ifindex;

		/* Out of every other interface's egress map, then its own emptied. */
		while (!bpf_map_get_next_key(fd, NULL, &key)) {
			char name[IF_NAMESIZE];
			struct xvi_ctl *o;

			if (key != k && if_indextoname(key, name)) {
				o = xvi_ctl__open(name, &opts);
				if (o) {
					bpf_map_delete_elem(xvi_ctl__route_devs_fd(o), &k);
					xvi_ctl__close(o);
				}
			}
			if (bpf_map_delete_elem(fd, &key) && errno != ENOENT) {
				fprintf(stderr, "xdp-vi router disable: %s: cannot empty its "
					"egress map: %s\n", ifs[i].name, strerror(errno));
				ret = 1;
				break;
			}
		}
		if (!ret)
			printf("%s: routing off\n", ifs[i].name);
	}
	close_all(ifs, n);
	return ret;
}

static const struct {
	const char *name;
	size_t off;
} rt_counters[] = {
#define C(f) { #f, offsetof(struct xvi_global_counters, f) }
	C(rt_forwarded), C(rt_pass_ttl), C(rt_pass_frag), C(rt_pass_options), C(rt_pass_csum_partial),
	C(rt_pass_local), C(rt_pass_no_neigh), C(rt_pass_mtu), C(rt_pass_disabled),
	C(rt_pass_no_egress), C(rt_pass_other),
#undef C
};

static int status_one(const char *ifname, const struct xvi_cfg *cfg, bool first)
{
	struct xvi_ctl_opts opts = { .sz = sizeof(opts), .bpffs = cfg->bpffs };
	struct xvi_global_counters g;
	struct xvi_config c;
	struct xvi_ctl *ctl;
	size_t i;
	int fd;

	ctl = xvi_ctl__open(ifname, &opts);
	if (!ctl) {
		fprintf(stderr, "xdp-vi router status: %s has no xdp-vi datapath ('xdp-vi attach "
			"%s')\n", ifname, ifname);
		return 1;
	}
	if (xvi_ctl__config(ctl, &c) || xvi_ctl__global_counters(ctl, &g)) {
		xvi_ctl__close(ctl);
		return 1;
	}
	fd = xvi_ctl__route_devs_fd(ctl);
	if (cfg->json) {
		printf("%s{\"ifname\":", first ? "" : ",");
		json_put_str(stdout, ifname);
		printf(",\"routing\":%s,\"egress\":[",
		       c.flags & XVI_CFG_ROUTE ? "true" : "false");
	} else {
		printf("%s: routing %s, egress:", ifname, c.flags & XVI_CFG_ROUTE ? "on" : "off");
	}
	print_ifindex_keys(fd, cfg->json);
	printf(cfg->json ? "]" : "\n");
	for (i = 0; i < sizeof(rt_counters) / sizeof(rt_counters[0]); i++) {
		__u64 v = *(__u64 *)((char *)&g + rt_counters[i].off);

		if (cfg->json)
			printf(",\"%s\":%llu", rt_counters[i].name, (unsigned long long)v);
		else
			printf("  %-18s %llu\n", rt_counters[i].name, (unsigned long long)v);
	}
	if (cfg->json)
		printf("}");
	xvi_ctl__close(ctl);
	return 0;
}

int cmd_router_status(const struct xvi_cfg *cfg)
{
	struct xvi_ctl_opts opts = { .sz = sizeof(opts), .bpffs = cfg->bpffs };
	char **names = NULL;
	int i, n, ret = 0;

	if (cfg->json)
		printf("[");
	if (cfg->nargs) {
		for (i = 0; i < cfg->nargs; i++)
			ret |= status_one(cfg->args[i], cfg, !i);
	} else {
		n = xvi_ctl__list_ifaces(&opts, &names);
		if (n < 0)
			ret = 1;
		for (i = 0; i < n; i++)
			ret |= status_one(names[i], cfg, !i);
		xvi_ctl__free_names(names);
	}
	if (cfg->json)
		printf("]\n");
	return ret;
}
