/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Time and CPU accounting for the tools' reports and benchmarks.
 *
 * xt_cpu_now() reads getrusage(RUSAGE_SELF).  With tick-based accounting
 * (no CONFIG_IRQ_TIME_ACCOUNTING) a task's system time includes the softirq
 * work that ran in its context (veth transmit, the peer's XDP, the AF_XDP
 * copy); work done by ksoftirqd is not in it.
 */
#ifndef XVI_TOOLS_CLOCK_H
#define XVI_TOOLS_CLOCK_H

#include <time.h>
#include <linux/types.h>

/* Inline: the benchmarks stamp every message with it. */
static inline __u64 xt_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/* Milliseconds from now until @deadline_ns (rounded up), 0 if past.
 * Inline: a ping-pong client computes its wait for every reply. */
static inline int xt_ms_until(__u64 deadline_ns)
{
	__u64 now = xt_now_ns();

	if (now >= deadline_ns)
		return 0;
	return (int)((deadline_ns - now + 999999ull) / 1000000ull);
}

/* CPU time this process used so far, user and system, in nanoseconds. */
struct xt_cpu {
	__u64 user_ns;
	__u64 sys_ns;
};

void xt_cpu_now(struct xt_cpu *c);
/* @b - @a, field by field (a later sample never goes below an earlier one). */
struct xt_cpu xt_cpu_diff(const struct xt_cpu *a, const struct xt_cpu *b);

/*
 * Busy time of the whole machine so far, all CPUs, in nanoseconds: user,
 * nice, system, irq, softirq and steal from /proc/stat (not namespaced, so
 * both lab nodes' work is in it).  0 if it cannot be read.
 */
__u64 xt_machine_busy_ns(void);

#endif /* XVI_TOOLS_CLOCK_H */
