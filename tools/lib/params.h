/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Table-driven command lines, in the style of xdp-tools: a program declares
 * its options in a table (type, names, field, help, default, limits);
 * parsing, validation, defaults and the help text all come from the table.
 *
 *	static const struct opt_def opts[] = {
 *		{ OPT_UINT, "port", 'p', OPT_FIELD(struct args, port), "PORT",
 *		  .help = "UDP port", .def = "11111", .min = 1, .max = 65535,
 *		  .err = "a port is 1..65535" },
 *		{ OPT_HELP, "help", 'h', .help = "this help" },
 *		{ OPT_END },
 *	};
 *
 * A bad value is reported as "PROG: -p 0: a port is 1..65535" and a pointer
 * to --help; .err says what the value must be (generated from the type and
 * limits when NULL).
 */
#ifndef XVI_TOOLS_PARAMS_H
#define XVI_TOOLS_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum opt_type {
	OPT_END = 0,	/* ends a table */
	OPT_SECTION,	/* a heading in the help (.help), no option */
	OPT_HELP,	/* print the help on stdout, parse nothing more */
	OPT_FLAG,	/* bool = true */
	OPT_COUNT,	/* int += 1 (-v -v, -vv) */
	OPT_STRING,	/* const char *, not empty */
	OPT_UINT,	/* unsigned integer of the field's size, decimal, in [min, max] */
	OPT_SECONDS,	/* double seconds in [0, max], fractions allowed */
	OPT_ENUM,	/* int from .enums */
	OPT_BITS,	/* the field (an unsigned integer) |= .bits */
	OPT_FUNC,	/* .fn(cfg, value) */
};

enum opt_flags {
	OPT_POW2	= 1 << 0,	/* OPT_UINT: a power of 2 */
	OPT_POSITIVE	= 1 << 1,	/* OPT_SECONDS: above 0 */
	OPT_OPTIONAL	= 1 << 2,	/* --name[=VALUE]; .fn gets NULL without one */
};

struct opt_enum {
	const char *name;		/* NULL ends the table */
	int value;
};

struct opt_def {
	enum opt_type type;
	const char *name;		/* long name; NULL: short only */
	char short_name;		/* 0: long only */
	size_t off, size;		/* the field: OPT_FIELD(struct, member) */
	const char *metavar;		/* shown for the value */
	const char *help;		/* lines after the first are indented under it */
	const char *def;		/* default, as on the command line: applied
					 * before parsing, shown as "(default X)" */
	const char *err;		/* what the value must be */
	unsigned long long min, max;	/* OPT_UINT; OPT_SECONDS: max */
	unsigned int flags;		/* enum opt_flags */
	const struct opt_enum *enums;	/* OPT_ENUM */
	unsigned long long bits;	/* OPT_BITS */
	int (*fn)(void *cfg, const char *value);	/* OPT_FUNC: 0 or -EINVAL */
};

#define OPT_FIELD(type, member) \
	.off = offsetof(type, member), .size = sizeof(((type *)0)->member)

struct opt_prog {
	const char *name;		/* "PROG: ..." and "Try 'PROG --help'." */
	const char *synopsis;		/* the help text before the options */
	const struct opt_def *opts;
	const struct opt_def *more;	/* a second table (options every command
					 * of a program shares), may be NULL */
	const char *epilog;		/* the help text after the options */
	int help_col;			/* where an option's help text starts */
	bool stop_at_arg;		/* stop at the first argument (a command) */
};

/*
 * Parse the options of @argv (argv[0] is the program or command name) into
 * @cfg, after applying the tables' defaults.  Options and arguments may mix
 * unless stop_at_arg; getopt moves the arguments to the end.  Returns the
 * index of the first argument (argc if none), 0 if OPT_HELP printed the
 * help, or -EINVAL after printing what is wrong and the fix.
 * Defaults are applied on every call: a table parsed in two passes (global
 * options before and after a command) keeps its defaults out of .def.
 */
int opt_parse(const struct opt_prog *prog, int argc, char **argv, void *cfg);

/* The value of @name in @enums: 0, or -ENOENT. */
int opt_enum_find(const struct opt_enum *enums, const char *name, int *value);

/* The full help: synopsis, options, epilog. */
void opt_usage(const struct opt_prog *prog, FILE *f);
/* One table's options, help text at column @help_col. */
void opt_print_table(FILE *f, const struct opt_def *opts, int help_col);

/* "PROG: message" and "Try 'PROG --help'." on stderr; returns 2, the tools'
 * exit code for a usage error. */
__attribute__((format(printf, 2, 3)))
int opt_error(const char *prog, const char *fmt, ...);

#endif /* XVI_TOOLS_PARAMS_H */
