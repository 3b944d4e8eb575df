// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>

#include "clock.h"

void xt_cpu_now(struct xt_cpu *c)
{
	struct rusage ru;

	memset(c, 0, sizeof(*c));
	if (getrusage(RUSAGE_SELF, &ru))
		return;
	c->user_ns = (__u64)ru.ru_utime.tv_sec * 1000000000ull +
		     (__u64)ru.ru_utime.tv_usec * 1000ull;
	c->sys_ns = (__u64)ru.ru_stime.tv_sec * 1000000000ull +
		    (__u64)ru.ru_stime.tv_usec * 1000ull;
}

struct xt_cpu xt_cpu_diff(const struct xt_cpu *a, const struct xt_cpu *b)
{
	struct xt_cpu d = {
		.user_ns = b->user_ns > a->user_ns ? b->user_ns - a->user_ns : 0,
		.sys_ns = b->sys_ns > a->sys_ns ? b->sys_ns - a->sys_ns : 0,
	};

	return d;
}

__u64 xt_machine_busy_ns(void)
{
	unsigned long long v[8] = { 0 };
	long hz = sysconf(_SC_CLK_TCK);
	FILE *f = fopen("/proc/stat", "re");
	int n;

	if (!f)
		return 0;
	n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
		   &v[3], &v[4], &v[5], &v[6], &v[7]);
	fclose(f);
	if (n < 8 || hz <= 0)
		return 0;
	return (__u64)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) * 1000000000ull / (__u64)hz;
}
