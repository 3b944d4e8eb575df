// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * preload_fork: a forking TCP server and its client, for the semantics of
 * a stream shared across fork (xvi-run --streams) that servers like vsftpd
 * rely on.  Also passes on kernel TCP, which keeps it honest.
 *
 *   preload_fork server IP PORT    accept 2 connections, fork a child for
 *                                  each and close the parent's copy at once
 *   preload_fork client IP PORT    make them
 *
 * Connection 1: the client sends 4 MiB in 64 KiB pieces, the child echoes
 * each back, the client shuts its side down (SHUT_WR), the child reads
 * EOF and closes, the client reads EOF.  Connection 2, the other way
 * round: the child sends 1 MiB and shuts its side down, the client reads
 * it and EOF, then sends 1 MiB and closes; the child reads it and EOF and
 * exits with its verdict.  Each child first checks that its socket
 * still names an IPv4 connection (getsockname, getpeername).  The parent accepts connection 2 while child 1
 * may still run, and exits 1 unless both children exited 0.  Each check
 * prints "ok NAME" or "FAIL NAME: why".
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>

#define PIECE 65536
#define ECHO_BYTES (4u << 20)
#define HALF_BYTES (1u << 20)

static void check(const char *name, int ok, const char *why)
{
	if (!ok) {
		printf("FAIL %s: %s (errno %s)\n", name, why, strerror(errno));
		fflush(stdout);
		exit(1);
	}
	printf("ok %s\n", name);
	fflush(stdout);
}

static unsigned char pat(size_t off, int seed)
{
	return (unsigned char)(off * 131 + (off >> 11) + seed);
}

/* Read (@wr false) or write exactly @len bytes; 0, or -1 on EOF or error. */
static int full(int fd, unsigned char *b, size_t len, bool wr)
{
	ssize_t n;

	while (len) {
		n = wr ? write(fd, b, len) : read(fd, b, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		b += n;
		len -= n;
	}
	return 0;
}

/* Send @len bytes of pattern @seed. */
static int send_pat(int fd, size_t len, int seed)
{
	unsigned char b[PIECE];
	size_t off, i, k;

	for (off = 0; off < len; off += k) {
		k = len - off < PIECE ? len - off : PIECE;
		for (i = 0; i < k; i++)
			b[i] = pat(off + i, seed);
		if (full(fd, b, k, true))
			return -1;
	}
	return 0;
}

/* Read until EOF: 0 if exactly @len bytes of pattern @seed came. */
static int recv_pat(int fd, size_t len, int seed)
{
	unsigned char b[PIECE];
	size_t off = 0;
	ssize_t n, i;

	for (;;) {
		n = read(fd, b, sizeof(b));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			return off == len ? 0 : -1;
		for (i = 0; i < n; i++)
			if (off + i >= len || b[i] != pat(off + i, seed))
				return -1;
		off += n;
	}
}

/* The child's socket still names an IPv4 connection at both ends (vsftpd asks). */
static int inet_names(int fd)
{
	struct sockaddr_in sa, pa;
	socklen_t sl = sizeof(sa), pl = sizeof(pa);

	return getsockname(fd, (struct sockaddr *)&sa, &sl) ||
	       getpeername(fd, (struct sockaddr *)&pa, &pl) || sa.sin_family != AF_INET ||
	       pa.sin_family != AF_INET || !pa.sin_port;
}

/* Child 1: echo every byte back until EOF, then close. */
static int child_echo(int fd)
{
	unsigned char b[PIECE];
	ssize_t n;

	if (inet_names(fd))
		return 1;
	for (;;) {
		n = read(fd, b, sizeof(b));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return 1;
		if (n == 0)
			break;
		if (full(fd, b, n, true))
			return 1;
	}
	return close(fd) ? 1 : 0;
}

/* Child 2: speak first and shut down, then read the client's bytes to EOF. */
static int child_half(int fd)
{
	if (inet_names(fd) || send_pat(fd, HALF_BYTES, 7) || shutdown(fd, SHUT_WR))
		return 1;
	if (recv_pat(fd, HALF_BYTES, 9))
		return 1;
	return close(fd) ? 1 : 0;
}

static int server(const struct sockaddr_in *a)
{
	int lfd = socket(AF_INET, SOCK_STREAM, 0), one = 1, i, fd, st, bad = 0;
	pid_t kids[2];

	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	check("listen", lfd >= 0 && !bind(lfd, (const struct sockaddr *)a, sizeof(*a)) &&
	      !listen(lfd, 8), "socket, bind or listen failed");
	for (i = 0; i < 2; i++) {
		fd = accept(lfd, NULL, NULL);
		check(i ? "accept 2 (after a fork)" : "accept 1", fd >= 0, "accept failed");
		kids[i] = fork();
		if (kids[i] == 0) {
			close(lfd);
			_exit(i ? child_half(fd) : child_echo(fd));
		}
		check("fork", kids[i] > 0, "fork failed");
		/* The usual forking server: the parent's copy goes at once. */
		check("parent closes its copy", !close(fd), "close failed");
	}
	for (i = 0; i < 2; i++) {
		if (waitpid(kids[i], &st, 0) != kids[i] || !WIFEXITED(st) || WEXITSTATUS(st)) {
			printf("FAIL child %d: status 0x%x\n", i + 1, st);
			bad = 1;
		} else {
			printf("ok child %d: %s\n", i + 1,
			       i ? "read 1 MiB and EOF after its own shutdown" :
				   "echoed 4 MiB and read EOF");
		}
	}
	close(lfd);
	return bad;
}

static int client(const struct sockaddr_in *a)
{
	static unsigned char out[PIECE], back[PIECE];
	size_t off, i;
	ssize_t n;
	int fd;
	char c;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	check("connect 1", fd >= 0 && !connect(fd, (const struct sockaddr *)a, sizeof(*a)),
	      "connect failed");
	for (off = 0; off < ECHO_BYTES; off += PIECE) {
		for (i = 0; i < PIECE; i++)
			out[i] = pat(off + i, 3);
		if (full(fd, out, PIECE, true) || full(fd, back, PIECE, false) ||
		    memcmp(out, back, PIECE))
			break;
	}
	check("echo 4 MiB through the child", off == ECHO_BYTES, "short or wrong echo");
	check("shutdown(SHUT_WR)", !shutdown(fd, SHUT_WR), "shutdown failed");
	n = read(fd, &c, 1);
	check("EOF after the child's close", n == 0, n > 0 ? "a byte more" : "no EOF");
	close(fd);

	fd = socket(AF_INET, SOCK_STREAM, 0);
	check("connect 2", fd >= 0 && !connect(fd, (const struct sockaddr *)a, sizeof(*a)),
	      "connect failed");
	check("1 MiB then EOF from the child's shutdown", !recv_pat(fd, HALF_BYTES, 7),
	      "short, wrong or no EOF");
	check("send 1 MiB after the peer's shutdown", !send_pat(fd, HALF_BYTES, 9),
	      "send failed");
	check("close", !close(fd), "close failed");
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET };

	if (argc != 4 || inet_pton(AF_INET, argv[2], &a.sin_addr) != 1 ||
	    (strcmp(argv[1], "server") && strcmp(argv[1], "client"))) {
		fprintf(stderr, "usage: preload_fork server|client IP PORT\n");
		return 2;
	}
	a.sin_port = htons((unsigned short)atoi(argv[3]));
	alarm(120);	/* a hang fails the case instead of blocking the suite */
	signal(SIGPIPE, SIG_IGN);
	return strcmp(argv[1], "server") ? client(&a) : server(&a);
}
