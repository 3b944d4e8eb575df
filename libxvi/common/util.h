/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Small helpers shared by libxvi's sources (and the tools that link
 * libxvi.a): branch hints and the monotonic clock.  Internal, header-only.
 */
#ifndef XVI_UTIL_H
#define XVI_UTIL_H

#include <time.h>
#include <linux/types.h>

#ifndef likely
#define likely(x)	__builtin_expect(!!(x), 1)
#endif
#ifndef unlikely
#define unlikely(x)	__builtin_expect(!!(x), 0)
#endif

/*
 * CLOCK_MONOTONIC: deadlines and timeouts must not jump with the wall
 * clock.  The vDSO makes this a few tens of nanoseconds, no syscall.
 */
static inline __u64 xvi_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000 + (__u64)ts.tv_nsec / 1000;
}

static inline long long xvi_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

#endif /* XVI_UTIL_H */
