// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xdp-vi trace IFACE: the extension events of IFACE's datapath, live from
 * its ring buffer (xvi_trace), while the datapath's XVI_CFG_TRACE bit is
 * set; optionally the frames into a pcap file with a side file of their
 * events, and a timeline of the events per handler into an SVG file
 * (docs/EXTENSIONS.md, "Tracing").
 *
 * Debian 12's libpcap (1.10) writes only the classic pcap format
 * (pcap_dump_open); it reads pcapng but has no writer for it.  A pcap
 * record has no room for an event, so its events go into FILE.events, one
 * line per record, in the same order.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "cmd.h"
#include "ctl/ctl.h"
#include "handlers.h"
#include "pcapw.h"
#include "plot.h"

struct trace {
	struct xvi_ctl *ctl;
	const struct xvi_cfg *cfg;
	char ep[XVI_MAX_ENDPOINTS][64];	/* slot -> endpoint, "" unknown */
	__s64 mono_to_real;		/* CLOCK_REALTIME - CLOCK_MONOTONIC, ns */
	__u64 first_ns;			/* the first event's start */
	unsigned long long n;		/* events taken */
	bool done;			/* --count reached */
	struct pcapw *pcap;
	FILE *side;			/* FILE.events */
	struct plot_event *ev;		/* for --plot */
	size_t nev, cap;
	bool plot_full;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = 1;
}

static __u64 clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* The endpoints by slot, as now (a slot's name is taken when first seen). */
static void load_endpoints(struct trace *t)
{
	__u32 slot = XVI_CTL_SLOT_START;
	struct xvi_slot_owner o;

	while (xvi_ctl__next_owner(t->ctl, &slot, &o) == 1)
		if (slot < XVI_MAX_ENDPOINTS && !t->ep[slot][0])
			xvi_tag__format(&o.tag, t->ep[slot], sizeof(t->ep[slot]));
}

static const char *endpoint_of(struct trace *t, __u32 slot)
{
	if (slot >= XVI_MAX_ENDPOINTS)
		return "?";
	if (!t->ep[slot][0])
		load_endpoints(t);
	if (!t->ep[slot][0])
		snprintf(t->ep[slot], sizeof(t->ep[slot]), "slot %u", slot);
	return t->ep[slot];
}

static const char *action_name(__u8 a)
{
	return a < XVI_EXT_ACT_NR ? xvi_action_names[a] : "?";
}

/* "HH:MM:SS.nnnnnnnnn" of a CLOCK_MONOTONIC time, in local time. */
static void fmt_time(const struct trace *t, __u64 mono_ns, char *buf, size_t len)
{
	__u64 real = mono_ns + t->mono_to_real;
	time_t sec = real / 1000000000ULL;
	struct tm tm;

	localtime_r(&sec, &tm);
	snprintf(buf, len, "%02d:%02d:%02d.%09llu", tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (unsigned long long)(real % 1000000000ULL));
}

static void keep_for_plot(struct trace *t, const struct xvi_trace_event *e)
{
	struct plot_event *p;

	if (t->nev == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 4096;

		if (cap > PLOT_MAX_EVENTS || !(p = realloc(t->ev, cap * sizeof(*p)))) {
			t->plot_full = true;
			return;
		}
		t->ev = p;
		t->cap = cap;
	}
	p = &t->ev[t->nev++];
	p->start_ns = e->start_ns - t->first_ns;
	p->end_ns = e->end_ns - t->first_ns;
	p->slot = e->slot;
	p->handler = e->handler;
	p->action = e->action;
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct trace *t = ctx;
	const struct xvi_trace_event *e = data;
	const char *ep;
	char ts[32];

	if (t->done || size < sizeof(*e))
		return 0;
	if (!t->n)
		t->first_ns = e->start_ns;
	t->n++;
	ep = endpoint_of(t, e->slot);
	fmt_time(t, e->end_ns, ts, sizeof(ts));
	printf("%s  %-28s handler %-2u %-7s len %-5u %6llu ns  cpu %u\n", ts, ep, e->handler,
	       action_name(e->action), e->len,
	       (unsigned long long)(e->end_ns - e->start_ns), e->cpu);
	if (t->pcap) {
		pcapw_write(t->pcap, e->end_ns + t->mono_to_real, e->data,
			    e->cap_len < XVI_TRACE_SNAP ? e->cap_len : XVI_TRACE_SNAP, e->len);
		fprintf(t->side, "%llu\t%s\t%u\t%s\t%u\t%s\t%u\t%llu\t%u\n", t->n, ts, e->slot,
			ep, e->handler, action_name(e->action), e->len,
			(unsigned long long)(e->end_ns - e->start_ns), e->cpu);
	}
	if (t->cfg->plot)
		keep_for_plot(t, e);
	if (t->cfg->count && t->n >= t->cfg->count)
		t->done = true;
	return 0;
}

static int open_pcap(struct trace *t, const char *file)
{
	char side[4096];

	if (snprintf(side, sizeof(side), "%s.events", file) >= (int)sizeof(side)) {
		fprintf(stderr, "xdp-vi trace: --pcap %s: name too long\n", file);
		return -ENAMETOOLONG;
	}
	t->pcap = pcapw_open(file, XVI_TRACE_SNAP);
	if (!t->pcap)
		return -EIO;
	t->side = fopen(side, "w");
	if (!t->side) {
		fprintf(stderr, "xdp-vi trace: --pcap: cannot write the events file %s: %s\n",
			side, strerror(errno));
		return -errno;
	}
	fprintf(t->side, "# xdp-vi trace: one line per record of %s, in order\n"
		"# record\ttime\tslot\tendpoint\thandler\taction\tlen\tns\tcpu\n", file);
	return 0;
}

static int close_pcap(struct trace *t)
{
	int err = 0;

	err = pcapw_close(t->pcap);
	if (t->side && fclose(t->side))
		err = -errno;
	if (err)
		fprintf(stderr, "xdp-vi trace: writing %s failed\n", t->cfg->pcap);
	return err;
}

/* A trace that never started leaves no files. */
static void remove_pcap(const char *file)
{
	char side[4096];

	unlink(file);
	if (snprintf(side, sizeof(side), "%s.events", file) < (int)sizeof(side))
		unlink(side);
}

/* Until ^C, --count events or --duration seconds, whichever comes first. */
static void run(struct trace *t, struct ring_buffer *rb)
{
	__u64 end = t->cfg->duration > 0 ?
		    clock_ns(CLOCK_MONOTONIC) + (__u64)(t->cfg->duration * 1e9) : 0;
	int err;

	while (!stop && !t->done) {
		int ms = 200;

		if (end) {
			__u64 now = clock_ns(CLOCK_MONOTONIC);

			if (now >= end)
				break;
			if ((end - now) / 1000000 < (__u64)ms)
				ms = (end - now) / 1000000 + 1;
		}
		err = ring_buffer__poll(rb, ms);
		if (err < 0 && err != -EINTR) {
			fprintf(stderr, "xdp-vi trace: reading the ring buffer: %s\n",
				strerror(-err));
			break;
		}
		fflush(stdout);
	}
}

int cmd_trace(const struct xvi_cfg *cfg)
{
	struct xvi_ctl_opts opts = { .sz = sizeof(opts), .bpffs = cfg->bpffs };
	struct xvi_global_counters g0 = {}, g1 = {};
	struct sigaction sa = { .sa_handler = on_signal };
	struct ring_buffer *rb = NULL;
	bool started = false;
	struct trace *t;
	int err = 0, ret = 1;

	t = calloc(1, sizeof(*t));
	if (!t) {
		fprintf(stderr, "xdp-vi: out of memory\n");
		return 1;
	}
	t->cfg = cfg;
	t->ctl = xvi_ctl__open(cfg->ifname, &opts);
	if (!t->ctl)
		goto out;
	load_endpoints(t);
	if (cfg->pcap && open_pcap(t, cfg->pcap))
		goto out;
	rb = ring_buffer__new(xvi_ctl__trace_fd(t->ctl), on_event, t, NULL);
	if (!rb) {
		fprintf(stderr, "xdp-vi trace: %s: cannot map the trace ring buffer: %s\n",
			cfg->ifname, strerror(errno));
		goto out;
	}
	/* What a trace that died left behind (--force) is not this trace's. */
	t->done = true;
	ring_buffer__consume(rb);
	t->done = false;
	if (xvi_ctl__trace_set(t->ctl, true, cfg->force))
		goto out;
	started = true;
	/* From here on tracing is on: leave only through turning it off. */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	t->mono_to_real = clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC);
	xvi_ctl__global_counters(t->ctl, &g0);
	fprintf(stderr, "xdp-vi trace: tracing %s (^C to stop)\n", cfg->ifname);
	run(t, rb);
	if (xvi_ctl__trace_set(t->ctl, false, false))
		err = -EIO;
	/* Events already in the ring buffer are this trace's: take them. */
	ring_buffer__consume(rb);
	xvi_ctl__global_counters(t->ctl, &g1);
	fprintf(stderr, "xdp-vi trace: %llu events, %llu lost (ring buffer full)\n", t->n,
		(unsigned long long)(g1.trace_lost - g0.trace_lost));
	ret = err ? 1 : 0;
out:
	ring_buffer__free(rb);
	if (cfg->pcap && close_pcap(t))
		ret = 1;
	if (cfg->pcap && !started)
		remove_pcap(cfg->pcap);
	if (cfg->plot && t->ctl && !ret) {
		if (t->plot_full)
			fprintf(stderr, "xdp-vi trace: --plot: the first %zu events only\n",
				t->nev);
		if (plot_svg(cfg->plot, t->ev, t->nev, t->ep))
			ret = 1;
	}
	free(t->ev);
	xvi_ctl__close(t->ctl);
	free(t);
	return ret;
}
