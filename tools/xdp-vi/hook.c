// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xdp-vi hook list: the datapath's port hooks (docs/EXTENSIONS.md, "Port
 * hooks"), the programs root installed for UDP ports no endpoint holds
 * (xvi-kvcache attach --xdp is one), with each hook's counters.  Reading
 * them needs the datapath's maps: root, as for setting them.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "ctl/ctl.h"

int cmd_hook_list(const struct xvi_cfg *cfg)
{
	struct xvi_ctl_opts opts = { .sz = sizeof(opts), .bpffs = cfg->bpffs };
	struct xvi_port_hook_info hooks[XVI_PORT_HOOK_MAX];
	struct xvi_ctl *ctl;
	int n, i;

	ctl = xvi_ctl__open(cfg->ifname, &opts);
	if (!ctl) {
		/* The library said why; a refusal is for want of privilege. */
		if (errno == EPERM || errno == EACCES)
			fprintf(stderr, "xdp-vi hook list: %s: reading the port hooks needs root "
					"(CAP_BPF, CAP_NET_ADMIN)\n", cfg->ifname);
		return 1;
	}
	n = xvi_ctl__port_hook_list(ctl, hooks, XVI_PORT_HOOK_MAX);
	xvi_ctl__close(ctl);
	if (n < 0) {
		fprintf(stderr, "xdp-vi hook list: %s: cannot read the port hooks: %s\n",
			cfg->ifname, strerror(-n));
		return 1;
	}
	if (n > XVI_PORT_HOOK_MAX)
		n = XVI_PORT_HOOK_MAX;	/* the table has no more slots */
	if (cfg->json) {
		printf("[");
		for (i = 0; i < n; i++)
			printf("%s{\"port\":%u,\"index\":%u,\"prog_id\":%u,\"prog_name\":\"%s\","
			       "\"hooked\":%llu,\"missing\":%llu}", i ? "," : "", hooks[i].port,
			       hooks[i].index, hooks[i].prog_id, hooks[i].prog_name,
			       (unsigned long long)hooks[i].c.hooked,
			       (unsigned long long)hooks[i].c.missing);
		printf("]\n");
		return 0;
	}
	if (!n) {
		printf("%s: no port hooks\n", cfg->ifname);
		return 0;
	}
	printf("%-6s %-5s %-8s %-16s %12s %12s\n", "port", "index", "prog id", "program", "hooked",
	       "missing");
	for (i = 0; i < n; i++)
		printf("%-6u %-5u %-8u %-16s %12llu %12llu\n", hooks[i].port, hooks[i].index,
		       hooks[i].prog_id, hooks[i].prog_id ? hooks[i].prog_name : "(empty)",
		       (unsigned long long)hooks[i].c.hooked,
		       (unsigned long long)hooks[i].c.missing);
	return 0;
}
