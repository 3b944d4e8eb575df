/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The subcommands of xdp-vi: every one declares its positional arguments
 * and options in a table (tools/lib/params.h); parsing, validation and the
 * help text all come from those tables.  Each returns the process exit
 * code (0 or 1).
 */
#ifndef XVI_CMD_H
#define XVI_CMD_H

#include <stdbool.h>
#include "params.h"

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
	int napi;		/* attach: enum xvi_napi_mode */
	bool json;
	double interval;	/* seconds; 0 = one shot */
	unsigned int count;	/* samples with --interval; 0 = until ^C */
	const char *policy;	/* serve: policy file */
	const char *run_dir;	/* serve: socket directory */
	const char *obj;	/* ext load: the handler's object file */
	const char *endpoint;	/* ext: the endpoint's tag */
	unsigned int handler;	/* ext: handler index */
	const char *prog;	/* ext load: the handler's program in obj */
	bool replace;		/* ext load: replace a loaded handler */
	bool handler_set;	/* ext: --handler was given */
	bool remove;		/* ext forward: take the targets out */
	const char *pcap;	/* trace: the frames into this pcap file */
	const char *plot;	/* trace: the timeline into this SVG file */
	double duration;	/* trace: seconds; 0 = until ^C or --count */
	bool force;		/* trace: even if tracing is on already */
	unsigned int queue;	/* steer add: the receive queue */
	unsigned int rule;	/* steer: the rule's location */
	bool rule_set;		/* steer: --rule was given */
	char **args;		/* the positional arguments (router: IFACEs) */
	int nargs;
};

struct cmd_def {
	const char *name;
	int (*run)(const struct xvi_cfg *cfg);
	const char *args;		/* synopsis of the positional arguments */
	int min_args, max_args;		/* IFACE, then (ext load) OBJ */
	const struct opt_def *opts;	/* subcommand options, may be NULL */
	const char *summary;
	const char *description;
	const struct cmd_def *verbs;	/* a group ("ext"): its commands */
};

/* Options every subcommand accepts, before or after its name. */
extern const struct opt_def xvi_global_opts[];

/* Parse the global options in front of the subcommand name; returns the
 * index of the subcommand in argv, or -EINVAL. */
int cmd_parse_global(int argc, char **argv, struct xvi_cfg *cfg);
/*
 * Parse argv of one subcommand (argv[0] is its name) into @cfg.
 * Returns 0, or -EINVAL after printing what is wrong and a hint.
 */
int cmd_parse(const struct cmd_def *cmd, int argc, char **argv, struct xvi_cfg *cfg);

void cmd_usage(const struct cmd_def *cmd, bool full);
void cmd_usage_all(const struct cmd_def *cmds);

int cmd_attach(const struct xvi_cfg *cfg);
int cmd_detach(const struct xvi_cfg *cfg);
int cmd_status(const struct xvi_cfg *cfg);
int cmd_stats(const struct xvi_cfg *cfg);
int cmd_serve(const struct xvi_cfg *cfg);
int cmd_ext_load(const struct xvi_cfg *cfg);
int cmd_ext_list(const struct xvi_cfg *cfg);
int cmd_ext_unload(const struct xvi_cfg *cfg);
int cmd_ext_forward(const struct xvi_cfg *cfg);
/* The interfaces a DEVMAP_HASH (ifindex keys) holds, by name (forward.c). */
void print_ifindex_keys(int fd, bool json);
int cmd_hook_list(const struct xvi_cfg *cfg);
int cmd_router_enable(const struct xvi_cfg *cfg);
int cmd_router_disable(const struct xvi_cfg *cfg);
int cmd_router_status(const struct xvi_cfg *cfg);
int cmd_trace(const struct xvi_cfg *cfg);
int cmd_steer_add(const struct xvi_cfg *cfg);
int cmd_steer_del(const struct xvi_cfg *cfg);

#endif /* XVI_CMD_H */
