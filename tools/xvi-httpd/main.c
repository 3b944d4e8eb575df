// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xvi-httpd [--kernel | -i IFACE -s SERVER:PORT [--direct | --async]] [-r DIR] PORT
 *
 * Serves the regular files of DIR (read into memory at start) over HTTP/1.0
 * and 1.1: GET and HEAD, keep-alive (1.1's default, 1.0's on request),
 * pipelined requests answered in order.  One thread, one poll loop; the
 * sockets are the kernel's (--kernel) or a TCP Server's (MemNet remote
 * sockets: this host does no TCP).  With --direct, file bodies go out by
 * MemNet send_direct from the files' registered memory (the call waits
 * until the TCP Server holds them); with --async as async_send jobs from
 * it (the loop goes on at once).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/stat.h>
#include "httpd.h"
#include "addr.h"
#include "signals.h"

#define IN_MAX		8192
#define MAX_CONNS	4096

struct file {
	char *name;
	char *data;
	size_t len;
};

struct conn {
	int id;
	size_t in_len;
	char in[IN_MAX];
	char hdr[256];
	size_t hdr_off, hdr_len;
	const char *body;
	size_t body_off, body_len;
	bool close_after, peer_eof;
};

static struct file *files;
static int nfiles;
static char *arena;		/* every file's bytes, one block (registered) */
static size_t arena_len;
static unsigned long long served;

static int load_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d) {
		fprintf(stderr, "xvi-httpd: cannot open %s: %s: give a directory of files (-r)\n",
			dir, strerror(errno));
		return -1;
	}
	while ((e = readdir(d))) {
		char path[4096];
		struct stat st;
		struct file *f;
		int fd;

		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (stat(path, &st) || !S_ISREG(st.st_mode))
			continue;
		f = realloc(files, (size_t)(nfiles + 1) * sizeof(*f));
		if (!f)
			break;
		files = f;
		f = &files[nfiles];
		f->name = strdup(e->d_name);
		f->len = (size_t)st.st_size;
		f->data = malloc(f->len ? f->len : 1);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (!f->name || !f->data || fd < 0 ||
		    read(fd, f->data, f->len) != (ssize_t)f->len) {
			fprintf(stderr, "xvi-httpd: cannot read %s\n", path);
			if (fd >= 0)
				close(fd);
			closedir(d);
			return -1;
		}
		close(fd);
		nfiles++;
	}
	closedir(d);
	/* One block, so that one registered region holds every body. */
	for (int i = 0; i < nfiles; i++)
		arena_len += files[i].len;
	arena = malloc(arena_len ? arena_len : 1);
	if (!arena) {
		fprintf(stderr, "xvi-httpd: out of memory for %zu bytes of files\n", arena_len);
		return -1;
	}
	for (size_t i = 0, at = 0; i < (size_t)nfiles; at += files[i].len, i++) {
		memcpy(arena + at, files[i].data, files[i].len);
		free(files[i].data);
		files[i].data = arena + at;
	}
	return 0;
}

static const struct file *lookup(const char *path, size_t len)
{
	if (len && path[0] == '/') {
		path++;
		len--;
	}
	for (int i = 0; i < nfiles; i++)
		if (strlen(files[i].name) == len && !memcmp(files[i].name, path, len))
			return &files[i];
	return NULL;
}

/* Does header @name (with ':') appear in @h with a value starting @val? */
static bool header_is(const char *h, size_t hlen, const char *name, const char *val)
{
	size_t nl = strlen(name), vl = strlen(val);

	for (const char *p = h, *end = h + hlen; p < end;) {
		const char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);

		if (!eol)
			eol = end;
		if ((size_t)(eol - p) > nl && !strncasecmp(p, name, nl)) {
			const char *v = p + nl;

			while (v < eol && *v == ' ')
				v++;
			if ((size_t)(eol - v) >= vl && !strncasecmp(v, val, vl))
				return true;
		}
		p = eol + 2;
	}
	return false;
}

/* Take one complete request from c->in and queue its response; false if none. */
static bool take_request(struct conn *c)
{
	char *end = memmem(c->in, c->in_len, "\r\n\r\n", 4);
	const char *sp1, *sp2, *eol, *status = "200 OK";
	const struct file *f = NULL;
	size_t used;
	bool head, v11;

	if (!end) {
		if (c->in_len == IN_MAX)	/* a request that never ends */
			c->peer_eof = c->close_after = true;
		return false;
	}
	used = (size_t)(end - c->in) + 4;
	eol = memmem(c->in, used, "\r\n", 2);
	sp1 = memchr(c->in, ' ', (size_t)(eol - c->in));
	sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
	head = sp1 && sp1 - c->in == 4 && !memcmp(c->in, "HEAD", 4);
	v11 = sp2 && eol - sp2 - 1 == 8 && !memcmp(sp2 + 1, "HTTP/1.1", 8);
	if (!sp2 || (!head && !(sp1 - c->in == 3 && !memcmp(c->in, "GET", 3)))) {
		status = "400 Bad Request";
		c->close_after = true;
	} else if (!(f = lookup(sp1 + 1, (size_t)(sp2 - sp1 - 1)))) {
		status = "404 Not Found";
	}
	if (!c->close_after) {
		const char *hdrs = eol + 2;
		size_t hl = used - (size_t)(hdrs - c->in);

		if (v11 ? header_is(hdrs, hl, "Connection:", "close") :
			  !header_is(hdrs, hl, "Connection:", "keep-alive"))
			c->close_after = true;
	}
	c->body = f && !head ? f->data : NULL;
	c->body_len = f && !head ? f->len : 0;
	c->body_off = 0;
	c->hdr_off = 0;
	c->hdr_len = (size_t)snprintf(c->hdr, sizeof(c->hdr),
				      "HTTP/1.%d %s\r\nServer: xvi-httpd\r\nContent-Length: %zu\r\n"
				      "Content-Type: application/octet-stream\r\nConnection: %s\r\n\r\n",
				      v11, status, f ? f->len : 0,
				      c->close_after ? "close" : "keep-alive");
	memmove(c->in, c->in + used, c->in_len - used);
	c->in_len -= used;
	served++;
	return true;
}

/* Move what can move without waiting; false when the connection is done. */
static bool service(struct hio *io, struct conn *c)
{
	for (;;) {
		ssize_t r;

		if (c->hdr_off < c->hdr_len) {
			r = io->ops->send(io, c->id, c->hdr + c->hdr_off, c->hdr_len - c->hdr_off,
					  c->body_off < c->body_len);
			if (r == -EAGAIN)
				return true;
			if (r < 0)
				return false;
			c->hdr_off += (size_t)r;
			continue;
		}
		if (c->body_off < c->body_len) {
			r = io->ops->send(io, c->id, c->body + c->body_off,
					  c->body_len - c->body_off, false);
			if (r == -EAGAIN)
				return true;
			if (r < 0)
				return false;
			c->body_off += (size_t)r;
			continue;
		}
		if (c->hdr_len && c->close_after)
			return false;
		c->hdr_len = c->hdr_off = 0;
		if (take_request(c))
			continue;
		if (c->peer_eof)
			return false;
		r = io->ops->recv(io, c->id, c->in + c->in_len, IN_MAX - c->in_len);
		if (r == -EAGAIN)
			return true;
		if (r <= 0) {
			c->peer_eof = true;
			if (r < 0)
				return false;
			continue;
		}
		c->in_len += (size_t)r;
	}
}

static int run(struct hio *io, int l)
{
	static struct conn *conns[MAX_CONNS + 1];
	static int ids[MAX_CONNS + 1];
	static short ev[MAX_CONNS + 1], rev[MAX_CONNS + 1];
	int n = 0;

	while (!xt_stop) {
		int r;

		ids[0] = l;
		ev[0] = n < MAX_CONNS ? POLLIN : 0;
		for (int i = 0; i < n; i++) {
			struct conn *c = conns[i];

			ids[i + 1] = c->id;
			ev[i + 1] = c->hdr_off < c->hdr_len || c->body_off < c->body_len ?
				    POLLOUT : POLLIN;
		}
		r = io->ops->poll(io, ids, ev, rev, n + 1, 200);
		if (r < 0 && r != -EINTR) {
			fprintf(stderr, "xvi-httpd: poll: %s\n", strerror(-r));
			return 1;
		}
		while (n < MAX_CONNS && (rev[0] & POLLIN)) {
			int id = io->ops->accept(io, l);
			struct conn *c;

			if (id < 0)
				break;
			c = calloc(1, sizeof(*c));
			if (!c) {
				io->ops->close(io, id);
				break;
			}
			c->id = id;
			conns[n] = c;
			rev[++n] = POLLIN;
		}
		for (int i = 0; i < n; i++) {
			if (!rev[i + 1])
				continue;
			if (service(io, conns[i]))
				continue;
			io->ops->close(io, conns[i]->id);
			free(conns[i]);
			conns[i] = conns[--n];
			rev[i + 1] = rev[n + 1];
			i--;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "kernel", no_argument, NULL, 'k' },
		{ "iface", required_argument, NULL, 'i' },
		{ "server", required_argument, NULL, 's' },
		{ "root", required_argument, NULL, 'r' },
		{ "async", no_argument, NULL, 'a' },
		{ "direct", no_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *iface = NULL, *server = NULL, *root = ".";
	bool kernel = false, async = false, direct = false;
	struct hio *io;
	int c, l, rc;
	__u16 port;

	while ((c = getopt_long(argc, argv, "ki:s:r:adh", lo, NULL)) != -1) {
		switch (c) {
		case 'k':
			kernel = true;
			break;
		case 'i':
			iface = optarg;
			break;
		case 's':
			server = optarg;
			break;
		case 'r':
			root = optarg;
			break;
		case 'a':
			async = true;
			break;
		case 'd':
			direct = true;
			break;
		case 'h':
			printf("usage: xvi-httpd (--kernel | -i IFACE -s SERVER:PORT [--direct | --async]) [-r DIR] PORT\n");
			return 0;
		default:
			return 2;
		}
	}
	if (optind != argc - 1 || xt_parse_port(argv[optind], &port)) {
		fprintf(stderr, "xvi-httpd: give the PORT to serve on (1..65535)\n");
		return 2;
	}
	if (kernel && (async || direct)) {
		fprintf(stderr, "xvi-httpd: --%s is a MemNet backend: give -i IFACE -s SERVER:PORT, not --kernel\n",
			async ? "async" : "direct");
		return 2;
	}
	if (async && direct) {
		fprintf(stderr, "xvi-httpd: --async and --direct are two MemNet backends: give one\n");
		return 2;
	}
	if (!kernel && (!iface || !server)) {
		fprintf(stderr, "xvi-httpd: give --kernel, or -i IFACE -s SERVER:PORT for a TCP Server\n");
		return 2;
	}
	if (load_dir(root))
		return 1;
	xt_install_signals();
	io = kernel ? hio_kernel() :
	     hio_memnet(iface, server, async ? HIO_ASYNC : direct ? HIO_DIRECT : HIO_PLAIN);
	if (!io)
		return 1;
	if (io->ops->reg && (rc = io->ops->reg(io, arena, arena_len))) {
		fprintf(stderr, "xvi-httpd: cannot register the files' memory: %s\n", strerror(-rc));
		io->ops->free(io);
		return 1;
	}
	l = io->ops->listen(io, port, 1024);
	if (l < 0) {
		fprintf(stderr, "xvi-httpd: cannot listen on port %u: %s\n", port, strerror(-l));
		io->ops->free(io);
		return 1;
	}
	fprintf(stderr, "xvi-httpd: %d files of %s on port %u (%s)\n", nfiles, root, port,
		kernel ? "kernel TCP" : async ? "MemNet TCP Server, async" :
		direct ? "MemNet TCP Server, direct" : "MemNet TCP Server");
	rc = run(io, l);
	fprintf(stderr, "xvi-httpd: %llu responses\n", served);
	io->ops->free(io);
	return rc;
}
