// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* xdp-vi's command line: global options, a subcommand, its options. */
#include <errno.h>
#include <stdio.h>

#include "cmd.h"

#define PROG		"xdp-vi"
#define HELP_COL	29

const struct opt_def xvi_global_opts[] = {
	{ OPT_COUNT, "verbose", 'v', OPT_FIELD(struct xvi_cfg, verbose),
	  .help = "more messages; -vv adds the libbpf/libxdp debug log" },
	{ OPT_STRING, "bpffs", 0, OPT_FIELD(struct xvi_cfg, bpffs), "DIR",
	  .help = "bpf filesystem holding the pins (default $XVI_BPFFS or /sys/fs/bpf)" },
	{ OPT_FLAG, "help", 'h', OPT_FIELD(struct xvi_cfg, help), .help = "show this help" },
	{ OPT_FLAG, "version", 'V', OPT_FIELD(struct xvi_cfg, version),
	  .help = "print the version and exit" },
	{ OPT_END },
};

int cmd_parse_global(int argc, char **argv, struct xvi_cfg *cfg)
{
	const struct opt_prog p = {
		.name = PROG,
		.opts = xvi_global_opts,
		.stop_at_arg = true,
	};

	return opt_parse(&p, argc, argv, cfg);
}

int cmd_parse(const struct cmd_def *cmd, int argc, char **argv, struct xvi_cfg *cfg)
{
	char name[64];
	const struct opt_prog p = { .name = name, .opts = cmd->opts, .more = xvi_global_opts };
	int first, nargs;

	snprintf(name, sizeof(name), PROG " %s", cmd->name);
	first = opt_parse(&p, argc, argv, cfg);
	if (first < 0)
		return first;
	if (cfg->help || cfg->version)
		return 0;
	nargs = argc - first;
	if (nargs < cmd->min_args || nargs > cmd->max_args) {
		fprintf(stderr, "%s: expected %s%s\n", name,
			cmd->args && *cmd->args ? cmd->args : "no arguments",
			nargs > cmd->max_args ? ", got more" : "");
		cmd_usage(cmd, false);
		return -EINVAL;
	}
	cfg->args = argv + first;
	cfg->nargs = nargs;
	if (nargs)
		cfg->ifname = argv[first];
	if (nargs > 1)
		cfg->obj = argv[first + 1];
	return 0;
}

void cmd_usage(const struct cmd_def *cmd, bool full)
{
	FILE *f = full ? stdout : stderr;

	fprintf(f, "Usage: " PROG " %s [options]%s%s\n", cmd->name,
		cmd->args && *cmd->args ? " " : "", cmd->args ? cmd->args : "");
	if (!full)
		return;
	fprintf(f, "\n%s\n", cmd->description ? cmd->description : cmd->summary);
	fprintf(f, "\nOptions:\n");
	opt_print_table(f, cmd->opts, HELP_COL);
	opt_print_table(f, xvi_global_opts, HELP_COL);
}

void cmd_usage_all(const struct cmd_def *cmds)
{
	const struct cmd_def *c;

	printf("Usage: " PROG " [global options] COMMAND [options] [ARGS]\n\nCommands:\n");
	for (c = cmds; c->name; c++)
		printf("  %-8s %-10s %s\n", c->name, c->args ? c->args : "", c->summary);
	printf("\nGlobal options:\n");
	opt_print_table(stdout, xvi_global_opts, HELP_COL);
	printf("\n'" PROG " COMMAND --help' shows the options of COMMAND.\n");
}
