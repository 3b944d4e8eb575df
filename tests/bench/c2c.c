// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * c2c: the round trip of one cache line between two CPUs, in nanoseconds.
 *
 * Two threads pinned to CPU A and CPU B hand a flag back and forth; the
 * time per exchange is what any cross-core handoff costs on this machine
 * at this moment: a ring index written by one core and read by the other,
 * a wake-up, a lock.  make bench runs it around every latency round,
 * because on a virtual machine the two vCPUs may sit on sibling threads of
 * one core (a round trip of about 100 ns here) or on cores far apart
 * (about 600 ns), and the host moves them between the two within seconds:
 * every ping-pong latency follows.
 *
 * usage: c2c [CPU-A CPU-B]   (default 0 1); prints the median of 7 batches.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCHES	7
#define ROUNDS	20000

static _Alignas(64) atomic_int flag;

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void *peer(void *arg)
{
	(void)arg;
	for (int i = 0; i < BATCHES * ROUNDS; i++) {
		while (atomic_load_explicit(&flag, memory_order_acquire) != 1)
			;
		atomic_store_explicit(&flag, 0, memory_order_release);
	}
	return NULL;
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int cpu_a = 0, cpu_b = 1, err;
	double ns[BATCHES];
	pthread_attr_t attr;
	cpu_set_t set;
	pthread_t t;

	if (argc == 3) {
		cpu_a = atoi(argv[1]);
		cpu_b = atoi(argv[2]);
	} else if (argc != 1) {
		fprintf(stderr, "usage: c2c [CPU-A CPU-B]\n");
		return 2;
	}
	err = pin(cpu_a);
	if (err) {
		fprintf(stderr, "c2c: cannot run on CPU %d: %s\n", cpu_a, strerror(err));
		return 1;
	}
	/* Pinned from birth: a peer that could not be pinned must not start. */
	CPU_ZERO(&set);
	CPU_SET(cpu_b, &set);
	err = pthread_attr_init(&attr) ?: pthread_attr_setaffinity_np(&attr, sizeof(set), &set) ?:
	      pthread_create(&t, &attr, peer, NULL);
	if (err) {
		fprintf(stderr, "c2c: cannot run a thread on CPU %d: %s\n", cpu_b, strerror(err));
		return 1;
	}
	for (int b = 0; b < BATCHES; b++) {
		double t0 = now_ns();

		for (int i = 0; i < ROUNDS; i++) {
			atomic_store_explicit(&flag, 1, memory_order_release);
			while (atomic_load_explicit(&flag, memory_order_acquire) != 0)
				;
		}
		ns[b] = (now_ns() - t0) / ROUNDS;
	}
	pthread_join(t, NULL);
	qsort(ns, BATCHES, sizeof(ns[0]), cmp);
	printf("%.0f\n", ns[BATCHES / 2]);
	return 0;
}
