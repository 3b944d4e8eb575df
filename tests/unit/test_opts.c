// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xvi_endpoint__open() option validation, black box.  Validation runs
 * before anything touches the system, so bad options fail with EINVAL and
 * a message naming the field, while good options get as far as looking up
 * the (deliberately missing) interface and fail with ENODEV.  Nothing here
 * opens a socket or touches a real interface.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <xvi.h>

#define NOIF "xvinosuch0"
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static char last_msg[512];

static int capture(enum xvi_print_level level, const char *fmt, va_list args)
{
	if (level == XVI_WARN)
		vsnprintf(last_msg, sizeof(last_msg), fmt, args);
	return 0;
}

static struct sockaddr_in sin_ok;
static struct sockaddr_in sin_port0;
static struct sockaddr_in6 sin6_ok;
static struct sockaddr_un_like {
	sa_family_t family;
	char path[20];
} sun_addr = { AF_UNIX, "x" };

static void setup(void)
{
	xvi_set_print(capture);
	memset(&sin_ok, 0, sizeof(sin_ok));
	sin_ok.sin_family = AF_INET;
	sin_ok.sin_port = htons(7000);
	sin_port0 = sin_ok;
	sin_port0.sin_port = 0;
	memset(&sin6_ok, 0, sizeof(sin6_ok));
	sin6_ok.sin6_family = AF_INET6;
	sin6_ok.sin6_port = htons(7000);
}

enum { A_NONE, A_V4, A_V4_PORT0, A_V6, A_UNIX, A_V4_SHORT, A_V6_AS_V4_LEN };

struct opt_case {
	const char *name;
	int addr;			/* A_* */
	struct xvi_endpoint_opts o;	/* sz and addr filled in by the runner */
	int want;			/* errno */
	const char *msg;		/* substring of the warning, for EINVAL */
};

#define C(NAME, ADDR, WANT, MSG, ...) \
	{ NAME, ADDR, { __VA_ARGS__ }, WANT, MSG }

static const struct opt_case cases[] = {
	C("defaults v4", A_V4, ENODEV, NULL),
	C("defaults v6", A_V6, ENODEV, NULL),
	C("no address", A_NONE, EINVAL, ".addr"),
	C("port 0", A_V4_PORT0, EINVAL, "port 0"),
	C("AF_UNIX address", A_UNIX, EINVAL, "family"),
	C("addrlen too small", A_V4_SHORT, EINVAL, "addrlen"),
	C("v6 with v4 addrlen", A_V6_AS_V4_LEN, EINVAL, "sockaddr_in6"),
	C("raw tag 0", A_NONE, EINVAL, "raw_tag", .kind = XVI_EP_RAW),
	C("raw tag 5", A_NONE, ENODEV, NULL, .kind = XVI_EP_RAW, .raw_tag = 5),
	C("unknown kind", A_V4, EINVAL, "kind", .kind = 7),
	C("rx_size not pow2", A_V4, EINVAL, "rx_size", .rx_size = 1000),
	C("tx_size too small", A_V4, EINVAL, "tx_size", .tx_size = 8),
	C("fill_size 3", A_V4, EINVAL, "fill_size", .fill_size = 3),
	C("comp_size huge", A_V4, EINVAL, "comp_size", .comp_size = 1u << 20),
	C("frame_size 1024", A_V4, EINVAL, "frame_size", .frame_size = 1024),
	C("frame_size 3000", A_V4, EINVAL, "frame_size", .frame_size = 3000),
	C("frame_size 4096", A_V4, ENODEV, NULL, .frame_size = 4096),
	C("num_frames not pow2", A_V4, EINVAL, "num_frames", .num_frames = 3000),
	C("num_frames < fill+tx", A_V4, EINVAL, "num_frames", .num_frames = 2048),
	C("small but consistent", A_V4, ENODEV, NULL, .num_frames = 128, .rx_size = 64,
	  .tx_size = 64, .fill_size = 64, .comp_size = 64),
	C("bad bind_mode", A_V4, EINVAL, "bind_mode", .bind_mode = 9),
	C("bad wait_mode", A_V4, EINVAL, "wait_mode", .wait_mode = 9),
	C("spin_us huge", A_V4, EINVAL, "spin_us", .spin_us = 5000000),
	C("resolve timeout huge", A_V4, EINVAL, "resolve_timeout_ms",
	  .resolve_timeout_ms = 3600000),
};

static void set_addr(struct xvi_endpoint_opts *o, int which)
{
	switch (which) {
	case A_V4:
		o->addr = (struct sockaddr *)&sin_ok;
		o->addrlen = sizeof(sin_ok);
		break;
	case A_V4_PORT0:
		o->addr = (struct sockaddr *)&sin_port0;
		o->addrlen = sizeof(sin_port0);
		break;
	case A_V6:
		o->addr = (struct sockaddr *)&sin6_ok;
		o->addrlen = sizeof(sin6_ok);
		break;
	case A_UNIX:
		o->addr = (struct sockaddr *)&sun_addr;
		o->addrlen = sizeof(sun_addr);
		break;
	case A_V4_SHORT:
		o->addr = (struct sockaddr *)&sin_ok;
		o->addrlen = 8;
		break;
	case A_V6_AS_V4_LEN:
		o->addr = (struct sockaddr *)&sin6_ok;
		o->addrlen = sizeof(struct sockaddr_in);
		break;
	}
}

static void expect_open(const char *name, const char *ifname,
			const struct xvi_endpoint_opts *o, int want, const char *msg)
{
	struct xvi_endpoint *ep;

	last_msg[0] = 0;
	errno = 0;
	ep = xvi_endpoint__open(ifname, o);
	cr_expect_null(ep, "%s: open succeeded", name);
	if (ep)
		xvi_endpoint__close(ep);
	cr_expect_eq(errno, want, "%s: errno %d (%s), want %d (%s); last message: %s", name,
		     errno, strerror(errno), want, strerror(want), last_msg);
	if (msg)
		cr_expect(strstr(last_msg, msg), "%s: message '%s' does not name '%s'", name,
			  last_msg, msg);
	if (want == EINVAL)
		cr_expect(strstr(last_msg, "libxvi: "), "%s: message lacks the prefix", name);
}

Test(opts, table, .init = setup)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct xvi_endpoint_opts o = cases[i].o;

		o.sz = sizeof(o);
		set_addr(&o, cases[i].addr);
		expect_open(cases[i].name, NOIF, &o, cases[i].want, cases[i].msg);
	}
}

Test(opts, null_opts, .init = setup)
{
	/* UDP is the default kind and needs an address. */
	expect_open("NULL opts", NOIF, NULL, EINVAL, ".addr");
}

Test(opts, bad_interface_names, .init = setup)
{
	XVI_OPTS(xvi_endpoint_opts, o, .addr = (struct sockaddr *)&sin_ok,
		 .addrlen = sizeof(sin_ok));

	expect_open("NULL ifname", NULL, &o, EINVAL, "interface name");
	expect_open("empty ifname", "", &o, EINVAL, "interface name");
	expect_open("long ifname", "h2-0123456789abcdef", &o, EINVAL, "interface name");
}

Test(opts, size_field, .init = setup)
{
	XVI_OPTS(xvi_endpoint_opts, o, .addr = (struct sockaddr *)&sin_ok,
		 .addrlen = sizeof(sin_ok));

	o.sz = 0;
	expect_open("sz 0", NOIF, &o, EINVAL, "size");
	o.sz = 4;
	expect_open("sz 4", NOIF, &o, EINVAL, "size");
	/* An older caller: fields past sz read as defaults. */
	o.sz = offsetof(struct xvi_endpoint_opts, raw_tag);
	o.rx_size = 1000;	/* beyond sz: must be ignored */
	expect_open("older caller", NOIF, &o, ENODEV, NULL);
}

Test(opts, newer_caller_trailing_bytes, .init = setup)
{
	struct {
		struct xvi_endpoint_opts o;
		__u64 future[2];
	} big;

	memset(&big, 0, sizeof(big));
	big.o.sz = sizeof(big);
	big.o.addr = (struct sockaddr *)&sin_ok;
	big.o.addrlen = sizeof(sin_ok);
	expect_open("newer caller, zero tail", NOIF, &big.o, ENODEV, NULL);
	big.future[1] = 1;
	expect_open("newer caller, unknown option", NOIF, &big.o, EINVAL, "unknown nonzero");
}

Test(opts, null_endpoint_is_safe, .init = setup)
{
	struct xvi_endpoint_info info = { .sz = sizeof(info) };
	struct xvi_endpoint_stats st = { .sz = sizeof(st) };

	xvi_endpoint__close(NULL);
	cr_expect_eq(xvi_endpoint__info(NULL, &info), -EINVAL);
	cr_expect_eq(xvi_endpoint__stats(NULL, &st), -EINVAL);
	cr_expect_eq(xvi_endpoint__fd(NULL), -EINVAL);
	cr_expect_eq(xvi_endpoint__recv_batch(NULL, NULL, 1), -EINVAL);
	cr_expect_eq(xvi_endpoint__tx_send(NULL, NULL, 1), -EINVAL);
	cr_expect_eq(xvi_endpoint__sendto(NULL, "x", 1, NULL), -EINVAL);
}
