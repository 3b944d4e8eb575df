// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* xvi-perf: what the options mean together, and the run they choose. */
#include <pthread.h>
#include <sched.h>

#include "perf.h"
#include "print.h"
#include "xvi_wire.h"

#define usage_err(...) opt_error("xvi-perf", __VA_ARGS__)

const char *perf_transport_name(const struct perf_cfg *cfg)
{
	if (cfg->stream)
		return cfg->xt.kernel ? "kernel-tcp" : "xvi-stream";
	if (!cfg->xt.kernel)
		return "xvi";
	return cfg->xt.kernel_single ? "kernel-sendto" : "kernel-mmsg";
}

void perf_thread_cfg(const struct perf_cfg *cfg, __u32 i, struct perf_cfg *out)
{
	*out = *cfg;
	out->thread = i;
	out->xt.queue = cfg->xt.queue + i;
	if (cfg->mode != MODE_SERVER)
		return;
	/* One port, N receivers: the kernel's way and ours, side by side. */
	if (cfg->xt.kernel)
		out->xt.reuseport = true;
	else
		out->xt.ep_flags |= XVI_EP_SPREAD;
}

void perf_pin_cpu(__u32 i)
{
	cpu_set_t allowed, one;
	int cpu, k = 0, want;

	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		return;
	want = (int)(i % (__u32)CPU_COUNT(&allowed));
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &allowed))
			continue;
		if (k++ == want) {
			CPU_ZERO(&one);
			CPU_SET(cpu, &one);
			pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
			return;
		}
	}
}

__u32 perf_run_threads(__u32 n, void *(*fn)(void *), void *args, size_t stride)
{
	pthread_t *tid = calloc(n, sizeof(*tid));
	__u32 i, started = 0;

	if (!tid)
		return 0;
	for (i = 0; i < n; i++, started++) {
		if (pthread_create(&tid[i], NULL, fn, (char *)args + i * stride)) {
			fprintf(stderr, "xvi-perf: cannot start thread %u: stopping the others\n", i);
			xt_stop = 1;
			break;
		}
	}
	for (i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	free(tid);
	return started;
}

struct srv_slot {
	const struct perf_srv_ops *ops;
	void *th;
	__u32 i;
	__u64 start;
	int rc;
};

static void *srv_slot_run(void *arg)
{
	struct srv_slot *sl = arg;

	perf_pin_cpu(sl->i);
	sl->rc = sl->ops->run(sl->th, sl->start);
	return NULL;
}

int perf_server_threads(const struct perf_cfg *cfg, const struct perf_srv_ops *ops,
			size_t stride)
{
	char *th = calloc(cfg->threads, stride);
	__u32 i, n = cfg->threads, opened = 0, started = 0;
	struct srv_slot *sl;
	struct perf_cfg *tc;
	__u64 start;
	int rc = 0;

	sl = calloc(n, sizeof(*sl));
	if (!sl || !th) {
		free(sl);
		free(th);
		return 1;
	}
	for (i = 0; i < n && !rc; i++) {
		sl[i] = (struct srv_slot){ .ops = ops, .th = th + i * stride, .i = i };
		tc = ops->cfg(sl[i].th);
		perf_thread_cfg(cfg, i, tc);
		rc = ops->open(sl[i].th);
		opened += !rc;
	}
	if (!rc) {
		perf_print_listening(cfg, ops->kind, ops->transport(sl[0].th));
		fprintf(stderr, "xvi-perf: %u threads on queues %u..%u\n", n, cfg->xt.queue,
			cfg->xt.queue + n - 1);
		start = xt_now_ns();
		for (i = 0; i < n; i++)
			sl[i].start = start;
		started = perf_run_threads(n, srv_slot_run, sl, sizeof(*sl));
		rc = started < n;
		for (i = 0; i < started; i++) {
			rc |= sl[i].rc;
			if (!cfg->json)
				printf("xvi-perf: thread %u, queue %u:\n", i,
				       ops->cfg(sl[i].th)->xt.queue);
			ops->summary(sl[i].th, (xt_now_ns() - start) / 1e9);
		}
	}
	for (i = 0; i < opened; i++)
		ops->close(sl[i].th);
	free(sl);
	free(th);
	return rc;
}

/* The checks no single option can make; 0 or the usage exit code. */
static int check_args(struct perf_args *a)
{
	struct perf_cfg *cfg = &a->cfg;
	const char *why;

	if (!cfg->xt.iface && !cfg->xt.kernel)
		return usage_err("--iface is required: the interface that runs the xdp-vi datapath "
				 "(xdp-vi attach IFACE), or --kernel for kernel sockets");
	if (cfg->mode != MODE_SERVER && !a->ip)
		return usage_err("-i is required: the server address, e.g. -i 198.18.0.2");
	if (cfg->seconds < 0)		/* no -t */
		cfg->seconds = cfg->mode == MODE_SERVER ? 0 : 1;
	else if (cfg->mode != MODE_SERVER && cfg->seconds <= 0)
		return usage_err("-t must be above 0 for a client");
	if (!cfg->stream && cfg->msg_size > XT_UDP_MAX)
		return usage_err("-m %u: a datagram carries at most %u bytes (larger only with --stream)",
				 cfg->msg_size, XT_UDP_MAX);
	if (cfg->zc && (!cfg->stream || cfg->xt.kernel))
		return usage_err("--zc is the in-place API of xvi streams: use it with --stream, without --kernel");
	if (cfg->stream && cfg->xt.kernel && cfg->xt.kernel_single)
		return usage_err("--kernel=sendto is a datagram API: use --stream --kernel for TCP");
	if (!cfg->threads)
		cfg->threads = 1;
	if (cfg->threads > 1 && cfg->mode == MODE_PING_PONG)
		return usage_err("--threads runs servers and throughput clients: use throughput");
	if (cfg->threads > 1 && !cfg->xt.kernel && cfg->xt.queue + cfg->threads > XVI_SPREAD_MAX_QUEUES)
		return usage_err("--queue %u --threads %u: a spread port covers queues 0..%u",
				 cfg->xt.queue, cfg->threads, XVI_SPREAD_MAX_QUEUES - 1);
	if (!cfg->batch)		/* no --batch */
		cfg->batch = cfg->stream ? 1 : XT_BATCH;
	/* One datagram per system call is what the sendto API is. */
	if (cfg->xt.kernel && cfg->xt.kernel_single)
		cfg->batch = 1;
	if (!a->ip)
		a->ip = "0.0.0.0";
	why = xt_parse_ip(a->ip, a->port, &cfg->addr);
	if (why)
		return usage_err("-i %s: %s", a->ip, why);
	return 0;
}

int perf_run(struct perf_args *a)
{
	const struct perf_cfg *cfg = &a->cfg;
	int err = check_args(a);

	if (err)
		return err;
	print_setup(&(struct print_opts){ .verbosity = &a->verbosity, .debug_from = 1 });
	xt_install_signals();
	if (cfg->stream) {
		if (cfg->mode == MODE_SERVER)
			return perf_stream_server(cfg);
		if (cfg->mode == MODE_PING_PONG)
			return perf_stream_ping_pong(cfg);
		return perf_stream_throughput(cfg);
	}
	switch (cfg->mode) {
	case MODE_SERVER:
		return perf_server(cfg);
	case MODE_PING_PONG:
		return perf_ping_pong(cfg);
	default:
		return perf_throughput(cfg);
	}
}
