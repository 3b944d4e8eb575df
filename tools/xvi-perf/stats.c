// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Latency samples and their summary (one way = RTT / 2, as sockperf does). */
#include <math.h>
#include "perf.h"

int lat_add(struct lat_samples *s, __u64 rtt_ns)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 65536;
		__u32 *p;

		if (cap > s->max)
			cap = s->max;
		if (s->n >= cap) {
			s->dropped++;
			return 0;
		}
		p = realloc(s->ns, cap * sizeof(*p));
		if (!p) {
			s->dropped++;
			return -ENOMEM;
		}
		s->ns = p;
		s->cap = cap;
	}
	s->ns[s->n++] = rtt_ns > UINT32_MAX ? UINT32_MAX : (__u32)rtt_ns;
	return 0;
}

void lat_free(struct lat_samples *s)
{
	free(s->ns);
	memset(s, 0, sizeof(*s));
}

static int cmp_u32(const void *a, const void *b)
{
	__u32 x = *(const __u32 *)a, y = *(const __u32 *)b;

	return x < y ? -1 : x > y;
}

/* Nearest rank: the smallest sample with at least p of them at or below it. */
static double pct_us(const __u32 *v, size_t n, double p)
{
	size_t rank = (size_t)ceil(p / 100.0 * (double)n);

	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return v[rank - 1] / 2000.0;
}

void lat_summarize(struct lat_samples *s, struct lat_summary *out)
{
	double sum = 0, sq = 0, avg;
	size_t i;

	memset(out, 0, sizeof(*out));
	out->n = s->n;
	if (!s->n)
		return;
	qsort(s->ns, s->n, sizeof(*s->ns), cmp_u32);
	for (i = 0; i < s->n; i++)
		sum += s->ns[i] / 2000.0;
	avg = sum / (double)s->n;
	for (i = 0; i < s->n; i++) {
		double d = s->ns[i] / 2000.0 - avg;

		sq += d * d;
	}
	out->avg_us = avg;
	out->stddev_us = sqrt(sq / (double)s->n);
	out->min_us = s->ns[0] / 2000.0;
	out->max_us = s->ns[s->n - 1] / 2000.0;
	out->p50_us = pct_us(s->ns, s->n, 50);
	out->p90_us = pct_us(s->ns, s->n, 90);
	out->p99_us = pct_us(s->ns, s->n, 99);
	out->p999_us = pct_us(s->ns, s->n, 99.9);
	out->p9999_us = pct_us(s->ns, s->n, 99.99);
}

void lat_print_json(const struct lat_summary *s)
{
	printf("\"latency_usec\":{\"kind\":\"one-way (rtt/2)\",\"samples\":%zu,"
	       "\"avg\":%.3f,\"stddev\":%.3f,\"min\":%.3f,\"p50\":%.3f,\"p90\":%.3f,"
	       "\"p99\":%.3f,\"p99.9\":%.3f,\"p99.99\":%.3f,\"max\":%.3f}",
	       s->n, s->avg_us, s->stddev_us, s->min_us, s->p50_us, s->p90_us, s->p99_us,
	       s->p999_us, s->p9999_us, s->max_us);
}

void lat_print_text(const struct lat_summary *s)
{
	printf("xvi-perf: one-way latency (RTT/2) usec: avg %.3f std-dev %.3f min %.3f "
	       "p50 %.3f p90 %.3f p99 %.3f p99.9 %.3f p99.99 %.3f max %.3f\n",
	       s->avg_us, s->stddev_us, s->min_us, s->p50_us, s->p90_us, s->p99_us,
	       s->p999_us, s->p9999_us, s->max_us);
}

void cpu_print_json(const struct xt_cpu *cpu, __u64 msgs)
{
	printf("\"cpu\":{\"user_s\":%.4f,\"sys_s\":%.4f,\"ns_per_msg\":%.1f}",
	       cpu->user_ns / 1e9, cpu->sys_ns / 1e9,
	       msgs ? (double)(cpu->user_ns + cpu->sys_ns) / (double)msgs : 0.0);
}

void perf_print_listening(const struct perf_cfg *cfg, const char *kind, const char *transport)
{
	char a[64];

	fprintf(stderr, "xvi-perf: %s listening on %s (%s%s%s, wait %s)%s\n", kind,
		xt_addr_str(&cfg->addr, a, sizeof(a)), transport,
		cfg->xt.iface ? " on " : "", cfg->xt.iface ? cfg->xt.iface : "",
		xt_wait_name(cfg->xt.wait),
		cfg->seconds > 0 ? "" : ": stop with Ctrl-C or SIGTERM");
}
