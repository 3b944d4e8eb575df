/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Internal logging through the xvi_set_print() hook. */
#ifndef XVI_LOG_H
#define XVI_LOG_H

#include <errno.h>
#include "xvi.h"

__attribute__((format(printf, 2, 3)))
void xvi_log(enum xvi_print_level level, const char *fmt, ...);

/* Every message carries the "libxvi: " prefix and ends with a newline. */
#define pr_warn(fmt, ...)  xvi_log(XVI_WARN, "libxvi: " fmt, ##__VA_ARGS__)
#define pr_info(fmt, ...)  xvi_log(XVI_INFO, "libxvi: " fmt, ##__VA_ARGS__)
#define pr_debug(fmt, ...) xvi_log(XVI_DEBUG, "libxvi: " fmt, ##__VA_ARGS__)

/* Return -err and set errno = err: the library's error convention. */
static inline int xvi_err(int err)
{
	if (err < 0)
		err = -err;
	errno = err;
	return -err;
}

#endif /* XVI_LOG_H */
