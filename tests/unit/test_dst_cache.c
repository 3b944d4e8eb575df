// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Destination cache with an injected clock and a fake resolver. */
#include <errno.h>
#include <string.h>
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include "nl/dst_cache.h"

static __u64 fake_now;
static int resolve_calls;
static int resolve_err;
static __u64 resolve_delay_ms;	/* the slow path blocks this long */

static __u64 fake_clock(void)
{
	return fake_now;
}

/* Deterministic answer derived from the key, so aliasing would show. */
static int fake_resolve(void *ctx, const struct xvi_ip *dst, __u8 mac[6],
			struct xvi_ip *src)
{
	int *tag = ctx;

	resolve_calls++;
	fake_now += resolve_delay_ms;
	if (resolve_err)
		return resolve_err;
	mac[0] = 0x02;
	mac[1] = (__u8)dst->family;
	memcpy(mac + 2, dst->a + (dst->family == AF_INET6 ? 12 : 0), 4);
	src->family = dst->family;
	memset(src->a, 0, 16);
	src->a[0] = (__u8)*tag;
	return 0;
}

static struct xvi_dst_cache cache;
static int ctx_tag = 0x5a;

static void setup(void)
{
	fake_now = 1000000;
	resolve_calls = 0;
	resolve_err = 0;
	resolve_delay_ms = 0;
	xvi_dst_cache__init(&cache, fake_resolve, &ctx_tag, fake_clock);
}

static struct xvi_ip ip4(__u32 host)
{
	struct xvi_ip ip;

	memset(&ip, 0xee, sizeof(ip));	/* bytes past the v4 address are junk */
	ip.family = AF_INET;
	host = htonl(host);
	memcpy(ip.a, &host, 4);
	return ip;
}

static void expect_entry(const struct xvi_ip *ip, const char *what)
{
	const struct xvi_dst_entry *e = NULL;
	__u64 now = xvi_dst_cache__now(&cache);
	int err = xvi_dst_cache__get(&cache, ip, now, &e);

	cr_assert_eq(err, 0, "%s: err %d", what, err);
	cr_assert_not_null(e);
	cr_expect_eq(e->mac[1], ip->family, "%s: wrong family in MAC", what);
	cr_expect(!memcmp(e->mac + 2, ip->a + (ip->family == AF_INET6 ? 12 : 0), 4),
		  "%s: entry of another destination", what);
	cr_expect_eq(e->src.a[0], 0x5a, "%s: source address", what);
}

Test(dst_cache, hit_after_miss, .init = setup)
{
	struct xvi_ip a = ip4(0xc6120002);

	expect_entry(&a, "first");
	cr_expect_eq(resolve_calls, 1);
	expect_entry(&a, "second");
	expect_entry(&a, "third");
	cr_expect_eq(resolve_calls, 1, "a fresh entry must not resolve again");
	cr_expect_eq(cache.hits, 2u);
	cr_expect_eq(cache.misses, 1u);
}

Test(dst_cache, expiry, .init = setup)
{
	struct xvi_ip a = ip4(0xc6120002);

	expect_entry(&a, "first");
	fake_now += XVI_DST_TTL_MS - 1;
	expect_entry(&a, "just before expiry");
	cr_expect_eq(resolve_calls, 1);
	fake_now += 1;
	expect_entry(&a, "at expiry");
	cr_expect_eq(resolve_calls, 2, "an expired entry must be resolved again");
	expect_entry(&a, "after refresh");
	cr_expect_eq(resolve_calls, 2);
}

Test(dst_cache, failures_are_cached_briefly, .init = setup)
{
	struct xvi_ip a = ip4(0xc6120009);
	const struct xvi_dst_entry *e;

	resolve_err = -EHOSTUNREACH;
	cr_expect_eq(xvi_dst_cache__get(&cache, &a, fake_now, &e), -EHOSTUNREACH);
	cr_expect_eq(xvi_dst_cache__get(&cache, &a, fake_now + 1, &e), -EHOSTUNREACH);
	cr_expect_eq(resolve_calls, 1, "a failure within the negative TTL must not block again");
	resolve_err = 0;
	fake_now += XVI_DST_NEG_TTL_MS;
	expect_entry(&a, "after negative TTL");
	cr_expect_eq(resolve_calls, 2);
}

Test(dst_cache, slow_failure_is_still_cached, .init = setup)
{
	struct xvi_ip a = ip4(0xc6120063);
	const struct xvi_dst_entry *e;
	__u64 batch_now = fake_now;

	/* The resolver blocks longer than the negative TTL, then fails. */
	resolve_err = -EHOSTUNREACH;
	resolve_delay_ms = 2 * XVI_DST_NEG_TTL_MS;
	cr_expect_eq(xvi_dst_cache__get(&cache, &a, batch_now, &e), -EHOSTUNREACH);
	cr_expect_eq(xvi_dst_cache__get(&cache, &a, fake_now, &e), -EHOSTUNREACH);
	cr_expect_eq(resolve_calls, 1, "lifetime must start after the resolver returned");
}

Test(dst_cache, families_do_not_alias, .init = setup)
{
	struct xvi_ip v4 = ip4(0x20010002), v6;

	memset(&v6, 0, sizeof(v6));
	v6.family = AF_INET6;
	inet_pton(AF_INET6, "2001:2::2", v6.a);	/* same first 4 bytes as v4 */
	expect_entry(&v4, "v4");
	expect_entry(&v6, "v6");
	expect_entry(&v4, "v4 again");
	expect_entry(&v6, "v6 again");
	cr_expect_eq(resolve_calls, 2);
}

Test(dst_cache, many_destinations_stay_correct, .init = setup)
{
	__u32 i, round;
	int before;

	/* Four times the capacity: eviction must never return a wrong entry. */
	for (round = 0; round < 2; round++) {
		for (i = 0; i < 4 * XVI_DST_CACHE_SIZE; i++) {
			struct xvi_ip a = ip4(0xc6120000 + i * 257);

			expect_entry(&a, "bulk");
		}
	}
	/* A small working set fits and stops resolving. */
	for (i = 0; i < 8; i++) {
		struct xvi_ip a = ip4(0xc6130000 + i);

		expect_entry(&a, "working set");
	}
	before = resolve_calls;
	for (round = 0; round < 3; round++) {
		for (i = 0; i < 8; i++) {
			struct xvi_ip a = ip4(0xc6130000 + i);

			expect_entry(&a, "working set again");
		}
	}
	cr_expect_eq(resolve_calls, before, "working set of 8 must stay cached");
}

Test(dst_cache, flush_forgets, .init = setup)
{
	struct xvi_ip a = ip4(0xc6120002);

	expect_entry(&a, "first");
	xvi_dst_cache__flush(&cache);
	expect_entry(&a, "after flush");
	cr_expect_eq(resolve_calls, 2);
}

Test(dst_cache, default_clock_is_monotonic_ms)
{
	__u64 a = xvi_dst_cache__clock(), b = xvi_dst_cache__clock();

	cr_expect_gt(a, 0u);
	cr_expect_geq(b, a);
}
