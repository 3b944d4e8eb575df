// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The seeded decision engine and the frame surgery (corruption, checksum
 * completion).  No sockets here: `xvi-relay --simulate` runs the same code
 * on synthetic frames, which is how the tests check reproducibility without
 * any network noise.
 */
#include <errno.h>
#include <string.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <netinet/in.h>
#include "relay.h"

/* splitmix64 expands the seed; xoshiro256** draws.  Both are public domain
 * algorithms (Vigna); small, fast and good enough for loss decisions. */
static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void rng_seed(struct rng *r, uint64_t seed, unsigned int stream)
{
	/* One independent stream per direction: the order in which the two
	 * directions' frames interleave never changes either one's draws. */
	uint64_t x = seed ^ (0xa0761d6478bd642fULL * (stream + 1));
	int i;

	for (i = 0; i < 4; i++)
		r->s[i] = splitmix64(&x);
}

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s, res = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return res;
}

double rng_unit(struct rng *r)
{
	return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

void engine_init(struct engine *e, const struct dir_spec *spec, uint64_t seed, unsigned int dir)
{
	e->spec = spec;
	e->ge_bad = false;
	rng_seed(&e->rng, seed, dir);
}

void engine_decide(struct engine *e, struct decision *d)
{
	const struct dir_spec *s = e->spec;
	double u_ge = rng_unit(&e->rng), u_bad = rng_unit(&e->rng), u_loss = rng_unit(&e->rng);
	double u_dup = rng_unit(&e->rng), u_hold = rng_unit(&e->rng);
	double u_corrupt = rng_unit(&e->rng);

	memset(d, 0, sizeof(*d));
	d->corrupt_draw = rng_next(&e->rng);
	if (s->ge) {
		/* Gilbert-Elliott: decide in the current state, then move. */
		if (e->ge_bad && u_bad < s->ge_h)
			d->drop = DROP_BURST;
		e->ge_bad = e->ge_bad ? !(u_ge < s->ge_r) : u_ge < s->ge_p;
	}
	if (!d->drop && u_loss < s->loss)
		d->drop = DROP_LOSS;
	d->dup = u_dup < s->dup;
	d->hold = u_hold < s->reorder;
	d->corrupt = u_corrupt < s->corrupt;
}

bool blackhole_at(const struct dir_spec *s, uint64_t t)
{
	if (!s->bh_on_ns || t < s->bh_start_ns)
		return false;
	return (t - s->bh_start_ns) % (s->bh_on_ns + s->bh_off_ns) < s->bh_on_ns;
}

/*
 * The payload area: the bytes a checksum protects and that do not steer
 * the frame.  After the UDP/TCP header when there is payload (so a flip
 * never changes the ports, which would send the frame to another endpoint,
 * and the L4 checksum always catches a single flipped bit), else the L4
 * header, else everything after the Ethernet header.
 */
static void flip_region(const uint8_t *p, size_t len, size_t *lo)
{
	size_t off = ETH_HLEN, l4 = 0, hl = 0;
	uint16_t proto;
	uint8_t ipproto = 0;

	*lo = len > ETH_HLEN ? ETH_HLEN : 0;
	if (len < ETH_HLEN)
		return;
	proto = (uint16_t)(p[12] << 8 | p[13]);
	while ((proto == ETH_P_8021Q || proto == ETH_P_8021AD) && off + 4 <= len) {
		proto = (uint16_t)(p[off + 2] << 8 | p[off + 3]);
		off += 4;
	}
	if (off >= len)
		return;
	*lo = off;
	if (proto == ETH_P_IP && off + 20 <= len) {
		size_t ihl = (size_t)(p[off] & 0xf) * 4;

		/* A later fragment has no L4 header: its data is payload. */
		if ((p[off + 6] & 0x1f) || p[off + 7]) {
			if (off + ihl < len)
				*lo = off + ihl;
			return;
		}
		ipproto = p[off + 9];
		l4 = off + ihl;
	} else if (proto == ETH_P_IPV6 && off + 40 <= len) {
		ipproto = p[off + 6];
		l4 = off + 40;
	} else {
		return;
	}
	if (ipproto == IPPROTO_UDP && l4 + 8 <= len)
		hl = 8;
	else if (ipproto == IPPROTO_TCP && l4 + 20 <= len)
		hl = (size_t)(p[l4 + 12] >> 4) * 4;
	if (!hl || l4 >= len)
		return;
	*lo = l4 + hl < len ? l4 + hl : l4;
}

size_t corrupt_frame(uint8_t *frame, size_t len, uint64_t draw)
{
	size_t lo, bit;

	if (!len)
		return 0;
	flip_region(frame, len, &lo);
	bit = (size_t)(draw % ((len - lo) * 8));
	frame[lo + bit / 8] ^= (uint8_t)(1u << (bit % 8));
	return lo + bit / 8;
}

int csum_fill(uint8_t *frame, size_t len, unsigned int start, unsigned int offset)
{
	uint32_t sum = 0;
	uint16_t c;
	size_t i;

	if ((size_t)start + offset + 2 > len)
		return -EINVAL;
	/* The field already holds the pseudo-header sum (CHECKSUM_PARTIAL):
	 * summing from `start` to the end and complementing completes it. */
	for (i = start; i + 1 < len; i += 2)
		sum += (uint32_t)(frame[i] << 8 | frame[i + 1]);
	if (i < len)
		sum += (uint32_t)frame[i] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	c = (uint16_t)~sum;
	if (!c)
		c = 0xffff;	/* 0 means "no checksum" in UDP; same value in 1's complement */
	frame[start + offset] = (uint8_t)(c >> 8);
	frame[start + offset + 1] = (uint8_t)c;
	return 0;
}
