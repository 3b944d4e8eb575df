// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The extension loader's arguments (include/xvi_ext.h): every mistake is
 * refused with -EINVAL (errno too) before anything is opened, loaded or
 * changed; an interface that does not exist is -ENODEV.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <criterion/criterion.h>
#include "xvi_ext.h"

#define NO_IFACE	"xvinoext0"

/* The library's last message: what the user reads. */
static char last_msg[512];

static int capture(enum xvi_print_level level, const char *fmt, va_list ap)
{
	vsnprintf(last_msg, sizeof(last_msg), fmt, ap);
	return 0;
}

static void setup(void)
{
	xvi_set_print(capture);
}

TestSuite(ext, .init = setup);

static void expect_einval(int ret, const char *what)
{
	cr_expect_eq(ret, -EINVAL, "%s: %d, expected -EINVAL", what, ret);
	cr_expect_eq(errno, EINVAL, "%s: errno %d, expected EINVAL", what, errno);
}

Test(ext, bad_endpoints_refused)
{
	static const char *bad[] = {
		"", "198.18.0.2", "198.18.0.2:", "198.18.0.2:0", "198.18.0.2:65536",
		"198.18.0.2:70x", "198.18.0.300:7000", "2001:2::2:7000", "[2001:2::2:7000",
		"[198.18.0.2]:7000", "raw:", "raw:0x1ffffffff", "raw:12z", "udp4 1.2.3.4:5",
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		last_msg[0] = '\0';
		expect_einval(xvi_ext__load(NO_IFACE, bad[i], 1, "x.bpf.o", NULL), bad[i]);
		cr_expect(strstr(last_msg, "ADDR:PORT") && strstr(last_msg, bad[i]),
			  "'%s': the message does not name it and the forms: %s", bad[i], last_msg);
		expect_einval(xvi_ext__unload(NO_IFACE, bad[i], 1, NULL), bad[i]);
	}
	expect_einval(xvi_ext__load(NO_IFACE, NULL, 1, "x.bpf.o", NULL), "NULL endpoint");
}

Test(ext, bad_arguments_refused)
{
	struct xvi_ext_opts short_opts = { .sz = 2 };

	expect_einval(xvi_ext__load(NO_IFACE, "198.18.0.2:7000", XVI_EXT_MAX_HANDLERS,
				    "x.bpf.o", NULL), "handler 16");
	expect_einval(xvi_ext__unload(NO_IFACE, "198.18.0.2:7000", XVI_EXT_MAX_HANDLERS, NULL),
		      "unload handler 16");
	expect_einval(xvi_ext__load(NO_IFACE, "198.18.0.2:7000", 1, NULL, NULL), "NULL object");
	expect_einval(xvi_ext__load(NULL, "198.18.0.2:7000", 1, "x.bpf.o", NULL), "NULL iface");
	expect_einval(xvi_ext__load(NO_IFACE, "198.18.0.2:7000", 1, "x.bpf.o", &short_opts),
		      "opts.sz 2");
	expect_einval(xvi_ext__info(NO_IFACE, NULL, 1, NULL), "info, NULL array");
}

/* Good arguments reach the interface, which is not there. */
Test(ext, good_endpoints_reach_the_interface)
{
	static const char *good[] = {
		"198.18.0.2:7000", "0.0.0.0:7000", "[2001:2::2]:7000", "[::]:1", "raw:0x2a",
		"raw:42",
	};
	size_t i;
	int ret;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ret = xvi_ext__unload(NO_IFACE, good[i], 0, NULL);
		cr_expect_eq(ret, -ENODEV, "%s: %d, expected -ENODEV (no such interface)",
			     good[i], ret);
	}
	ret = xvi_ext__info(NO_IFACE, NULL, 0, NULL);
	cr_expect_eq(ret, -ENODEV, "info: %d, expected -ENODEV", ret);
}
