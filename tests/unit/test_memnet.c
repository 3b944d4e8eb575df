// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * MemNet (include/xvi_memnet.h) over the simulated link of stream_sim.h:
 * registered regions, asynchronous send and receive jobs under loss,
 * direct placement into posted buffers, completion order, the rules about
 * buffers in flight (checked with XVI_DEBUG=1) and failure paths.
 */
#include "stream_sim.h"
#include "xvi_memnet.h"

#define REGION	(1u << 20)

static __u8 pat(__u64 i)
{
	return (__u8)((i * 2654435761u) >> 11);
}

struct mn_fixture {
	struct sim s;
	struct xvi_stream *l, *c, *v;
	__u8 *tx, *rx;
	int mt, mr;		/* handles: sender's region, receiver's region */
};

static void mn_setup(struct mn_fixture *f, __u64 seed)
{
	sim_init(&f->s, seed, NULL);
	f->l = listener(&f->s, 4, 4);
	f->c = pair(&f->s, f->l, &f->v);
	f->tx = malloc(REGION);
	f->rx = calloc(1, REGION);
	cr_assert(f->tx && f->rx);
	for (__u32 i = 0; i < REGION; i++)
		f->tx[i] = pat(i);
	f->mt = xvi_stream_ctx__register_mem(f->s.n[0].ctx, f->tx, REGION);
	f->mr = xvi_stream_ctx__register_mem(f->s.n[1].ctx, f->rx, REGION);
	cr_assert_geq(f->mt, 0);
	cr_assert_geq(f->mr, 0);
}

static void mn_teardown(struct mn_fixture *f)
{
	sim_fini(&f->s);
	free(f->tx);
	free(f->rx);
}

/* Step the simulation until @j completes (or virtual @us pass); result. */
static ssize_t finish(struct mn_fixture *f, struct xvi_memnet_job *j, __u64 us)
{
	ssize_t r = -1;

	cr_assert(j, "no job: %s", strerror(errno));
	cr_assert(RUN_UNTIL(&f->s, us, xvi_memnet_job__done(j, &r) == 1),
		  "job still pending after %llu virtual us", (unsigned long long)us);
	return r;
}

Test(memnet, async_jobs_byte_exact_under_loss_in_order)
{
	struct mn_fixture f;
	struct xvi_memnet_job *sj[8], *rj[8];
	struct xvi_stream_info info = { .sz = sizeof(info) };
	const size_t chunk = REGION / 8;
	ssize_t r;

	mn_setup(&f, 61);
	f.s.loss = 30;
	f.s.reorder = 20;
	f.s.dup = 10;
	/* receives first: every in-order byte can go straight into them */
	for (int i = 0; i < 8; i++) {
		rj[i] = xvi_stream__async_recv(f.v, f.mr, i * chunk, chunk);
		cr_assert(rj[i], "async_recv %d: %s", i, strerror(errno));
	}
	for (int i = 0; i < 8; i++) {
		sj[i] = xvi_stream__async_send(f.c, f.mt, i * chunk, chunk);
		cr_assert(sj[i], "async_send %d: %s", i, strerror(errno));
	}
	cr_expect_eq(xvi_memnet_job__wait(sj[7], 0), -ETIMEDOUT, "done before anything moved");
	/* a simulated link has nothing to block on */
	cr_expect_eq(xvi_memnet_job__wait(sj[7], 100), -EOPNOTSUPP);
	for (int i = 0; i < 8; i++) {
		r = finish(&f, rj[i], 30000000);
		cr_assert_eq(r, (ssize_t)chunk, "recv job %d: %zd", i, r);
		/* jobs fill in posting order: chunk i holds stream bytes of chunk i */
		cr_assert_eq(memcmp(f.rx + i * chunk, f.tx + i * chunk, chunk), 0,
			     "recv job %d holds other bytes", i);
	}
	for (int i = 0; i < 8; i++) {
		r = finish(&f, sj[i], 30000000);
		cr_assert_eq(r, (ssize_t)chunk, "send job %d: %zd", i, r);
	}
	cr_assert_eq(memcmp(f.tx, f.rx, REGION), 0, "received bytes differ");
	xvi_stream__info(f.v, &info);
	cr_log_info("memnet: %u bytes, %llu placed directly, %llu retrans", REGION,
		    (unsigned long long)info.bytes_direct,
		    (unsigned long long)f.c->stats.segs_retrans);
	cr_expect_gt(f.c->stats.segs_retrans, 0u, "the link lost nothing: test broken");
	/* most bytes skip the receive ring; reordering sends some through it */
	cr_expect_gt(info.bytes_direct, (__u64)REGION / 2, "direct: %llu",
		     (unsigned long long)info.bytes_direct);
	cr_expect_eq(f.s.n[0].ctx->regions[f.mt].refs, 0u);
	cr_expect_eq(f.s.n[1].ctx->regions[f.mr].refs, 0u);
	cr_expect_eq(xvi_stream_ctx__deregister_mem(f.s.n[0].ctx, f.mt), 0);
	mn_teardown(&f);
}

Test(memnet, data_before_the_post_is_copied_from_the_ring)
{
	struct mn_fixture f;
	struct xvi_stream_info info = { .sz = sizeof(info) };
	ssize_t r;

	mn_setup(&f, 62);
	cr_assert_eq(xvi_ss__send(f.c, f.tx, 5000), 5000);
	RUN_UNTIL(&f.s, 100000, xvi_srq__ready(&f.v->rcv.queue) == 5000);
	r = finish(&f, xvi_stream__async_recv(f.v, f.mr, 0, 5000), 1000000);
	cr_assert_eq(r, 5000);
	cr_assert_eq(memcmp(f.rx, f.tx, 5000), 0);
	xvi_stream__info(f.v, &info);
	cr_expect_eq(info.bytes_direct, 0u, "these arrived before any post");
	mn_teardown(&f);
}

Test(memnet, receive_ends_short_at_end_of_stream)
{
	struct mn_fixture f;
	struct xvi_memnet_job *j;
	ssize_t r;

	mn_setup(&f, 63);
	j = xvi_stream__async_recv(f.v, f.mr, 0, 100000);
	cr_assert_eq(xvi_ss__send(f.c, f.tx, 3000), 3000);
	cr_assert_eq(xvi_ss__shutdown(f.c, SHUT_WR), 0);
	r = finish(&f, j, 1000000);
	cr_expect_eq(r, 3000);
	/* at end of stream a further receive completes with 0 bytes */
	r = finish(&f, xvi_stream__async_recv(f.v, f.mr, 0, 10), 1000000);
	cr_expect_eq(r, 0);
	mn_teardown(&f);
}

Test(memnet, busy_region_and_stream_until_jobs_complete)
{
	struct mn_fixture f;
	struct xvi_memnet_job *j;
	ssize_t r;

	mn_setup(&f, 64);
	j = xvi_stream__async_send(f.c, f.mt, 0, 200000);
	cr_assert(j);
	cr_expect_eq(xvi_stream_ctx__deregister_mem(f.s.n[0].ctx, f.mt), -EBUSY);
	cr_expect_eq(xvi_stream__close(f.c), -EBUSY);
	cr_expect_eq(xvi_memnet_job__done(j, &r), 0, "done before any ACK");
	/* drain the receiver so the window keeps opening */
	cr_assert(RUN_UNTIL(&f.s, 10000000, (xvi_ss__recv(f.v, f.rx, REGION),
					    xvi_memnet_job__done(j, &r) == 1)));
	cr_expect_eq(r, 200000);
	cr_expect_eq(xvi_stream_ctx__deregister_mem(f.s.n[0].ctx, f.mt), 0);
	/* bad ranges and handles */
	cr_expect_null(xvi_stream__async_send(f.c, f.mt, 0, 10), "deregistered");
	cr_expect_null(xvi_stream__async_recv(f.v, f.mr, REGION - 10, 11));
	cr_expect_eq(errno, EINVAL);
	cr_expect_null(xvi_stream__async_recv(f.l, f.mr, 0, 10), "a listener");
	mn_teardown(&f);
}

Test(memnet, connection_failure_completes_jobs_with_its_error)
{
	struct mn_fixture f;
	struct xvi_memnet_job *rj, *sj;
	ssize_t r;

	mn_setup(&f, 65);
	rj = xvi_stream__async_recv(f.v, f.mr, 0, 1000);
	sj = xvi_stream__async_send(f.v, f.mr, 2000, 1000);
	cr_assert(rj && sj);
	f.s.drop_all[1] = true;		/* the send can never be acknowledged */
	cr_assert_eq(xvi_ss__abort(f.c), 0);	/* RST to the receiver */
	f.s.drop_all[1] = false;
	r = finish(&f, rj, 1000000);
	cr_expect_eq(r, -ECONNRESET, "recv job: %zd", r);
	r = finish(&f, sj, 1000000);
	cr_expect_eq(r, -ECONNRESET, "send job: %zd", r);
	cr_expect_eq(f.s.n[1].ctx->regions[f.mr].refs, 0u, "a failed job still holds its region");
	mn_teardown(&f);
}

Test(memnet, freeing_the_context_aborts_pending_jobs)
{
	struct mn_fixture f;
	struct xvi_memnet_job *j;
	ssize_t r = 0;

	mn_setup(&f, 66);
	j = xvi_stream__async_recv(f.v, f.mr, 0, 1000);
	cr_assert(j);
	xvi_sctx__free(f.s.n[1].ctx);
	f.s.n[1].ctx = NULL;
	cr_expect_eq(xvi_memnet_job__done(j, &r), 1);
	cr_expect_eq(r, -ECONNABORTED);
	xvi_sctx__free(f.s.n[0].ctx);
	f.s.n[0].ctx = NULL;
	free(f.s.q);
	free(f.tx);
	free(f.rx);
}

/* ---- debug checks (XVI_DEBUG=1): a buffer in flight must not be reused ---- */

Test(memnet, debug_refuses_overlapping_jobs)
{
	struct mn_fixture f;
	struct xvi_memnet_job *a, *b;

	setenv("XVI_DEBUG", "1", 1);
	mn_setup(&f, 67);
	a = xvi_stream__async_send(f.c, f.mt, 1000, 4000);
	cr_assert(a);
	b = xvi_stream__async_send(f.c, f.mt, 4999, 10);
	cr_expect_null(b, "a job over a buffer still in flight was taken");
	cr_expect_eq(errno, EBUSY);
	b = xvi_stream__async_send(f.c, f.mt, 5000, 10);	/* adjacent: fine */
	cr_expect(b);
	cr_expect_eq(finish(&f, a, 1000000), 4000);
	if (b)
		cr_expect_eq(finish(&f, b, 1000000), 10);
	/* completed: the range is free again */
	a = xvi_stream__async_send(f.c, f.mt, 1000, 4000);
	cr_expect(a);
	if (a)
		finish(&f, a, 1000000);
	mn_teardown(&f);
}

Test(memnet, debug_catches_a_send_buffer_changed_in_flight)
{
	struct mn_fixture f;
	struct xvi_memnet_job *j;
	ssize_t r;

	setenv("XVI_DEBUG", "1", 1);
	mn_setup(&f, 68);
	j = xvi_stream__async_send(f.c, f.mt, 0, 50000);
	cr_assert(j);
	f.tx[30000] ^= 0xff;		/* the application broke the rule */
	r = finish(&f, j, 10000000);
	cr_expect_eq(r, -EFAULT, "send job: %zd", r);
	mn_teardown(&f);
}
