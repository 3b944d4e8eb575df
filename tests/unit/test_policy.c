// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xdp-vid's policy file: what a rule's "guard-allow" lets an endpoint send,
 * that the first matching rule decides it, and that a mistake in the file
 * is refused with a message naming it (a daemon that guessed would let
 * frames out the administrator never meant to).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include "xvid.h"

/* The daemon's log, captured: the last warning is what the admin reads. */
static char last_warning[512];

void xvid_log(int level, const char *fmt, ...)
{
	va_list ap;

	if (level != 0)
		return;
	va_start(ap, fmt);
	vsnprintf(last_warning, sizeof(last_warning), fmt, ap);
	va_end(ap);
}

static struct xvid_policy policy;

/* Load @text as a policy file: xvid_policy_load's result. */
static int load(const char *text)
{
	char path[] = "/tmp/xvi-policy-XXXXXX";
	int fd, err;

	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	last_warning[0] = '\0';
	err = xvid_policy_load(&policy, path, true, "xdp-vi");
	unlink(path);
	return err;
}

static struct xvi_tag udp4(const char *ip, __u16 port)
{
	struct xvi_tag t;

	memset(&t, 0, sizeof(t));
	t.kind = XVI_TAG_UDP4;
	t.port = htons(port);
	cr_assert_eq(inet_pton(AF_INET, ip, t.addr), 1);
	return t;
}

/* xvid_policy_check for uid @uid (no groups): what the deciding rule grants. */
static int check_grant(uid_t uid, const struct xvi_tag *tag, struct xvid_grant *g)
{
	struct xvid_client_id c = { .uid = uid, .gid = uid };
	char why[256];

	memset(g, 0xff, sizeof(*g));
	g->ext = true;
	return xvid_policy_check(&policy, &c, tag, true, "xv0", g, why, sizeof(why));
}

/* As check_grant; @bits gets the guard's allowances. */
static int check(uid_t uid, const struct xvi_tag *tag, __u32 *bits)
{
	struct xvid_grant g;
	int err = check_grant(uid, tag, &g);

	*bits = g.guard_allow;
	return err;
}

Test(policy, guard_allow_none_by_default)
{
	struct xvi_tag t = udp4("198.18.0.2", 5000);
	__u32 bits;

	cr_assert_eq(load("allow * udp 5000\n"), 0);
	cr_assert_eq(check(1000, &t, &bits), 0);
	cr_assert_eq(bits, 0);
}

Test(policy, guard_allow_kinds)
{
	cr_assert_eq(load("allow * udp 5000 guard-allow group,net-control\n"), 0);
	cr_assert_eq(policy.rules[0].guard_allow,
		     XVI_GUARD_ALLOW_GROUP | XVI_GUARD_ALLOW_NET_CONTROL);
	cr_assert_eq(load("allow * raw 1000-1999 guard-allow ip-options,control-ports\n"), 0);
	cr_assert_eq(policy.rules[0].guard_allow,
		     XVI_GUARD_ALLOW_IP_OPTIONS | XVI_GUARD_ALLOW_CTL_PORTS);
	cr_assert_eq(load("allow * udp default addr any guard-allow all\n"), 0);
	cr_assert_eq(policy.rules[0].addr, ADDR_ANY);
	cr_assert_eq(policy.rules[0].guard_allow,
		     XVI_GUARD_ALLOW_GROUP | XVI_GUARD_ALLOW_IP_OPTIONS |
		     XVI_GUARD_ALLOW_NET_CONTROL | XVI_GUARD_ALLOW_CTL_PORTS);
}

Test(policy, guard_allow_comes_from_the_deciding_rule)
{
	struct xvi_tag t = udp4("198.18.0.2", 5000);
	__u32 bits;

	cr_assert_eq(load("allow uid:1000 udp 5000 guard-allow group\n"
			  "allow * udp 5000-5001\n"), 0);
	cr_assert_eq(check(1000, &t, &bits), 0);
	cr_assert_eq(bits, XVI_GUARD_ALLOW_GROUP);
	cr_assert_eq(check(1001, &t, &bits), 0);
	cr_assert_eq(bits, 0, "uid 1001 matched the second rule, which allows nothing more");
}

Test(policy, guard_allow_mistakes_refused_by_name)
{
	static const char *const bad[] = {
		"deny * udp 5000 guard-allow group\n",		/* deny: nothing to allow */
		"allow * udp 5000 guard-allow multicast\n",	/* no such kind */
		"allow * udp 5000 guard-allow group,\n",	/* fine: trailing comma */
		"allow * udp 5000 guard-allow ,\n",		/* no kind at all */
		"allow * udp 5000 guard-allow group,bogus\n",
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int err = load(bad[i]);

		if (i == 2) {
			cr_assert_eq(err, 0, "%s", bad[i]);
			cr_assert_eq(policy.rules[0].guard_allow, XVI_GUARD_ALLOW_GROUP);
			continue;
		}
		cr_assert_eq(err, -EINVAL, "'%s' loaded", bad[i]);
		cr_assert(strstr(last_warning, "guard-allow goes on allow rules"),
			  "'%s': %s", bad[i], last_warning);
	}
}

Test(policy, guard_allow_not_mistaken_for_other_words)
{
	cr_assert_eq(load("allow * udp 5000 guard-allow\n"), -EINVAL);
	cr_assert_eq(load("allow * udp 5000 guard group\n"), -EINVAL);
	cr_assert_eq(load("allow * udp 5000 guard-allow group extra\n"), -EINVAL);
	cr_assert(strstr(last_warning, "line 1") || strstr(last_warning, ":1:"),
		  "%s", last_warning);
}

Test(policy, guard_allow_str)
{
	char buf[64];

	cr_assert_str_eq(xvid_guard_allow_str(0, buf, sizeof(buf)), "none");
	cr_assert_str_eq(xvid_guard_allow_str(XVI_GUARD_ALLOW_GROUP |
					      XVI_GUARD_ALLOW_CTL_PORTS, buf, sizeof(buf)),
			 "group,control-ports");
}

Test(policy, numbers_are_decimal)
{
	struct xvi_tag t = udp4("198.18.0.2", 5000);
	__u32 bits;

	cr_assert_eq(load("allow uid:010 udp 5000\n"), 0);
	cr_assert_eq(check(10, &t, &bits), 0);
	cr_assert_eq(check(8, &t, &bits), -EPERM);
}

Test(policy, ext_granted_only_by_the_deciding_rule)
{
	struct xvi_tag t = udp4("198.18.0.2", 5000);
	struct xvid_grant g;

	cr_assert_eq(load("allow uid:1000 udp 5000 ext\n"
			  "allow * udp 5000-5001 guard-allow group\n"), 0);
	cr_assert_eq(check_grant(1000, &t, &g), 0);
	cr_assert(g.ext);
	cr_assert_eq(g.guard_allow, 0);
	cr_assert_eq(check_grant(1001, &t, &g), 0);
	cr_assert(!g.ext, "uid 1001 matched a rule without ext");
	cr_assert_eq(g.guard_allow, XVI_GUARD_ALLOW_GROUP);
}

Test(policy, ext_with_guard_allow_in_either_order)
{
	cr_assert_eq(load("allow * udp 5000 guard-allow group ext\n"), 0);
	cr_assert(policy.rules[0].ext);
	cr_assert_eq(policy.rules[0].guard_allow, XVI_GUARD_ALLOW_GROUP);
	cr_assert_eq(load("allow * raw 7-9 ext guard-allow all\n"), 0);
	cr_assert(policy.rules[0].ext);
	cr_assert_eq(load("allow * udp 5000 addr any ext\n"), 0);
	cr_assert(policy.rules[0].ext);
	cr_assert_eq(load("allow * udp 5000\n"), 0);
	cr_assert(!policy.rules[0].ext, "ext is never the default");
}

Test(policy, ext_mistakes_refused_by_name)
{
	static const char *const bad[] = {
		"deny * udp 5000 ext\n",		/* deny: nothing to grant */
		"allow * udp 5000 ext ext\n",		/* twice */
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(load(bad[i]), -EINVAL, "'%s' loaded", bad[i]);
		cr_assert(strstr(last_warning, "ext goes once on allow rules"), "'%s': %s", bad[i],
			  last_warning);
	}
	cr_assert_eq(load("allow * udp 5000 exts\n"), -EINVAL);
	cr_assert(strstr(last_warning, "syntax"), "%s", last_warning);
	cr_assert_eq(load("allow * udp 5000 guard-allow group guard-allow ip-options\n"),
		     -EINVAL);
}

Test(policy, ext_limits)
{
	cr_assert_eq(load("allow * udp 5000 ext\n"), 0);
	cr_assert_eq(policy.ext_handlers_per_uid, 4, "default handlers per uid");
	cr_assert_eq(policy.ext_insns, 4096, "default instructions");
	cr_assert_eq(policy.ext_map_bytes, 1u << 20, "default map bytes");
	cr_assert_eq(load("limit ext-handlers-per-uid 2\nlimit ext-insns 100\n"
			  "limit ext-map-bytes 65536\n"), 0);
	cr_assert_eq(policy.ext_handlers_per_uid, 2);
	cr_assert_eq(policy.ext_insns, 100);
	cr_assert_eq(policy.ext_map_bytes, 65536);
	cr_assert_eq(load("limit ext-insns 0\n"), 0);
	cr_assert_eq(policy.ext_insns, 1, "clamped: a handler has at least one instruction");
	cr_assert_eq(load("limit ext-handlers 2\n"), -EINVAL);
	cr_assert(strstr(last_warning, "unknown limit") &&
		  strstr(last_warning, "ext-handlers-per-uid"), "%s", last_warning);
}
