/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Table-driven command line for xdp-vi: every subcommand declares its
 * positional arguments and options in a table; parsing, validation and the
 * help text all come from those tables.
 */
#ifndef XVI_PARAMS_H
#define XVI_PARAMS_H

#include <stdbool.h>
#include <stddef.h>

/* Everything any subcommand can be told, filled from the tables. */
struct xvi_cfg {
	/* global */
	int verbose;
	const char *bpffs;
	bool help;
	bool version;
	/* per command */
	const char *ifname;
	int mode;		/* enum xvi_attach_mode */
	bool json;
	double interval;	/* seconds; 0 = one shot */
	unsigned int count;	/* samples with --interval; 0 = until ^C */
	const char *policy;	/* serve: policy file */
	const char *run_dir;	/* serve: socket directory */
};

enum opt_type {
	OPT_FLAG,	/* bool = true */
	OPT_COUNT,	/* int += 1 (-v -v, -vv) */
	OPT_STRING,	/* const char * */
	OPT_UINT,	/* unsigned int, decimal */
	OPT_SECONDS,	/* double > 0 */
	OPT_ENUM,	/* int from a name table */
};

struct opt_enum {
	const char *name;
	int value;
};

struct opt_def {
	const char *name;		/* long name; NULL ends a table */
	char short_name;		/* 0: long only */
	enum opt_type type;
	size_t off;			/* field in struct xvi_cfg */
	const char *metavar;
	const char *help;
	const struct opt_enum *enums;	/* OPT_ENUM */
};

struct cmd_def {
	const char *name;
	int (*run)(const struct xvi_cfg *cfg);
	const char *args;		/* synopsis of the positional arguments */
	int min_args, max_args;		/* only IFACE exists today: 0 or 1 */
	const struct opt_def *opts;	/* subcommand options, may be NULL */
	const char *summary;
	const char *description;
};

/* Options every subcommand accepts, before or after its name. */
extern const struct opt_def xvi_global_opts[];

/*
 * Parse argv of one subcommand (argv[0] is its name) into @cfg.
 * Returns 0, or -EINVAL after printing what is wrong and a hint.
 */
int params_parse(const struct cmd_def *cmd, int argc, char **argv, struct xvi_cfg *cfg);

/* Parse the global options in front of the subcommand name; returns the
 * index of the subcommand in argv, or -EINVAL. */
int params_parse_global(int argc, char **argv, struct xvi_cfg *cfg);

void params_usage_cmd(const struct cmd_def *cmd, const char *prog, bool full);
void params_usage(const struct cmd_def *cmds, const char *prog);

#endif /* XVI_PARAMS_H */
