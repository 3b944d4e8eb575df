// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* xdp-vi ext load / list / unload: active-message handlers (docs/EXTENSIONS.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/capability.h>

#include "cmd.h"
#include "handlers.h"
#include "xvi_ext.h"
#include "broker/broker.h"

/* Room for the verifier's log of a rejected handler (log level 1). */
#define EXT_LOG_SIZE	(1 << 20)

int cmd_ext_load(const struct xvi_cfg *cfg)
{
	struct xvi_ext_opts opts = {
		.sz = sizeof(opts), .bpffs = cfg->bpffs, .prog_name = cfg->prog,
		.replace = cfg->replace, .log_size = EXT_LOG_SIZE,
	};
	int err;

	opts.log_buf = malloc(EXT_LOG_SIZE);
	if (!opts.log_buf) {
		fprintf(stderr, "xdp-vi: out of memory\n");
		return 1;
	}
	opts.log_buf[0] = '\0';
	err = xvi_ext__load(cfg->ifname, cfg->endpoint, cfg->handler, cfg->obj, &opts);
	if (err && opts.log_buf[0])
		fprintf(stderr, "--- verifier log ---\n%s--- end of verifier log ---\n",
			opts.log_buf);
	free(opts.log_buf);
	if (err)
		return 1;
	printf("%s: handler %u of %s loaded from %s\n", cfg->ifname, cfg->handler,
	       cfg->endpoint, cfg->obj);
	return 0;
}

int cmd_ext_unload(const struct xvi_cfg *cfg)
{
	struct xvi_ext_opts opts = { .sz = sizeof(opts), .bpffs = cfg->bpffs };

	if (xvi_ext__unload(cfg->ifname, cfg->endpoint, cfg->handler, &opts))
		return 1;
	printf("%s: handler %u of %s unloaded\n", cfg->ifname, cfg->handler, cfg->endpoint);
	return 0;
}

/* May this process read the datapath's pins (CAP_BPF or CAP_SYS_ADMIN, CAP_NET_ADMIN)? */
static bool privileged(void)
{
	__u64 eff;

	if (xvi_ctl__cap_effective(&eff))
		return geteuid() == 0;
	return (eff & XVI_CAP(CAP_NET_ADMIN)) &&
	       (eff & (XVI_CAP(CAP_BPF) | XVI_CAP(CAP_SYS_ADMIN)));
}

/*
 * The handlers xdp-vid holds on @ifname, with counters (xvi_ext__list):
 * *out, freed by the caller.  Handlers may come and go between the count
 * and the read: retried.  Returns how many or a negative errno.
 */
static int client_end_list(const char *ifname, const struct xvi_ext_opts *opts,
			   struct xvi_ext_stats **out)
{
	struct xvi_ext_stats *st = NULL;
	int n, max = 0;

	for (;;) {
		n = xvi_ext__list(ifname, st, max, opts);
		if (n < 0 || n <= max)
			break;
		free(st);
		max = n;
		st = calloc(max, sizeof(*st));
		if (!st)
			return -ENOMEM;
	}
	if (n < 0)
		free(st);
	else
		*out = st;
	return n;
}

static void client_end_sample(const struct xvi_ext_stats *s, struct handler_sample *h)
{
	memset(h, 0, sizeof(*h));
	h->index = s->info.handler;
	h->prog_id = s->info.prog_id;
	h->c.runs = s->runs;
	memcpy(h->c.act, s->act, sizeof(h->c.act));
}

/* The datapath's own handlers (direct endpoints) and their counters, from the pins. */
static int direct_list(const struct xvi_cfg *cfg, const struct xvi_ext_opts *opts,
		       struct xvi_ext_info **infosp, struct handler_sample **hsp)
{
	struct xvi_ext_info *infos = NULL;
	struct handler_sample *hs;
	int n, max = 0, i;

	/* Handlers may come and go between the count and the read: retry. */
	for (;;) {
		n = xvi_ext__info(cfg->ifname, infos, max, opts);
		if (n < 0 || n <= max)
			break;
		free(infos);
		max = n;
		infos = calloc(max, sizeof(*infos));
		if (!infos)
			return -ENOMEM;
	}
	if (n < 0) {
		free(infos);
		return n;
	}
	hs = calloc(n ? n : 1, sizeof(*hs));
	if (!hs) {
		free(infos);
		return -ENOMEM;
	}
	if (n) {
		struct xvi_ctl_opts copts = { .sz = sizeof(copts), .bpffs = cfg->bpffs };
		struct xvi_ctl *ctl = xvi_ctl__open(cfg->ifname, &copts);

		for (i = 0; ctl && i < n; i++) {
			hs[i].index = infos[i].handler;
			hs[i].prog_id = infos[i].prog_id;
			if (xvi_ctl__ext_counters(ctl, infos[i].slot, infos[i].handler, &hs[i].c))
				break;
		}
		xvi_ctl__close(ctl);
		if (!ctl || i < n) {
			fprintf(stderr, "xdp-vi: %s: cannot read the handlers' counters\n",
				cfg->ifname);
			free(hs);
			free(infos);
			return -EIO;
		}
	}
	*infosp = infos;
	*hsp = hs;
	return n;
}

static void json_entry(bool first, const struct xvi_ext_info *info, const char *where,
		       long uid, const struct handler_sample *h)
{
	int a;

	printf("%s{\"slot\":%u,\"endpoint\":\"%s\",\"handler\":%u,"
	       "\"prog_id\":%u,\"prog_name\":\"%s\",\"where\":\"%s\"", first ? "" : ",",
	       info->slot, info->endpoint, info->handler, info->prog_id, info->prog_name, where);
	if (uid >= 0)
		printf(",\"uid\":%ld", uid);
	printf(",\"runs\":%llu", (unsigned long long)h->c.runs);
	for (a = 0; a < XVI_EXT_ACT_NR; a++)
		printf(",\"%s\":%llu", xvi_action_names[a], (unsigned long long)h->c.act[a]);
	printf(",\"other\":%llu}", (unsigned long long)handler_other(&h->c));
}

/*
 * Root: the datapath's handlers (direct endpoints) and, where xdp-vid
 * serves the interface, those it holds (protected endpoints' client ends).
 * Without privilege: only the latter, the caller's own (xdp-vid checks).
 */
int cmd_ext_list(const struct xvi_cfg *cfg)
{
	struct xvi_ext_opts opts = { .sz = sizeof(opts), .bpffs = cfg->bpffs };
	bool broker = xvi_broker__listening(cfg->ifname);
	bool direct = privileged() || !broker;
	struct xvi_ext_info *infos = NULL;
	struct handler_sample *hs = NULL, h;
	struct xvi_ext_stats *cs = NULL;
	int n = 0, nc = 0, i, ret = 1;

	if (direct) {
		n = direct_list(cfg, &opts, &infos, &hs);
		if (n < 0) {
			if (n == -ENOMEM)
				fprintf(stderr, "xdp-vi: out of memory\n");
			return 1;
		}
	}
	if (broker) {
		nc = client_end_list(cfg->ifname, &opts, &cs);
		if (nc < 0) {
			if (nc == -ENOMEM)
				fprintf(stderr, "xdp-vi: out of memory\n");
			goto out;
		}
	}
	if (cfg->json) {
		printf("[");
		for (i = 0; i < n; i++)
			json_entry(!i, &infos[i], "datapath", -1, &hs[i]);
		for (i = 0; i < nc; i++) {
			client_end_sample(&cs[i], &h);
			json_entry(!i && !n, &cs[i].info, "client_end", cs[i].uid, &h);
		}
		printf("]\n");
	} else {
		if (direct && !n)
			printf("%s: no handlers loaded\n", cfg->ifname);
		else if (n)
			printf("%-5s %-28s %-7s %-8s %s\n", "slot", "endpoint", "handler",
			       "prog id", "program");
		for (i = 0; i < n; i++) {
			printf("%-5u %-28s %-7u %-8u %s\n", infos[i].slot, infos[i].endpoint,
			       infos[i].handler, infos[i].prog_id, infos[i].prog_name);
			handler_text("      ", &hs[i]);
		}
		if (broker && !nc)
			printf("%s: no handlers of protected endpoints%s (xdp-vid)\n", cfg->ifname,
			       direct ? "" : " of this uid");
		else if (nc)
			printf("%s: handlers of protected endpoints, on their client ends "
			       "(xdp-vid):\n%-5s %-28s %-7s %-8s %-6s %s\n", cfg->ifname, "slot",
			       "endpoint", "handler", "prog id", "uid", "program");
		for (i = 0; i < nc; i++) {
			printf("%-5u %-28s %-7u %-8u %-6u %s\n", cs[i].info.slot,
			       cs[i].info.endpoint, cs[i].info.handler, cs[i].info.prog_id,
			       cs[i].uid, cs[i].info.prog_name[0] ? cs[i].info.prog_name : "-");
			client_end_sample(&cs[i], &h);
			handler_text("      ", &h);
		}
	}
	ret = 0;
out:
	free(cs);
	free(hs);
	free(infos);
	return ret;
}
