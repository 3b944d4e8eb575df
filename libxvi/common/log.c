// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include "common/log.h"

static int default_print(enum xvi_print_level level, const char *fmt,
			 va_list args)
{
	if (level == XVI_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, args);
}

static xvi_print_fn_t print_fn = default_print;

xvi_print_fn_t xvi_set_print(xvi_print_fn_t fn)
{
	xvi_print_fn_t old = print_fn;

	print_fn = fn;
	return old;
}

void xvi_log(enum xvi_print_level level, const char *fmt, ...)
{
	int saved_errno = errno;	/* logging never clobbers errno */
	va_list args;

	if (print_fn) {
		va_start(args, fmt);
		print_fn(level, fmt, args);
		va_end(args);
	}
	errno = saved_errno;
}
