// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* xdp-vi attach / detach */
#include <stdio.h>

#include "cmd.h"
#include "ctl/ctl.h"

int cmd_attach(const struct xvi_cfg *cfg)
{
	struct xvi_ctl_opts opts = { .sz = sizeof(opts), .bpffs = cfg->bpffs,
				     .napi = cfg->napi };
	struct xvi_prog_info info;
	bool already, threaded = false;
	int err;

	err = xvi_ctl__attach(cfg->ifname, cfg->mode, &opts, &already);
	if (err)
		return 1;
	if (xvi_ctl__prog_info(cfg->ifname, &info)) {
		fprintf(stderr, "xdp-vi: %s: attached, but the program is not visible "
			"afterwards: check 'xdp-loader status %s'\n", cfg->ifname, cfg->ifname);
		return 1;
	}
	xvi_ctl__napi_threaded(cfg->ifname, &threaded);
	printf("%s: %s (prog id %u, %s mode%s%s)\n", cfg->ifname,
	       already ? "already attached" : "attached", info.prog_id,
	       info.generic ? "generic" : "native", info.multiprog ? ", multiprog" : "",
	       threaded ? ", NAPI threaded" : "");
	return 0;
}

int cmd_detach(const struct xvi_cfg *cfg)
{
	struct xvi_ctl_opts opts = { .sz = sizeof(opts), .bpffs = cfg->bpffs };

	if (xvi_ctl__detach(cfg->ifname, &opts))
		return 1;
	printf("%s: detached\n", cfg->ifname);
	return 0;
}
