// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include <xvi.h>

#include "print.h"

static struct print_opts opts;
static bool quiet;
static const int no_verbosity;

static int verbosity(void)
{
	return opts.verbosity ? *opts.verbosity : no_verbosity;
}

static int print_libxvi(enum xvi_print_level level, const char *fmt, va_list args)
{
	char buf[1024];
	const char *msg = buf;

	if (quiet || (level == XVI_INFO && verbosity() < opts.info_from) ||
	    (level == XVI_DEBUG && verbosity() < opts.debug_from))
		return 0;
	if (!opts.prog)
		return vfprintf(stderr, fmt, args);
	vsnprintf(buf, sizeof(buf), fmt, args);
	if (!strncmp(msg, "libxvi: ", 8))
		msg += 8;
	return fprintf(stderr, "%s: %s", opts.prog, msg);
}

/* libbpf's and libxdp's levels: warn, info, debug. */
static bool bpf_shows(bool warn)
{
	return verbosity() >= (warn ? 1 : 2);
}

static int print_libbpf(enum libbpf_print_level level, const char *fmt, va_list args)
{
	return bpf_shows(level == LIBBPF_WARN) ? vfprintf(stderr, fmt, args) : 0;
}

static int print_libxdp(enum libxdp_print_level level, const char *fmt, va_list args)
{
	return bpf_shows(level == LIBXDP_WARN) ? vfprintf(stderr, fmt, args) : 0;
}

void print_setup(const struct print_opts *o)
{
	opts = *o;
	xvi_set_print(print_libxvi);
	if (opts.libbpf)
		libbpf_set_print(print_libbpf);
	if (opts.libxdp)
		libxdp_set_print(print_libxdp);
}

void print_quiet(bool q)
{
	quiet = q;
}
