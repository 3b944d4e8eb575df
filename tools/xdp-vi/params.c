// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "params.h"

#define MAX_OPTS 32

const struct opt_def xvi_global_opts[] = {
	{ "verbose", 'v', OPT_COUNT, offsetof(struct xvi_cfg, verbose), NULL,
	  "more messages; -vv adds the libbpf/libxdp debug log" },
	{ "bpffs", 0, OPT_STRING, offsetof(struct xvi_cfg, bpffs), "DIR",
	  "bpf filesystem holding the pins (default $XVI_BPFFS or /sys/fs/bpf)" },
	{ "help", 'h', OPT_FLAG, offsetof(struct xvi_cfg, help), NULL, "show this help" },
	{ "version", 'V', OPT_FLAG, offsetof(struct xvi_cfg, version), NULL,
	  "print the version and exit" },
	{ NULL },
};

/* Global options first, then the command's: one flat table for getopt. */
static int collect(const struct cmd_def *cmd, const struct opt_def **defs)
{
	const struct opt_def *d;
	int n = 0;

	for (d = xvi_global_opts; d->name && n < MAX_OPTS; d++)
		defs[n++] = d;
	for (d = cmd ? cmd->opts : NULL; d && d->name && n < MAX_OPTS; d++)
		defs[n++] = d;
	return n;
}

static int set_value(const struct opt_def *d, const char *arg, struct xvi_cfg *cfg,
		     const char *cmdname)
{
	char *field = (char *)cfg + d->off, *end;
	const struct opt_enum *e;
	unsigned long ul;
	double dbl;

	switch (d->type) {
	case OPT_FLAG:
		*(bool *)field = true;
		return 0;
	case OPT_COUNT:
		(*(int *)field)++;
		return 0;
	case OPT_STRING:
		if (!*arg)
			break;
		*(const char **)field = arg;
		return 0;
	case OPT_UINT:
		errno = 0;
		ul = strtoul(arg, &end, 10);
		if (errno || *end || !*arg || arg[0] == '-' || ul > 0xffffffffUL)
			break;
		*(unsigned int *)field = ul;
		return 0;
	case OPT_SECONDS:
		errno = 0;
		dbl = strtod(arg, &end);
		if (errno || *end || !*arg || !(dbl > 0 && dbl <= 86400))
			break;
		*(double *)field = dbl;
		return 0;
	case OPT_ENUM:
		for (e = d->enums; e && e->name; e++) {
			if (!strcmp(e->name, arg)) {
				*(int *)field = e->value;
				return 0;
			}
		}
		fprintf(stderr, "xdp-vi %s: --%s %s: expected one of:", cmdname, d->name, arg);
		for (e = d->enums; e && e->name; e++)
			fprintf(stderr, " %s", e->name);
		fprintf(stderr, "\n");
		return -EINVAL;
	}
	fprintf(stderr, "xdp-vi %s: --%s '%s': expected %s\n", cmdname, d->name, arg,
		d->type == OPT_UINT ? "a non-negative integer" :
		d->type == OPT_SECONDS ? "seconds > 0 (e.g. 0.5)" : "a non-empty value");
	return -EINVAL;
}

static int run_getopt(const struct opt_def **defs, int n, int argc, char **argv,
		      struct xvi_cfg *cfg, const char *cmdname, bool stop_at_arg)
{
	struct option lopts[MAX_OPTS + 1] = {};
	char shorts[2 * MAX_OPTS + 2], *s = shorts;
	int i, c, err;

	if (stop_at_arg)
		*s++ = '+';	/* stop at the subcommand name */
	*s++ = ':';		/* report a missing argument as ':' */
	for (i = 0; i < n; i++) {
		bool has_arg = defs[i]->type != OPT_FLAG && defs[i]->type != OPT_COUNT;

		lopts[i].name = defs[i]->name;
		lopts[i].has_arg = has_arg ? required_argument : no_argument;
		lopts[i].val = 256 + i;
		if (defs[i]->short_name) {
			*s++ = defs[i]->short_name;
			if (has_arg)
				*s++ = ':';
		}
	}
	*s = '\0';

	optind = 0;	/* glibc: full re-initialisation between the two passes */
	opterr = 0;
	while ((c = getopt_long(argc, argv, shorts, lopts, NULL)) != -1) {
		const struct opt_def *d = NULL;

		if (c >= 256 && c < 256 + n) {
			d = defs[c - 256];
		} else {
			for (i = 0; i < n; i++)
				if (defs[i]->short_name && defs[i]->short_name == c)
					d = defs[i];
		}
		if (c == ':') {
			fprintf(stderr, "xdp-vi%s%s: option %s needs a value\n",
				*cmdname ? " " : "", cmdname, argv[optind - 1]);
			return -EINVAL;
		}
		if (!d) {
			fprintf(stderr, "xdp-vi%s%s: unknown option %s; see 'xdp-vi %s%s--help'\n",
				*cmdname ? " " : "", cmdname, argv[optind - 1], cmdname,
				*cmdname ? " " : "");
			return -EINVAL;
		}
		err = set_value(d, optarg, cfg, cmdname);
		if (err)
			return err;
	}
	return optind;
}

int params_parse_global(int argc, char **argv, struct xvi_cfg *cfg)
{
	const struct opt_def *defs[MAX_OPTS];

	return run_getopt(defs, collect(NULL, defs), argc, argv, cfg, "", true);
}

int params_parse(const struct cmd_def *cmd, int argc, char **argv, struct xvi_cfg *cfg)
{
	const struct opt_def *defs[MAX_OPTS];
	int first, nargs;

	first = run_getopt(defs, collect(cmd, defs), argc, argv, cfg, cmd->name, false);
	if (first < 0)
		return first;
	if (cfg->help || cfg->version)
		return 0;
	nargs = argc - first;
	if (nargs < cmd->min_args || nargs > cmd->max_args) {
		fprintf(stderr, "xdp-vi %s: expected %s%s\n", cmd->name,
			cmd->args && *cmd->args ? cmd->args : "no arguments",
			nargs > cmd->max_args ? ", got more" : "");
		params_usage_cmd(cmd, "xdp-vi", false);
		return -EINVAL;
	}
	if (nargs)
		cfg->ifname = argv[first];
	return 0;
}

static void print_opt(FILE *f, const struct opt_def *d)
{
	const struct opt_enum *e;
	char shortname[8] = "    ", left[64];

	if (d->short_name)
		snprintf(shortname, sizeof(shortname), "-%c, ", d->short_name);
	snprintf(left, sizeof(left), "  %s--%s%s%s", shortname, d->name,
		 d->metavar ? " " : "", d->metavar ? d->metavar : "");
	fprintf(f, "%-28s %s", left, d->help);
	if (d->enums) {
		fprintf(f, " (");
		for (e = d->enums; e->name; e++)
			fprintf(f, "%s%s", e->name, e[1].name ? "|" : ")");
	}
	fprintf(f, "\n");
}

void params_usage_cmd(const struct cmd_def *cmd, const char *prog, bool full)
{
	const struct opt_def *d;
	FILE *f = full ? stdout : stderr;

	fprintf(f, "Usage: %s %s [options]%s%s\n", prog, cmd->name,
		cmd->args && *cmd->args ? " " : "", cmd->args ? cmd->args : "");
	if (!full)
		return;
	fprintf(f, "\n%s\n", cmd->description ? cmd->description : cmd->summary);
	fprintf(f, "\nOptions:\n");
	for (d = cmd->opts; d && d->name; d++)
		print_opt(f, d);
	for (d = xvi_global_opts; d->name; d++)
		print_opt(f, d);
}

void params_usage(const struct cmd_def *cmds, const char *prog)
{
	const struct cmd_def *c;
	const struct opt_def *d;

	printf("Usage: %s [global options] COMMAND [options] [ARGS]\n\nCommands:\n", prog);
	for (c = cmds; c->name; c++)
		printf("  %-8s %-10s %s\n", c->name, c->args ? c->args : "", c->summary);
	printf("\nGlobal options:\n");
	for (d = xvi_global_opts; d->name; d++)
		print_opt(stdout, d);
	printf("\n'%s COMMAND --help' shows the options of COMMAND.\n", prog);
}
