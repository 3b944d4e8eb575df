// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* xdp-vi steer add / del: ntuple rules for an endpoint's port (ctl/steer.h). */
#include <stdio.h>

#include "cmd.h"
#include "ctl/ctl.h"
#include "ctl/steer.h"

int cmd_steer_add(const struct xvi_cfg *cfg)
{
	__u32 loc = cfg->rule_set ? cfg->rule : XVI_STEER_LOC_ANY;
	struct xvi_tag tag;

	if (!cfg->endpoint) {
		fprintf(stderr, "xdp-vi: steer add: --endpoint ADDR:PORT is required\n");
		return 1;
	}
	if (xvi_tag__parse(cfg->endpoint, &tag) || xvi_steer__add(cfg->ifname, &tag, cfg->queue,
								   &loc))
		return 1;
	printf("%s: rule %u steers %s to queue %u\n", cfg->ifname, loc, cfg->endpoint,
	       cfg->queue);
	return 0;
}

int cmd_steer_del(const struct xvi_cfg *cfg)
{
	if (!cfg->rule_set) {
		fprintf(stderr, "xdp-vi: steer del: --rule LOC is required (what 'steer add' printed)\n");
		return 1;
	}
	if (xvi_steer__del(cfg->ifname, cfg->rule))
		return 1;
	printf("%s: rule %u removed\n", cfg->ifname, cfg->rule);
	return 0;
}
