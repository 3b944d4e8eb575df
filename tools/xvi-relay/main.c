// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xvi-relay: forward every Ethernet frame between two interfaces, impairing
 * it on the way (loss, bursty loss, duplication, reordering, corruption,
 * blackhole windows, delay, a rate limit).  The middle node M of the
 * three-node lab runs it; see docs/man/xvi-relay.1 and docs/LAB.md.
 *
 * Why AF_PACKET and not netem or tc: this kernel has no netem, and AF_XDP
 * TX bypasses qdiscs and tc egress (docs/KERNEL.md, fact 3), so an
 * impairment on the sender could be skipped by the very frames we want to
 * impair.  A forwarder on a node of its own sees everything.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/virtio_net.h>
#include <sys/random.h>
#include <sys/socket.h>
#include "addr.h"
#include "parse.h"
#include "relay.h"

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

#define BATCH		64
#define BUF_SIZE	(9216 + 64)	/* jumbo frame + VLAN tags; larger = oversize */
#define MAX_HELD	64
#define VNET_LEN	sizeof(struct virtio_net_hdr)

struct frame {
	struct frame *next;
	uint64_t ready_ns;		/* not before (delay) */
	uint64_t deadline_ns;		/* held: release at the latest */
	unsigned int countdown;		/* held: release after this many frames */
	uint32_t len;
	uint8_t data[];
};

struct dir {
	const char *name;
	int in_fd, out_fd;
	const struct dir_spec *spec;
	struct engine eng;
	struct counters c;
	struct frame *head, *tail;
	unsigned int queued;
	struct frame *held[MAX_HELD];
	unsigned int nheld;
	double tokens;			/* bits */
	uint64_t tok_ns;
	uint64_t arrived;		/* frames decided so far */
	uint64_t bh_anchor_ns;		/* blackhole clock origin (frame-anchored) */
};

static struct {
	struct relay_spec spec;
	char spec_text[512];
	const char *ifname[NDIRS];
	int fd[NDIRS];
	struct dir dir[NDIRS];
	uint64_t start_ns;
	const char *stats_file;
	double interval;
	uint64_t seq;
	int verbose;
} R;

static volatile sig_atomic_t stop_sig, dump_req;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		dump_req = 1;
	else
		stop_sig = sig;
}

/* ---- counters --------------------------------------------------------- */

static void write_counters(FILE *f, bool running)
{
	int i;

	fprintf(f, "pid %d\nseq %" PRIu64 "\nrunning %d\nseed %" PRIu64 "\n", (int)getpid(),
		R.seq, running, R.spec.seed);
	fprintf(f, "spec %s\n", R.spec_text);
	fprintf(f, "ifaces %s %s\n", R.ifname[0] ? R.ifname[0] : "-",
		R.ifname[1] ? R.ifname[1] : "-");
	fprintf(f, "uptime_ns %" PRIu64 "\n", now_ns() - R.start_ns);
	for (i = 0; i < NDIRS; i++) {
		const struct counters *c = &R.dir[i].c;
#define X(n) fprintf(f, "%s.%s %" PRIu64 "\n", R.dir[i].name, #n, c->n);
		COUNTER_FIELDS(X)
#undef X
	}
}

static void save_stats(bool running)
{
	char tmp[PATH_MAX];
	FILE *f;

	if (!R.stats_file)
		return;
	R.seq++;
	snprintf(tmp, sizeof(tmp), "%s.tmp", R.stats_file);
	f = fopen(tmp, "w");
	if (!f) {
		fprintf(stderr, "xvi-relay: %s: %s\n", tmp, strerror(errno));
		return;
	}
	write_counters(f, running);
	/* rename() makes each version appear whole to readers. */
	if (fclose(f) || rename(tmp, R.stats_file))
		fprintf(stderr, "xvi-relay: %s: %s\n", R.stats_file, strerror(errno));
}

static void poll_sock_drops(void)
{
	struct tpacket_stats st;
	socklen_t len = sizeof(st);
	int i;

	for (i = 0; i < NDIRS; i++) {
		/* Reading resets the kernel's counts: accumulate. */
		if (R.dir[i].in_fd >= 0 &&
		    !getsockopt(R.dir[i].in_fd, SOL_PACKET, PACKET_STATISTICS, &st, &len))
			R.dir[i].c.sock_drops += st.tp_drops;
	}
}

/* ---- the per-direction pipeline ------------------------------------- */

static void send_frame(struct dir *d, struct frame *f)
{
	struct virtio_net_hdr vh = {};	/* complete frame: no csum, no GSO */
	struct iovec iov[2] = {
		{ .iov_base = &vh, .iov_len = VNET_LEN },
		{ .iov_base = f->data, .iov_len = f->len },
	};
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };

	if (d->out_fd < 0 || sendmsg(d->out_fd, &mh, MSG_DONTWAIT) < 0) {
		d->c.tx_errors++;
		if (R.verbose && d->out_fd >= 0)
			fprintf(stderr, "xvi-relay: %s: send %u bytes: %s\n", d->name, f->len,
				strerror(errno));
		return;
	}
	d->c.tx_frames++;
	d->c.tx_bytes += f->len;
}

static void enqueue_one(struct dir *d, struct frame *f, uint64_t now)
{
	if (d->queued >= d->spec->limit) {
		d->c.drop_queue++;
		free(f);
		return;
	}
	f->next = NULL;
	f->ready_ns = now + d->spec->delay_ns;
	if (d->tail)
		d->tail->next = f;
	else
		d->head = f;
	d->tail = f;
	d->queued++;
}

static void release_held(struct dir *d, unsigned int i, uint64_t now)
{
	struct frame *f = d->held[i];

	d->held[i] = d->held[--d->nheld];
	enqueue_one(d, f, now);
}

/* A frame goes out: count it against every held frame's "N later frames". */
static void enqueue(struct dir *d, struct frame *f, uint64_t now)
{
	unsigned int i;

	enqueue_one(d, f, now);
	for (i = 0; i < d->nheld;) {
		struct frame *h = d->held[i];

		if (h->countdown && !--h->countdown)
			release_held(d, i, now);	/* moves the last one to i */
		else
			i++;
	}
}

static struct frame *frame_new(const uint8_t *data, uint32_t len)
{
	struct frame *f = malloc(sizeof(*f) + len);

	if (f) {
		memset(f, 0, sizeof(*f));
		f->len = len;
		memcpy(f->data, data, len);
	}
	return f;
}

/*
 * Is the blackhole open at @now?  Its clock runs from the relay's start, or,
 * for a window anchored to the traffic (@Nf), from the arrival of frame
 * N+1: the first N frames always pass.
 */
static bool in_blackhole(struct dir *d, uint64_t now)
{
	const struct dir_spec *s = d->spec;

	if (!s->bh_start_frames)
		return blackhole_at(s, now - R.start_ns);
	if (++d->arrived <= s->bh_start_frames)
		return false;
	if (!d->bh_anchor_ns)
		d->bh_anchor_ns = now;
	return blackhole_at(s, now - d->bh_anchor_ns);
}

/* Decide the fate of one received frame; `now` = arrival time. */
static void arrive(struct dir *d, const uint8_t *data, uint32_t len, uint64_t now)
{
	struct decision dec;
	struct frame *f, *copy = NULL;

	engine_decide(&d->eng, &dec);
	if (in_blackhole(d, now)) {
		d->c.drop_blackhole++;
		return;
	}
	if (dec.drop == DROP_BURST) {
		d->c.drop_burst++;
		return;
	}
	if (dec.drop == DROP_LOSS) {
		d->c.drop_loss++;
		return;
	}
	f = frame_new(data, len);
	if (!f) {
		d->c.drop_queue++;
		return;
	}
	if (dec.corrupt) {
		corrupt_frame(f->data, f->len, dec.corrupt_draw);
		d->c.corrupted++;
	}
	if (dec.dup) {
		copy = frame_new(f->data, f->len);
		if (copy)
			d->c.duplicated++;
	}
	if (dec.hold && d->nheld < MAX_HELD) {
		f->countdown = d->spec->reorder_frames;
		f->deadline_ns = now + d->spec->reorder_ns;
		d->held[d->nheld++] = f;
		d->c.reordered++;
	} else {
		enqueue(d, f, now);
	}
	if (copy)
		enqueue(d, copy, now);
}

/* Send what may go; return the time of the next thing to do (or UINT64_MAX). */
static uint64_t drain(struct dir *d, uint64_t now)
{
	const struct dir_spec *s = d->spec;
	uint64_t next = UINT64_MAX;
	unsigned int i;

	for (i = 0; i < d->nheld;) {
		if (d->held[i]->deadline_ns <= now) {
			release_held(d, i, now);
		} else {
			if (d->held[i]->deadline_ns < next)
				next = d->held[i]->deadline_ns;
			i++;
		}
	}
	while (d->head) {
		struct frame *f = d->head;

		if (f->ready_ns > now) {
			if (f->ready_ns < next)
				next = f->ready_ns;
			break;
		}
		if (s->rate_bps) {
			double bits = (double)f->len * 8;

			d->tokens += (double)(now - d->tok_ns) * (double)s->rate_bps / 1e9;
			if (d->tokens > (double)s->rate_bucket_bits)
				d->tokens = (double)s->rate_bucket_bits;
			d->tok_ns = now;
			if (d->tokens < bits) {
				uint64_t wait = (uint64_t)((bits - d->tokens) * 1e9 /
							   (double)s->rate_bps) + 1;

				if (now + wait < next)
					next = now + wait;
				break;
			}
			d->tokens -= bits;
		}
		d->head = f->next;
		if (!d->head)
			d->tail = NULL;
		d->queued--;
		send_frame(d, f);
		free(f);
	}
	return next;
}

/* ---- sockets --------------------------------------------------------- */

static int open_iface(const char *ifname)
{
	struct packet_mreq mr = {};
	struct sockaddr_ll sll = {};
	int one = 1, buf = 8 << 20, fd, idx;
	const char *why = xt_parse_ifname(ifname, &idx);

	if (why) {
		fprintf(stderr, "xvi-relay: %s: %s; the relay runs in the lab's middle node: "
			"netns-lab/lab exec m -- xvi-relay xva xvb\n", ifname, why);
		return -ENODEV;
	}
	/* Protocol 0: receive nothing until bound to the one interface. */
	fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		fprintf(stderr, "xvi-relay: AF_PACKET socket: %s (needs CAP_NET_RAW)\n",
			strerror(errno));
		return -errno;
	}
	/* The virtio-net header tells us about CHECKSUM_PARTIAL (csum_start,
	 * csum_offset) and GSO skbs, which the frame bytes alone do not. */
	if (setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) ||
	    setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one))) {
		fprintf(stderr, "xvi-relay: %s: PACKET_VNET_HDR/QDISC_BYPASS: %s\n", ifname,
			strerror(errno));
		goto err;
	}
	/* Not strictly needed with QDISC_BYPASS (direct xmit skips the taps),
	 * but M's own stack must not feed its frames back into the relay. */
	if (setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one)))
		fprintf(stderr, "xvi-relay: %s: PACKET_IGNORE_OUTGOING: %s (continuing)\n",
			ifname, strerror(errno));
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	sll.sll_family = AF_PACKET;
	sll.sll_protocol = htons(ETH_P_ALL);
	sll.sll_ifindex = idx;
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll))) {
		fprintf(stderr, "xvi-relay: bind to %s: %s\n", ifname, strerror(errno));
		goto err;
	}
	mr.mr_ifindex = idx;
	mr.mr_type = PACKET_MR_PROMISC;
	if (setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof(mr)))
		fprintf(stderr, "xvi-relay: %s: promiscuous mode: %s (continuing)\n", ifname,
			strerror(errno));
	return fd;
err:
	idx = -errno;
	close(fd);
	return idx;
}

static uint8_t *rxbuf[BATCH];

static void receive(struct dir *d, uint64_t now)
{
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	int n, i, rounds;

	/* Bounded: a flood on one side must not starve the other side. */
	for (rounds = 0; rounds < 4; rounds++) {
		memset(msgs, 0, sizeof(msgs));
		for (i = 0; i < BATCH; i++) {
			iov[i].iov_base = rxbuf[i];
			iov[i].iov_len = BUF_SIZE + VNET_LEN;
			msgs[i].msg_hdr.msg_iov = &iov[i];
			msgs[i].msg_hdr.msg_iovlen = 1;
		}
		n = recvmmsg(d->in_fd, msgs, BATCH, MSG_DONTWAIT | MSG_TRUNC, NULL);
		if (n <= 0)
			return;
		for (i = 0; i < n; i++) {
			struct virtio_net_hdr *vh = (struct virtio_net_hdr *)rxbuf[i];
			uint8_t *frame = rxbuf[i] + VNET_LEN;
			size_t len = msgs[i].msg_len;

			if (len < VNET_LEN)
				continue;
			len -= VNET_LEN;
			d->c.rx_frames++;
			d->c.rx_bytes += len;
			/* A GSO skb (GRO on M's interface) is larger than the
			 * MTU and cannot go out as one frame: never forward it. */
			if ((msgs[i].msg_hdr.msg_flags & MSG_TRUNC) || len > BUF_SIZE ||
			    vh->gso_type != VIRTIO_NET_HDR_GSO_NONE) {
				d->c.drop_oversize++;
				continue;
			}
			if (vh->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) {
				/* CHECKSUM_PARTIAL: the bytes hold only the
				 * pseudo-header sum; an XDP receiver would see a
				 * bad checksum.  A NIC would finish it: so do we. */
				if (!csum_fill(frame, len, vh->csum_start, vh->csum_offset))
					d->c.csum_filled++;
			}
			arrive(d, frame, (uint32_t)len, now);
		}
		if (n < BATCH)
			return;
	}
}

/* ---- modes -------------------------------------------------------------- */

static int run_relay(void)
{
	uint64_t next_stats, next_print, stats_every = 1000000000ULL, print_every = 0;
	struct sigaction sa = {};
	sigset_t block, empty;
	int i, ret = 0;

	for (i = 0; i < BATCH; i++) {
		rxbuf[i] = malloc(BUF_SIZE + VNET_LEN);
		if (!rxbuf[i])
			return -ENOMEM;
	}
	for (i = 0; i < NDIRS; i++) {
		R.fd[i] = open_iface(R.ifname[i]);
		if (R.fd[i] < 0)
			return R.fd[i];
	}
	R.dir[DIR_AB].in_fd = R.fd[0];
	R.dir[DIR_AB].out_fd = R.fd[1];
	R.dir[DIR_BA].in_fd = R.fd[1];
	R.dir[DIR_BA].out_fd = R.fd[0];

	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	/* Signals are only taken inside ppoll: no EINTR anywhere else. */
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, NULL);
	sigemptyset(&empty);

	printf("xvi-relay: %s <-> %s, seed %" PRIu64 ", spec %s\n", R.ifname[0], R.ifname[1],
	       R.spec.seed, R.spec_text);
	fflush(stdout);
	if (R.interval > 0)
		print_every = (uint64_t)(R.interval * 1e9);
	next_stats = now_ns() + stats_every;
	next_print = print_every ? now_ns() + print_every : UINT64_MAX;
	save_stats(true);

	while (!stop_sig) {
		struct pollfd pfd[NDIRS] = {
			{ .fd = R.fd[0], .events = POLLIN }, { .fd = R.fd[1], .events = POLLIN },
		};
		uint64_t now = now_ns(), next = next_stats < next_print ? next_stats : next_print;
		struct timespec ts;
		int n;

		for (i = 0; i < NDIRS; i++) {
			uint64_t t = drain(&R.dir[i], now);

			if (t < next)
				next = t;
		}
		next = next > now ? next - now : 0;
		ts.tv_sec = (time_t)(next / 1000000000ULL);
		ts.tv_nsec = (long)(next % 1000000000ULL);
		n = ppoll(pfd, NDIRS, &ts, &empty);
		if (n < 0 && errno != EINTR) {
			ret = -errno;
			fprintf(stderr, "xvi-relay: poll: %s\n", strerror(errno));
			break;
		}
		now = now_ns();
		for (i = 0; i < NDIRS && n > 0; i++) {
			if (pfd[i].revents & (POLLERR | POLLNVAL)) {
				fprintf(stderr, "xvi-relay: %s: socket error (interface gone?)\n",
					R.ifname[i]);
				ret = -ENODEV;
				stop_sig = SIGTERM;
			}
			if (pfd[i].revents & POLLIN)
				receive(&R.dir[i], now);
		}
		if (dump_req || now >= next_stats) {
			poll_sock_drops();
			save_stats(true);
			next_stats = now + stats_every;
		}
		if (dump_req || now >= next_print) {
			write_counters(stdout, true);
			fflush(stdout);
			if (now >= next_print)
				next_print = now + print_every;
		}
		dump_req = 0;
	}
	/* Frames still waiting (delay, rate, held) are dropped, and counted. */
	for (i = 0; i < NDIRS; i++) {
		struct dir *d = &R.dir[i];

		while (d->nheld)
			release_held(d, 0, 0);
		while (d->head) {
			struct frame *f = d->head;

			d->head = f->next;
			d->c.drop_queue++;
			free(f);
		}
		close(R.fd[i]);
	}
	poll_sock_drops();
	printf("xvi-relay: stopped by signal %d; final counters:\n", (int)stop_sig);
	write_counters(stdout, false);
	fflush(stdout);
	save_stats(false);
	for (i = 0; i < BATCH; i++)
		free(rxbuf[i]);
	return ret;
}

/* Synthetic traffic through the decision engine: reproducibility without a
 * network.  Prints the counters and an FNV-1a digest of every decision. */
static int run_simulate(unsigned long long n, unsigned int len)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	unsigned long long k;
	uint8_t *buf = calloc(1, len);
	int i;

	if (!buf)
		return -ENOMEM;
	R.ifname[0] = R.ifname[1] = NULL;
	for (i = 0; i < NDIRS; i++) {
		struct dir *d = &R.dir[i];

		d->in_fd = d->out_fd = -1;
		for (k = 0; k < n; k++) {
			struct decision dec;
			uint64_t v;

			engine_decide(&d->eng, &dec);
			v = (uint64_t)dec.drop | (uint64_t)dec.dup << 2 | (uint64_t)dec.hold << 3 |
			    (uint64_t)dec.corrupt << 4 |
			    (dec.corrupt ? (dec.corrupt_draw % (len * 8ULL)) << 5 : 0);
			h = (h ^ v) * 0x100000001b3ULL;
			d->c.rx_frames++;
			d->c.rx_bytes += len;
			if (dec.drop == DROP_BURST) {
				d->c.drop_burst++;
				continue;
			}
			if (dec.drop == DROP_LOSS) {
				d->c.drop_loss++;
				continue;
			}
			d->c.corrupted += dec.corrupt;
			d->c.duplicated += dec.dup;
			d->c.reordered += dec.hold;
			d->c.tx_frames += 1 + dec.dup;
			d->c.tx_bytes += (1 + dec.dup) * (uint64_t)len;
		}
	}
	write_counters(stdout, false);
	printf("decisions_fnv1a %016" PRIx64 "\n", h);
	free(buf);
	return 0;
}

/* --stats FILE: ask a running relay for fresh counters, then print them. */
static int show_stats(const char *path, bool json)
{
	char line[1024], key[128], val[896];
	long pid = 0, running = 0;
	unsigned long long seq0 = 0, seq;
	FILE *f;
	int tries;
	const char *sep = "";

	f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "xvi-relay: %s: %s (is a relay running with --stats-file %s?)\n",
			path, strerror(errno), path);
		return -ENOENT;
	}
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "pid %ld", &pid) == 1 || sscanf(line, "running %ld", &running) == 1)
			continue;
		sscanf(line, "seq %llu", &seq0);
	}
	fclose(f);
	if (running && pid > 0 && !kill((pid_t)pid, SIGUSR1)) {
		/* Bounded wait (1 s) for the relay to write a newer version. */
		for (tries = 0; tries < 100; tries++) {
			seq = seq0;
			f = fopen(path, "r");
			while (f && fgets(line, sizeof(line), f))
				sscanf(line, "seq %llu", &seq);
			if (f)
				fclose(f);
			if (seq != seq0)
				break;
			usleep(10000);
		}
	}
	f = fopen(path, "r");
	if (!f)
		return -errno;
	if (json)
		fputs("{", stdout);
	while (fgets(line, sizeof(line), f)) {
		char *p;

		line[strcspn(line, "\n")] = '\0';
		if (!json) {
			puts(line);
			continue;
		}
		if (sscanf(line, "%127s %895[^\n]", key, val) < 1)
			continue;
		if (sscanf(line, "%*s %895[^\n]", val) < 1)
			val[0] = '\0';
		for (p = val; *p && (*p == '-' || (*p >= '0' && *p <= '9')); p++)
			;
		if (*val && !*p && strcmp(key, "ifaces"))
			printf("%s\"%s\":%s", sep, key, val);
		else
			printf("%s\"%s\":\"%s\"", sep, key, val);	/* no quotes in values */
		sep = ",";
	}
	if (json)
		puts("}");
	fclose(f);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
"Usage: xvi-relay [OPTIONS] IF_A IF_B      forward and impair between two interfaces\n"
"       xvi-relay --stats FILE [--json]    counters of a running (or stopped) relay\n"
"       xvi-relay --check -s SPEC          parse SPEC, print it in canonical form\n"
"       xvi-relay --simulate N -s SPEC     decisions on N synthetic frames per direction\n"
"\n"
"  -s, --spec SPEC     impairments, e.g. loss=5%%,reorder=1%%,dup=0.5%%,corrupt=0.1%%,seed=42\n"
"                      (see xvi-relay(1); 'none' or empty = plain forwarding)\n"
"      --stats-file F  write counters to F every second, on SIGUSR1 and at exit\n"
"      --interval SEC  also print counters to stdout every SEC seconds\n"
"      --len BYTES     frame length for --simulate (default 100)\n"
"      --json          --stats output as one JSON object\n"
"  -v, --verbose       report send errors\n"
"  -h, --help          this help\n"
"\n"
"Direction ab = frames received on IF_A and sent on IF_B; ba = the reverse.\n"
"SIGTERM/SIGINT stop the relay and print the final counters; SIGUSR1 prints them now.\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "spec", required_argument, NULL, 's' },
		{ "stats-file", required_argument, NULL, 'f' },
		{ "stats", required_argument, NULL, 'S' },
		{ "interval", required_argument, NULL, 'i' },
		{ "simulate", required_argument, NULL, 'n' },
		{ "len", required_argument, NULL, 'L' },
		{ "check", no_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *spec = NULL, *stats = NULL;
	unsigned long simulate = 0, len = 100;
	bool check = false, json = false;
	char err[256] = "";
	FILE *mf;
	int o, i, ret;

	while ((o = getopt_long(argc, argv, "s:vh", opts, NULL)) != -1) {
		switch (o) {
		case 's': spec = optarg; break;
		case 'f': R.stats_file = optarg; break;
		case 'S': stats = optarg; break;
		case 'i':
			if (xt_parse_seconds(optarg, 86400 * 365, &R.interval) ||
			    !(R.interval > 0)) {
				fprintf(stderr, "xvi-relay: --interval %s: give seconds > 0\n",
					optarg);
				return 2;
			}
			break;
		case 'n':
			if (xt_parse_ulong(optarg, 1, 100000000, &simulate)) {
				fprintf(stderr, "xvi-relay: --simulate %s: give 1..1e8 frames\n",
					optarg);
				return 2;
			}
			break;
		case 'L':
			if (xt_parse_ulong(optarg, 1, 65535, &len)) {
				fprintf(stderr, "xvi-relay: --len %s: give 1..65535 bytes\n", optarg);
				return 2;
			}
			break;
		case 'c': check = true; break;
		case 'j': json = true; break;
		case 'v': R.verbose++; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (stats)
		return show_stats(stats, json) ? 1 : 0;

	ret = spec_parse(spec, &R.spec, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "xvi-relay: bad spec: %s\n", ret == -ENOMEM ? strerror(ENOMEM) : err);
		return 2;
	}
	if (!R.spec.seed_set) {
		/* Random, but printed: any run can be replayed with seed=N. */
		if (getrandom(&R.spec.seed, sizeof(R.spec.seed), 0) != sizeof(R.spec.seed))
			R.spec.seed = now_ns() ^ (uint64_t)getpid();
	}
	for (i = 0; i < NDIRS; i++) {
		struct dir_spec *s = &R.spec.dir[i];

		/* Default bucket: 1 ms of traffic, at least three full frames. */
		if (s->rate_bps && !s->rate_bucket_bits) {
			s->rate_bucket_bits = s->rate_bps / 1000;
			if (s->rate_bucket_bits < 3 * 1514 * 8)
				s->rate_bucket_bits = 3 * 1514 * 8;
		}
		R.dir[i].name = i == DIR_AB ? "ab" : "ba";
		R.dir[i].spec = s;
		R.dir[i].tokens = (double)s->rate_bucket_bits;
		R.dir[i].in_fd = R.dir[i].out_fd = -1;
		engine_init(&R.dir[i].eng, s, R.spec.seed, (unsigned int)i);
	}
	mf = fmemopen(R.spec_text, sizeof(R.spec_text) - 1, "w");
	if (mf) {
		spec_print(mf, &R.spec);
		fclose(mf);
	}
	R.start_ns = now_ns();
	if (check) {
		puts(R.spec_text);
		return 0;
	}
	if (simulate)
		return run_simulate(simulate, (unsigned int)len) ? 1 : 0;
	if (argc - optind != 2) {
		fprintf(stderr, "xvi-relay: give two interfaces, e.g. xvi-relay -s loss=5%% xva xvb"
			" (see --help)\n");
		return 2;
	}
	R.ifname[0] = argv[optind];
	R.ifname[1] = argv[optind + 1];
	if (!strcmp(R.ifname[0], R.ifname[1])) {
		fprintf(stderr, "xvi-relay: %s twice: give two different interfaces\n",
			R.ifname[0]);
		return 2;
	}
	return run_relay() ? 1 : 0;
}
