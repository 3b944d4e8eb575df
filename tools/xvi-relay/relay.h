/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * xvi-relay: an impairing L2 forwarder between two interfaces (the middle
 * node M of the three-node lab).  See docs/man/xvi-relay.1 for the SPEC
 * grammar.  Direction "ab" is frames received on the first interface and
 * sent on the second, "ba" the other way.
 */
#ifndef XVI_RELAY_H
#define XVI_RELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum { DIR_AB = 0, DIR_BA = 1, NDIRS = 2 };

/* Probabilities are fractions in [0, 1]; times are nanoseconds. */
struct dir_spec {
	double loss;			/* independent loss */
	bool ge;			/* Gilbert-Elliott on */
	double ge_p;			/* P(good -> bad) per frame */
	double ge_r;			/* P(bad -> good) per frame */
	double ge_h;			/* loss in the bad state */
	double dup;
	double reorder;			/* P(hold a frame back) */
	unsigned int reorder_frames;	/* release after this many later frames */
	uint64_t reorder_ns;		/* ... or after this long */
	double corrupt;
	uint64_t bh_on_ns, bh_off_ns, bh_start_ns; /* blackhole: black, open, offset */
	/* blackhole anchored to the traffic: the clock starts when this many
	 * frames have passed in the direction (0: at the relay's start) */
	uint64_t bh_start_frames;
	uint64_t rate_bps;		/* 0 = unlimited */
	uint64_t rate_bucket_bits;	/* token bucket depth */
	uint64_t delay_ns;
	unsigned int limit;		/* queue limit, frames */
};

struct relay_spec {
	struct dir_spec dir[NDIRS];
	uint64_t seed;
	bool seed_set;
};

#define RELAY_DEFAULT_LIMIT		1000
#define RELAY_DEFAULT_REORDER_FRAMES	3
#define RELAY_DEFAULT_REORDER_NS	(10ULL * 1000 * 1000)	/* a guard: 10 ms */

/* spec.c */
int spec_parse(const char *text, struct relay_spec *spec, char *err, size_t errlen);
void spec_print(FILE *f, const struct relay_spec *spec);

struct counters {
	uint64_t rx_frames, rx_bytes, tx_frames, tx_bytes;
	uint64_t drop_loss;		/* independent random loss */
	uint64_t drop_burst;		/* Gilbert-Elliott bad state */
	uint64_t drop_blackhole;
	uint64_t drop_queue;		/* queue over its limit (rate, delay) */
	uint64_t drop_oversize;		/* truncated or GSO (> buffer, > MTU) */
	uint64_t tx_errors;
	uint64_t duplicated, corrupted, reordered;
	uint64_t csum_filled;		/* CHECKSUM_PARTIAL completed in software */
	uint64_t sock_drops;		/* the kernel dropped before we read (tp_drops) */
};

#define COUNTER_FIELDS(X) X(rx_frames) X(rx_bytes) X(tx_frames) X(tx_bytes) X(drop_loss) \
	X(drop_burst) X(drop_blackhole) X(drop_queue) X(drop_oversize) X(tx_errors) \
	X(duplicated) X(corrupted) X(reordered) X(csum_filled) X(sock_drops)

/* The seeded decision engine of one direction (impair.c). */
struct rng {
	uint64_t s[4];
};

void rng_seed(struct rng *r, uint64_t seed, unsigned int stream);
uint64_t rng_next(struct rng *r);
double rng_unit(struct rng *r);		/* [0, 1) */

enum verdict_drop { KEEP = 0, DROP_LOSS, DROP_BURST };

struct decision {
	enum verdict_drop drop;
	bool dup;
	bool hold;
	bool corrupt;
	uint64_t corrupt_draw;		/* picks the bit to flip */
};

struct engine {
	const struct dir_spec *spec;
	struct rng rng;
	bool ge_bad;
};

void engine_init(struct engine *e, const struct dir_spec *spec, uint64_t seed, unsigned int dir);
/* Every frame draws the same number of values whatever the outcome, so the
 * n-th frame's decision depends on the seed, the direction and n only. */
void engine_decide(struct engine *e, struct decision *d);
/* Flip one bit of the payload area (see flip_region()); returns its offset. */
size_t corrupt_frame(uint8_t *frame, size_t len, uint64_t draw);
/* Complete a CHECKSUM_PARTIAL frame's L4 checksum (virtio_net_hdr values). */
int csum_fill(uint8_t *frame, size_t len, unsigned int start, unsigned int offset);
bool blackhole_at(const struct dir_spec *s, uint64_t since_start_ns);

#endif
