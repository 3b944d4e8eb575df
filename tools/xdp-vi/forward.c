// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xdp-vi ext forward IFACE [TARGET...] [--remove]: the interfaces that
 * handlers on IFACE may forward to (xvi_ext_forward, docs/EXTENSIONS.md
 * "Forwarding").  The datapath redirects a handler's forward only to an
 * interface in IFACE's xvi_ext_fwd_devs, which only this command (root)
 * writes.  A target must run the datapath itself: a driver transmits
 * redirected frames only with an XDP program on it (a veth: its peer), and
 * the datapath is what the administrator vouched for there.
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

/*
 * @name's datapath, or NULL after saying why: no such interface, no
 * datapath on it (@why follows the hint to attach), or another failure
 * that the library reported above.
 */
static struct xvi_ctl *open_dp(const char *name, const struct xvi_ctl_opts *opts,
			       const char *why)
{
	struct xvi_ctl *t;

	if (!if_nametoindex(name)) {
		fprintf(stderr, "xdp-vi ext forward: no interface %s in this network "
			"namespace\n", name);
		return NULL;
	}
	t = xvi_ctl__open(name, opts);
	if (!t && errno == ENOENT)
		fprintf(stderr, "xdp-vi ext forward: %s has no xdp-vi datapath; attach it "
			"first ('xdp-vi attach %s')%s\n", name, name, why);
	else if (!t)
		fprintf(stderr, "xdp-vi ext forward: cannot open the datapath on %s (see "
			"above)\n", name);
	return t;
}

/* Check every TARGET before changing anything: the ifindex of each into @out. */
static int targets_check(const struct xvi_cfg *cfg, __u32 *out)
{
	struct xvi_ctl_opts opts = { .sz = sizeof(opts), .bpffs = cfg->bpffs };
	struct xvi_ctl *t;
	int i;

	for (i = 1; i < cfg->nargs; i++) {
		const char *name = cfg->args[i];

		out[i] = if_nametoindex(name);
		if (!out[i]) {
			fprintf(stderr, "xdp-vi ext forward: no interface %s in this network "
				"namespace\n", name);
			return -ENODEV;
		}
		if (cfg->remove)
			continue;
		t = open_dp(name, &opts, ": handlers forward only to interfaces that run it");
		if (!t)
			return -ENOENT;
		xvi_ctl__close(t);
	}
	return 0;
}

/*
 * The interfaces that DEVMAP_HASH @fd holds, by name (#IFINDEX for one
 * gone): " a b" or " none", or, with @json, "\"a\",\"b\"".  Shared with
 * router status.
 */
void print_ifindex_keys(int fd, bool json)
{
	__u32 key, next, *prev = NULL;
	char name[IF_NAMESIZE];
	int k = 0;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (!if_indextoname(key, name))
			snprintf(name, sizeof(name), "#%u", key);
		if (json) {
			printf("%s", k ? "," : "");
			json_put_str(stdout, name);
		} else {
			printf(" %s", name);
		}
		k++;
	}
	if (!json && !k)
		printf(" none");
}

int cmd_ext_forward(const struct xvi_cfg *cfg)
{
	struct xvi_ctl_opts opts = { .sz = sizeof(opts), .bpffs = cfg->bpffs };
	struct xvi_ctl *ctl;
	__u32 *idx, v;
	char *had = NULL;
	int i, fd, ret = 1;

	ctl = open_dp(cfg->ifname, &opts, "");
	if (!ctl)
		return 1;
	fd = xvi_ctl__ext_fwd_devs_fd(ctl);
	idx = calloc(cfg->nargs, sizeof(*idx));
	had = calloc(cfg->nargs, 1);
	if (!idx || !had) {
		fprintf(stderr, "xdp-vi: out of memory\n");
		goto out;
	}
	if (targets_check(cfg, idx))
		goto out;
	for (i = 1; i < cfg->nargs; i++) {
		had[i] = !bpf_map_lookup_elem(fd, &idx[i], &v);
		if (cfg->remove) {
			if (bpf_map_delete_elem(fd, &idx[i]) && errno != ENOENT) {
				fprintf(stderr, "xdp-vi ext forward: %s: cannot remove %s: %s\n",
					cfg->ifname, cfg->args[i], strerror(errno));
				/* Nothing half done: this call's removals come back. */
				while (--i > 0)
					if (had[i])
						bpf_map_update_elem(fd, &idx[i], &idx[i], 0);
				goto out;
			}
			continue;
		}
		if (bpf_map_update_elem(fd, &idx[i], &idx[i], 0)) {
			int e = errno;

			fprintf(stderr, "xdp-vi ext forward: %s: cannot add %s: %s", cfg->ifname,
				cfg->args[i], strerror(e));
			if (e == E2BIG)
				fprintf(stderr, " (at most %d targets; remove some first with "
					"--remove)", XVI_EXT_FWD_MAX_IFACES);
			fprintf(stderr, "\n");
			/* Nothing half done: this call's additions go again. */
			while (--i > 0)
				if (!had[i])
					bpf_map_delete_elem(fd, &idx[i]);
			goto out;
		}
	}
	if (cfg->json) {
		printf("{\"ifname\":");
		json_put_str(stdout, cfg->ifname);
		printf(",\"forward_to\":[");
	} else {
		printf("%s: handlers may forward to:", cfg->ifname);
	}
	print_ifindex_keys(fd, cfg->json);
	printf(cfg->json ? "]}\n" : "\n");
	ret = 0;
out:
	free(had);
	free(idx);
	xvi_ctl__close(ctl);
	return ret;
}
