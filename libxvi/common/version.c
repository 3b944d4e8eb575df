// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The version of the libxvi a program runs with (xvi.h). */
#include "xvi.h"

#define XVI_STR_(x)	#x
#define XVI_STR(x)	XVI_STR_(x)

const char *xvi_version(void)
{
	return XVI_STR(XVI_VERSION_MAJOR) "." XVI_STR(XVI_VERSION_MINOR) "."
	       XVI_STR(XVI_VERSION_PATCH);
}

__u32 xvi_version_major(void)
{
	return XVI_VERSION_MAJOR;
}

__u32 xvi_version_minor(void)
{
	return XVI_VERSION_MINOR;
}
