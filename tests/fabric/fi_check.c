// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fi_check: the parts of the xvi provider fi_pingpong does not reach, run
 * between two lab nodes (tests/lab/fabric.sh, case cq):
 *
 *   fi_check server LOCAL_IP PEER_IP     (node b, port 7300)
 *   fi_check client LOCAL_IP PEER_IP     (node a, port 7301)
 *
 * Both name their endpoint with fi_getinfo(node, service, FI_SOURCE), so
 * each knows the other's address.  The client checks that fi_cq_sread
 * times out with -FI_EAGAIN on an empty CQ, then sends a 100-byte and a
 * 200-byte datagram (before the server has posted anything: they must
 * wait, not be dropped).  The server posts and cancels a receive
 * (FI_ECANCELED through fi_cq_readerr), receives the first datagram
 * scattered over two iovecs with fi_cq_sread on an FI_WAIT_FD CQ of format
 * DATA (length, buffer, flags, bytes, and the sender through
 * fi_cq_readfrom), the second into an 8-byte buffer (-FI_EAVAIL, then
 * FI_ETRUNC with olen 192), and answers; the client reads the answer with
 * fi_cq_sread.  Exit 0 and "fi_check: OK" when all held.
 */
#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#define SERVER_PORT "7300"
#define CLIENT_PORT "7301"

static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_ep *ep;
static struct fid_cq *txcq, *rxcq;
static struct fid_av *av;
static fi_addr_t peer;

#define CHECK(cond, ...)							\
	do {									\
		if (!(cond)) {							\
			fprintf(stderr, "fi_check: %s:%d: ", __func__, __LINE__);\
			fprintf(stderr, __VA_ARGS__);				\
			fputc('\n', stderr);					\
			exit(1);						\
		}								\
	} while (0)

#define CALL(expr)								\
	do {									\
		long _r = (long)(expr);						\
		CHECK(_r == 0, "%s: %ld (%s)", #expr, _r, fi_strerror(-_r));	\
	} while (0)

static void fill(char *p, size_t n, int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (char)(i * 7 + seed);
}

static void open_all(const char *ip, const char *port, const char *peer_ip,
		     const char *peer_port)
{
	struct fi_info *hints = fi_allocinfo(), *info;
	struct fi_cq_attr rx_attr = { .format = FI_CQ_FORMAT_DATA, .wait_obj = FI_WAIT_FD };
	struct fi_cq_attr tx_attr = { .format = FI_CQ_FORMAT_MSG, .wait_obj = FI_WAIT_NONE };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct sockaddr_in sin = { .sin_family = AF_INET }, name;
	size_t len = sizeof(name);
	int wait_fd = -1;

	hints->ep_attr->type = FI_EP_DGRAM;
	hints->caps = FI_MSG | FI_SOURCE;
	hints->fabric_attr->prov_name = strdup("xvi");
	CALL(fi_getinfo(FI_VERSION(1, 17), ip, port, FI_SOURCE, hints, &info));
	CALL(fi_fabric(info->fabric_attr, &fabric, NULL));
	CALL(fi_domain(fabric, info, &domain, NULL));
	CALL(fi_cq_open(domain, &rx_attr, &rxcq, NULL));
	CALL(fi_cq_open(domain, &tx_attr, &txcq, NULL));
	CALL(fi_control(&rxcq->fid, FI_GETWAIT, &wait_fd));
	CHECK(wait_fd >= 0, "FI_GETWAIT gave fd %d", wait_fd);
	CALL(fi_av_open(domain, &av_attr, &av, NULL));
	CALL(fi_endpoint(domain, info, &ep, NULL));
	CALL(fi_ep_bind(ep, &av->fid, 0));
	CALL(fi_ep_bind(ep, &txcq->fid, FI_TRANSMIT));
	CALL(fi_ep_bind(ep, &rxcq->fid, FI_RECV));
	CALL(fi_enable(ep));
	CALL(fi_getname(&ep->fid, &name, &len));
	CHECK(len == sizeof(name) && ntohs(name.sin_port) == atoi(port),
	      "fi_getname: %zu bytes, port %u, want %s", len, ntohs(name.sin_port), port);
	inet_pton(AF_INET, peer_ip, &sin.sin_addr);
	sin.sin_port = htons(atoi(peer_port));
	CHECK(fi_av_insert(av, &sin, 1, &peer, 0, NULL) == 1, "fi_av_insert");
	fi_freeinfo(hints);
	fi_freeinfo(info);
}

static void close_all(void)
{
	CALL(fi_close(&ep->fid));
	CALL(fi_close(&av->fid));
	CALL(fi_close(&rxcq->fid));
	CALL(fi_close(&txcq->fid));
	CALL(fi_close(&domain->fid));
	CALL(fi_close(&fabric->fid));
}

static void send_wait(const void *buf, size_t len)
{
	struct fi_cq_msg_entry e;
	ssize_t n;
	int ctx;

	CALL(fi_send(ep, buf, len, NULL, peer, &ctx));
	do
		n = fi_cq_read(txcq, &e, 1);
	while (n == -FI_EAGAIN);
	CHECK(n == 1 && e.op_context == &ctx && e.flags == (FI_SEND | FI_MSG),
	      "send completion: %zd, flags %#llx", n, (unsigned long long)e.flags);
}

static void server(void)
{
	char a[10], b[200], small[8], want[200], reply[50];
	struct iovec iov[2] = { { a, sizeof(a) }, { b, sizeof(b) } };
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err = {};
	int c_cancel, c_first, c_small;
	fi_addr_t src;
	ssize_t n;

	/* A receive posted and cancelled first: an error entry. */
	CALL(fi_recv(ep, b, sizeof(b), NULL, FI_ADDR_UNSPEC, &c_cancel));
	CALL(fi_cancel(&ep->fid, &c_cancel));
	CHECK(fi_cq_read(rxcq, &e, 1) == -FI_EAVAIL, "no error entry after fi_cancel");
	CHECK(fi_cq_readerr(rxcq, &err, 0) == 1 && err.err == FI_ECANCELED &&
	      err.op_context == &c_cancel, "readerr after cancel: err %d", err.err);

	CALL(fi_recvv(ep, iov, NULL, 2, FI_ADDR_UNSPEC, &c_first));
	CALL(fi_recv(ep, small, sizeof(small), NULL, FI_ADDR_UNSPEC, &c_small));
	n = fi_cq_sread(rxcq, &e, 1, NULL, 10000);
	CHECK(n == 1, "fi_cq_sread: %zd (%s)", n, fi_strerror(-n));
	CHECK(e.op_context == &c_first && e.len == 100 && e.buf == a &&
	      e.flags == (FI_RECV | FI_MSG), "first completion: ctx %p len %zu buf %p flags %#llx",
	      e.op_context, e.len, e.buf, (unsigned long long)e.flags);
	fill(want, 100, 1);
	CHECK(!memcmp(a, want, 10) && !memcmp(b, want + 10, 90),
	      "the 100 bytes differ across the two iovecs");

	/* The 200-byte datagram into 8 bytes: truncated, an error entry. */
	do
		n = fi_cq_readfrom(rxcq, &e, 1, &src);
	while (n == -FI_EAGAIN);
	CHECK(n == -FI_EAVAIL, "truncated receive: read gave %zd, want -FI_EAVAIL", n);
	CHECK(fi_cq_readerr(rxcq, &err, 0) == 1 && err.err == FI_ETRUNC && err.olen == 192 &&
	      err.len == 8 && err.op_context == &c_small,
	      "truncation: err %d olen %zu len %zu", err.err, err.olen, err.len);
	fill(want, 200, 2);
	CHECK(!memcmp(small, want, 8), "the truncated datagram's first 8 bytes differ");

	/* The sender, through the AV: the next datagram comes from it. */
	CALL(fi_recv(ep, b, sizeof(b), NULL, FI_ADDR_UNSPEC, &c_first));
	fill(reply, sizeof(reply), 3);
	send_wait(reply, sizeof(reply));
	n = fi_cq_sreadfrom(rxcq, &e, 1, &src, NULL, 10000);
	CHECK(n == 1 && e.len == 4 && src == peer, "readfrom: %zd, len %zu, src %llu, want %llu",
	      n, e.len, (unsigned long long)src, (unsigned long long)peer);
}

static void client(void)
{
	char first[100], second[200], back[50], want[50];
	struct fi_cq_data_entry e;
	int ctx;
	ssize_t n;

	CALL(fi_recv(ep, back, sizeof(back), NULL, FI_ADDR_UNSPEC, &ctx));
	n = fi_cq_sread(rxcq, &e, 1, NULL, 20);
	CHECK(n == -FI_EAGAIN, "fi_cq_sread on an empty CQ: %zd, want -FI_EAGAIN", n);
	fill(first, sizeof(first), 1);
	fill(second, sizeof(second), 2);
	send_wait(first, sizeof(first));
	send_wait(second, sizeof(second));
	n = fi_cq_sread(rxcq, &e, 1, NULL, 10000);
	fill(want, sizeof(want), 3);
	CHECK(n == 1 && e.len == sizeof(back) && !memcmp(back, want, sizeof(want)),
	      "answer: %zd, len %zu", n, e.len);
	send_wait("done", 4);
}

int main(int argc, char **argv)
{
	bool srv = argc == 4 && !strcmp(argv[1], "server");

	if (argc != 4 || (!srv && strcmp(argv[1], "client"))) {
		fprintf(stderr, "usage: fi_check server|client LOCAL_IP PEER_IP\n");
		return 2;
	}
	open_all(argv[2], srv ? SERVER_PORT : CLIENT_PORT, argv[3],
		 srv ? CLIENT_PORT : SERVER_PORT);
	if (srv)
		server();
	else
		client();
	close_all();
	printf("fi_check: OK\n");
	return 0;
}
