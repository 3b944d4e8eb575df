// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "params.h"
#include "parse.h"

#define MAX_OPTS 64

static bool is_option(const struct opt_def *d)
{
	return d->type != OPT_SECTION;
}

static bool takes_value(const struct opt_def *d)
{
	switch (d->type) {
	case OPT_STRING:
	case OPT_UINT:
	case OPT_SECONDS:
	case OPT_ENUM:
	case OPT_FUNC:
		return true;
	default:
		return false;
	}
}

/* Both tables in one flat list, as getopt sees them. */
static int collect(const struct opt_prog *p, const struct opt_def **defs)
{
	const struct opt_def *tables[2] = { p->opts, p->more }, *d;
	int n = 0, t;

	for (t = 0; t < 2; t++)
		for (d = tables[t]; d && d->type != OPT_END && n < MAX_OPTS; d++)
			if (is_option(d))
				defs[n++] = d;
	return n;
}

int opt_error(const char *prog, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s --help'.\n", prog);
	return 2;
}

int opt_enum_find(const struct opt_enum *enums, const char *name, int *value)
{
	const struct opt_enum *e;

	for (e = enums; e && e->name; e++) {
		if (!strcmp(e->name, name)) {
			*value = e->value;
			return 0;
		}
	}
	return -ENOENT;
}

static void store_uint(void *field, size_t size, unsigned long long v)
{
	switch (size) {
	case 1: *(uint8_t *)field = (uint8_t)v; break;
	case 2: *(uint16_t *)field = (uint16_t)v; break;
	case 4: *(uint32_t *)field = (uint32_t)v; break;
	default: *(uint64_t *)field = v; break;
	}
}

static unsigned long long load_uint(const void *field, size_t size)
{
	switch (size) {
	case 1: return *(const uint8_t *)field;
	case 2: return *(const uint16_t *)field;
	case 4: return *(const uint32_t *)field;
	default: return *(const uint64_t *)field;
	}
}

/* The largest value a field of @size bytes holds. */
static unsigned long long size_max(size_t size)
{
	return size >= 8 ? UINT64_MAX : (1ull << (8 * size)) - 1;
}

/* "-p" or "--port", as the option is named in messages. */
static const char *opt_label(const struct opt_def *d, char *buf, size_t len)
{
	if (d->short_name && !(d->flags & OPT_OPTIONAL))
		snprintf(buf, len, "-%c", d->short_name);
	else
		snprintf(buf, len, "--%s", d->name);
	return buf;
}

/* What a value of @d must be, when the table does not say. */
static void explain(const struct opt_def *d, char *buf, size_t len)
{
	const struct opt_enum *e;
	size_t n = 0;

	if (d->err) {
		snprintf(buf, len, "%s", d->err);
		return;
	}
	switch (d->type) {
	case OPT_UINT:
		snprintf(buf, len, "%s %llu..%llu", d->flags & OPT_POW2 ? "a power of 2 in" : "give",
			 d->min, d->max ? d->max : size_max(d->size));
		break;
	case OPT_SECONDS:
		snprintf(buf, len, "give seconds%s, e.g. 0.5", d->flags & OPT_POSITIVE ?
			 " above 0" : "");
		break;
	case OPT_ENUM:
		n = (size_t)snprintf(buf, len, "use");
		for (e = d->enums; e && e->name && n < len; e++)
			n += (size_t)snprintf(buf + n, len - n, "%s%s", e == d->enums ? " " :
					      e[1].name ? ", " : " or ", e->name);
		break;
	default:
		snprintf(buf, len, "give a non-empty value");
	}
}

static int set_value(const struct opt_def *d, const char *arg, void *cfg)
{
	char *field = (char *)cfg + d->off;
	unsigned long v;
	double max;

	switch (d->type) {
	case OPT_FLAG:
		*(bool *)field = true;
		return 0;
	case OPT_COUNT:
		(*(int *)field)++;
		return 0;
	case OPT_BITS:
		store_uint(field, d->size, load_uint(field, d->size) | d->bits);
		return 0;
	case OPT_STRING:
		if (!*arg)
			return -EINVAL;
		*(const char **)field = arg;
		return 0;
	case OPT_UINT:
		if (xt_parse_ulong(arg, d->min, d->max ? d->max : size_max(d->size), &v) ||
		    ((d->flags & OPT_POW2) && (v & (v - 1))))
			return -EINVAL;
		store_uint(field, d->size, v);
		return 0;
	case OPT_SECONDS:
		max = d->max ? (double)d->max : 86400.0 * 365;
		if (xt_parse_seconds(arg, max, (double *)field) ||
		    ((d->flags & OPT_POSITIVE) && !(*(double *)field > 0)))
			return -EINVAL;
		return 0;
	case OPT_ENUM:
		return opt_enum_find(d->enums, arg, (int *)field) ? -EINVAL : 0;
	case OPT_FUNC:
		return d->fn(cfg, arg);
	default:
		return -EINVAL;
	}
}

static int bad_value(const char *prog, const struct opt_def *d, const char *arg)
{
	char label[64], why[256];

	opt_label(d, label, sizeof(label));
	explain(d, why, sizeof(why));
	if (d->flags & OPT_OPTIONAL)
		opt_error(prog, "%s=%s: %s", label, arg, why);
	else
		opt_error(prog, "%s %s: %s", label, arg, why);
	return -EINVAL;
}

static int apply_defaults(const struct opt_prog *p, const struct opt_def **defs, int n,
			  void *cfg)
{
	int i;

	for (i = 0; i < n; i++) {
		if (!defs[i]->def)
			continue;
		/* A default that does not parse is the program's bug: say so. */
		if (set_value(defs[i], defs[i]->def, cfg))
			return bad_value(p->name, defs[i], defs[i]->def);
	}
	return 0;
}

int opt_parse(const struct opt_prog *p, int argc, char **argv, void *cfg)
{
	const struct opt_def *defs[MAX_OPTS];
	struct option lopts[MAX_OPTS + 1] = {};
	char shorts[3 * MAX_OPTS + 3], *s = shorts;
	int i, c, n, nl = 0;

	n = collect(p, defs);
	if (apply_defaults(p, defs, n, cfg))
		return -EINVAL;
	if (p->stop_at_arg)
		*s++ = '+';	/* stop at the command name */
	*s++ = ':';		/* report a missing value as ':' */
	for (i = 0; i < n; i++) {
		int has_arg = !takes_value(defs[i]) ? no_argument :
			      defs[i]->flags & OPT_OPTIONAL ? optional_argument :
			      required_argument;

		if (defs[i]->name) {
			lopts[nl].name = defs[i]->name;
			lopts[nl].has_arg = has_arg;
			lopts[nl++].val = 256 + i;
		}
		if (defs[i]->short_name) {
			*s++ = defs[i]->short_name;
			if (has_arg != no_argument)
				*s++ = ':';
			if (has_arg == optional_argument)
				*s++ = ':';
		}
	}
	*s = '\0';

	optind = 0;	/* glibc: full re-initialisation, for a second pass */
	opterr = 0;
	while ((c = getopt_long(argc, argv, shorts, lopts, NULL)) != -1) {
		const struct opt_def *d = NULL;

		if (c == ':' || c == '?') {
			char opt[64];

			/* optopt: the short option; argv[optind - 1]: a long one */
			if (optopt > 0 && optopt < 256)
				snprintf(opt, sizeof(opt), "-%c", optopt);
			else
				snprintf(opt, sizeof(opt), "%s", argv[optind - 1]);
			opt_error(p->name, c == ':' ? "option %s needs a value" :
				  "unknown option %s", opt);
			return -EINVAL;
		}
		if (c >= 256 && c < 256 + n) {
			d = defs[c - 256];
		} else {
			for (i = 0; i < n && !d; i++)
				if (defs[i]->short_name && defs[i]->short_name == c)
					d = defs[i];
		}
		if (!d) {
			opt_error(p->name, "unknown option %s", argv[optind - 1]);
			return -EINVAL;
		}
		if (d->type == OPT_HELP) {
			opt_usage(p, stdout);
			return 0;
		}
		if (set_value(d, optarg, cfg))
			return bad_value(p->name, d, optarg);
	}
	return optind;
}

/* @text, its lines after the first indented to @col. */
static void print_indented(FILE *f, const char *text, int col)
{
	const char *nl;

	while ((nl = strchr(text, '\n'))) {
		fprintf(f, "%.*s\n%*s", (int)(nl - text), text, col, "");
		text = nl + 1;
	}
	fputs(text, f);
}

static void print_opt(FILE *f, const struct opt_def *d, int col)
{
	char left[96];
	int n;

	if (d->type == OPT_SECTION) {
		fprintf(f, "  %s\n", d->help);
		return;
	}
	if (d->short_name && d->name)
		n = snprintf(left, sizeof(left), "  -%c, --%s", d->short_name, d->name);
	else if (d->name)
		n = snprintf(left, sizeof(left), "      --%s", d->name);
	else
		n = snprintf(left, sizeof(left), "  -%c", d->short_name);
	if (d->metavar && n > 0 && (size_t)n < sizeof(left))
		snprintf(left + n, sizeof(left) - (size_t)n, d->flags & OPT_OPTIONAL ?
			 "[=%s]" : " %s", d->metavar);
	/* A name too long for the column keeps two spaces from its help. */
	fprintf(f, "%-*s %s", col - 1, left, strlen(left) > (size_t)col - 1 ? " " : "");
	print_indented(f, d->help ? d->help : "", col);
	if (d->def)
		fprintf(f, " (default %s)", d->def);
	fputc('\n', f);
}

void opt_print_table(FILE *f, const struct opt_def *opts, int help_col)
{
	const struct opt_def *d;

	for (d = opts; d && d->type != OPT_END; d++)
		print_opt(f, d, help_col);
}

void opt_usage(const struct opt_prog *p, FILE *f)
{
	if (p->synopsis)
		fputs(p->synopsis, f);
	opt_print_table(f, p->opts, p->help_col);
	opt_print_table(f, p->more, p->help_col);
	if (p->epilog)
		fputs(p->epilog, f);
}
