// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * mpi_check: a small MPI job that checks its own results, for running Open
 * MPI over the libfabric provider xvi (tests/lab/fabric.sh, case mpi, and
 * the bench).  Needs 2 or more ranks.
 *
 *   ring       a 64 KiB message goes round the ranks, each adding its rank
 *              to a counter in it and checking the pattern it carries;
 *   allreduce  MPI_SUM of 4096 doubles, every element checked on every rank;
 *   pingpong   ranks 0 and 1, sizes 1 B .. 1 MiB, each reply compared byte
 *              for byte with what was sent; rank 0 prints per size
 *              "pingpong SIZE ITERS median_us MB/s" (half round trip).
 *
 * Prints "mpi_check: OK ranks N" on rank 0 when every check passed; any
 * mismatch prints what differed and aborts the job with exit status 1.
 * usage: mpi_check [ITERS]   (ping-pong iterations per size, default 50)
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, nranks;

static void die(const char *what, long at, double got, double want)
{
	fprintf(stderr, "mpi_check: rank %d: %s wrong at %ld: got %g, want %g\n", rank, what,
		at, got, want);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

static unsigned char pattern(long i, int seed)
{
	return (unsigned char)(i * 131 + seed * 7 + (i >> 8));
}

static void ring(void)
{
	const long n = 64 * 1024;
	unsigned char *buf = malloc(n);
	int64_t hops = 0;
	long i;

	if (rank == 0) {
		for (i = 0; i < n; i++)
			buf[i] = pattern(i, 1);
		memcpy(buf, &hops, sizeof(hops));
		MPI_Send(buf, n, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
		MPI_Recv(buf, n, MPI_BYTE, nranks - 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	} else {
		MPI_Recv(buf, n, MPI_BYTE, rank - 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	}
	for (i = sizeof(hops); i < n; i++)
		if (buf[i] != pattern(i, 1))
			die("ring payload", i, buf[i], pattern(i, 1));
	memcpy(&hops, buf, sizeof(hops));
	if (rank) {
		hops += rank;
		memcpy(buf, &hops, sizeof(hops));
		MPI_Send(buf, n, MPI_BYTE, (rank + 1) % nranks, 1, MPI_COMM_WORLD);
	} else if (hops != (int64_t)nranks * (nranks - 1) / 2) {
		die("ring rank sum", 0, hops, (double)nranks * (nranks - 1) / 2);
	}
	free(buf);
}

static void allreduce(void)
{
	const int n = 4096;
	double *in = malloc(n * sizeof(*in)), *out = malloc(n * sizeof(*out));
	int i;

	for (i = 0; i < n; i++)
		in[i] = (double)(rank + 1) * i;
	MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	for (i = 0; i < n; i++) {
		double want = (double)nranks * (nranks + 1) / 2 * i;

		if (out[i] != want)
			die("allreduce", i, out[i], want);
	}
	free(in);
	free(out);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void pingpong(int iters)
{
	const long max = 1 << 20;
	unsigned char *tx = malloc(max), *rx = malloc(max);
	double *t = malloc(iters * sizeof(*t));
	long size, i;
	int it, peer = !rank;

	if (rank > 1)
		goto out;
	for (i = 0; i < max; i++)
		tx[i] = pattern(i, 2);
	for (size = 1; size <= max; size *= 4) {
		for (it = 0; it < iters; it++) {
			double t0 = MPI_Wtime();

			if (rank == 0) {
				MPI_Send(tx, size, MPI_BYTE, peer, 2, MPI_COMM_WORLD);
				MPI_Recv(rx, size, MPI_BYTE, peer, 2, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
			} else {
				MPI_Recv(rx, size, MPI_BYTE, peer, 2, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				MPI_Send(rx, size, MPI_BYTE, peer, 2, MPI_COMM_WORLD);
			}
			t[it] = (MPI_Wtime() - t0) / 2;
			if (rank == 0 && memcmp(tx, rx, size)) {
				for (i = 0; i < size && tx[i] == rx[i]; i++)
					;
				die("pingpong echo", i, rx[i], tx[i]);
			}
			memset(rx, 0, size);
		}
		if (rank == 0) {
			qsort(t, iters, sizeof(*t), cmp_double);
			printf("pingpong %ld %d %.2f %.1f\n", size, iters, t[iters / 2] * 1e6,
			       size / t[iters / 2] / 1e6);
		}
	}
out:
	free(tx);
	free(rx);
	free(t);
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 50;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (nranks < 2 || iters < 1) {
		if (rank == 0)
			fprintf(stderr, "mpi_check: needs 2 or more ranks and ITERS >= 1\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	ring();
	allreduce();
	pingpong(iters);
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0)
		printf("mpi_check: OK ranks %d\n", nranks);
	MPI_Finalize();
	return 0;
}
