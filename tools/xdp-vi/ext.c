// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* xdp-vi ext load / list / unload: active-message handlers (docs/EXTENSIONS.md). */
#include <stdio.h>
#include <stdlib.h>

#include "cmd.h"
#include "handlers.h"
#include "xvi_ext.h"

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

int cmd_ext_list(const struct xvi_cfg *cfg)
{
	struct xvi_ext_opts opts = { .sz = sizeof(opts), .bpffs = cfg->bpffs };
	struct xvi_ext_info *infos = NULL;
	struct handler_sample *hs;
	int n, max = 0, i, a;

	/* Handlers may come and go between the count and the read: retry. */
	for (;;) {
		n = xvi_ext__info(cfg->ifname, infos, max, &opts);
		if (n < 0 || n <= max)
			break;
		free(infos);
		max = n;
		infos = calloc(max, sizeof(*infos));
		if (!infos) {
			fprintf(stderr, "xdp-vi: out of memory\n");
			return 1;
		}
	}
	if (n < 0) {
		free(infos);
		return 1;
	}
	hs = calloc(n ? n : 1, sizeof(*hs));
	if (!hs) {
		fprintf(stderr, "xdp-vi: out of memory\n");
		free(infos);
		return 1;
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
		if (!ctl || i < n) {
			fprintf(stderr, "xdp-vi: %s: cannot read the handlers' counters\n",
				cfg->ifname);
			xvi_ctl__close(ctl);
			free(hs);
			free(infos);
			return 1;
		}
		xvi_ctl__close(ctl);
	}
	if (cfg->json) {
		printf("[");
		for (i = 0; i < n; i++) {
			printf("%s{\"slot\":%u,\"endpoint\":\"%s\",\"handler\":%u,"
			       "\"prog_id\":%u,\"prog_name\":\"%s\",\"runs\":%llu", i ? "," : "",
			       infos[i].slot, infos[i].endpoint, infos[i].handler,
			       infos[i].prog_id, infos[i].prog_name,
			       (unsigned long long)hs[i].c.runs);
			for (a = 0; a < XVI_EXT_ACT_NR; a++)
				printf(",\"%s\":%llu", xvi_action_names[a],
				       (unsigned long long)hs[i].c.act[a]);
			printf(",\"other\":%llu}", (unsigned long long)handler_other(&hs[i].c));
		}
		printf("]\n");
	} else if (!n) {
		printf("%s: no handlers loaded\n", cfg->ifname);
	} else {
		printf("%-5s %-28s %-7s %-8s %s\n", "slot", "endpoint", "handler", "prog id",
		       "program");
		for (i = 0; i < n; i++) {
			printf("%-5u %-28s %-7u %-8u %s\n", infos[i].slot, infos[i].endpoint,
			       infos[i].handler, infos[i].prog_id, infos[i].prog_name);
			handler_text("      ", &hs[i]);
		}
	}
	free(hs);
	free(infos);
	return 0;
}
