// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* xdp-vi ext load / list / unload: active-message handlers (docs/EXTENSIONS.md). */
#include <stdio.h>
#include <stdlib.h>

#include "cmd.h"
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
	int n, max = 0, i;

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
	if (cfg->json) {
		printf("[");
		for (i = 0; i < n; i++)
			printf("%s{\"slot\":%u,\"endpoint\":\"%s\",\"handler\":%u,"
			       "\"prog_id\":%u,\"prog_name\":\"%s\"}", i ? "," : "",
			       infos[i].slot, infos[i].endpoint, infos[i].handler,
			       infos[i].prog_id, infos[i].prog_name);
		printf("]\n");
	} else if (!n) {
		printf("%s: no handlers loaded\n", cfg->ifname);
	} else {
		printf("%-5s %-28s %-7s %-8s %s\n", "slot", "endpoint", "handler", "prog id",
		       "program");
		for (i = 0; i < n; i++)
			printf("%-5u %-28s %-7u %-8u %s\n", infos[i].slot, infos[i].endpoint,
			       infos[i].handler, infos[i].prog_id, infos[i].prog_name);
	}
	free(infos);
	return 0;
}
