// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Client side of the xdp-vid broker protocol (see broker.h): how an
 * unprivileged process gets a protected endpoint.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <linux/if_xdp.h>
#include <sys/un.h>

#include "broker/broker.h"
#include "common/log.h"
#include "common/util.h"

/* Bound on every wait for the daemon: setup includes loading two programs. */
#define XVI_BROKER_TIMEOUT_MS	10000

int xvi_broker__path(const char *ifname, char *buf, size_t len)
{
	const char *dir = secure_getenv("XVI_RUN_DIR");
	struct stat st;
	int n;

	if (!dir || !*dir)
		dir = XVI_BROKER_RUN_DIR;
	if (stat("/proc/self/ns/net", &st))
		return -errno;
	n = snprintf(buf, len, "%s/%s@%llu.sock", dir, ifname,
		     (unsigned long long)st.st_ino);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}

bool xvi_broker__listening(const char *ifname)
{
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct stat st;

	return !xvi_broker__path(ifname, path, sizeof(path)) && !stat(path, &st) &&
	       S_ISSOCK(st.st_mode);
}

void xvi_broker__req_init(struct xvi_broker_req *req, __u16 op)
{
	memset(req, 0, sizeof(*req));
	req->magic = XVI_BROKER_MAGIC;
	req->version = XVI_BROKER_VERSION;
	req->op = op;
	req->size = sizeof(*req);
}

ssize_t xvi_broker__send_fd(int sk, const void *buf, size_t len, int fd, int flags)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;
	ssize_t n;

	if (fd >= 0) {
		memset(&cbuf, 0, sizeof(cbuf));
		msg.msg_control = cbuf.buf;
		msg.msg_controllen = sizeof(cbuf.buf);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(fd));
	}
	n = sendmsg(sk, &msg, flags | MSG_NOSIGNAL);
	return n < 0 ? -errno : n;
}

ssize_t xvi_broker__recv_fd(int sk, void *buf, size_t len, int *fd, int flags, int *msg_flags)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf.buf, .msg_controllen = sizeof(cbuf.buf),
	};
	struct cmsghdr *cm;
	ssize_t n;
	size_t k;
	int got;

	if (fd)
		*fd = -1;
	n = recvmsg(sk, &msg, flags | MSG_CMSG_CLOEXEC);
	if (n < 0)
		return -errno;
	for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		for (k = 0; k < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); k++) {
			memcpy(&got, CMSG_DATA(cm) + k * sizeof(int), sizeof(got));
			if (fd && *fd < 0)
				*fd = got;
			else
				close(got);
		}
	}
	if (msg_flags)
		*msg_flags = msg.msg_flags;
	return n;
}

/* One request, with @fd attached (SCM_RIGHTS) if >= 0. */
static int send_req_fd(int conn, const struct xvi_broker_req *req, int fd)
{
	ssize_t n = xvi_broker__send_fd(conn, req, sizeof(*req), fd, 0);

	if (n < 0)
		return n;
	return n == sizeof(*req) ? 0 : -EIO;
}

static int send_req(int conn, const struct xvi_broker_req *req)
{
	return send_req_fd(conn, req, -1);
}

/*
 * One reply, with at most one fd (the AF_XDP socket) attached.  The reply
 * comes from root, but is still checked: size, magic, op.
 */
static int recv_resp(int conn, __u16 op, struct xvi_broker_resp *resp, int *fd)
{
	struct pollfd pfd = { .fd = conn, .events = POLLIN };
	int r, mflags = 0;
	ssize_t n;

	if (fd)
		*fd = -1;
	do {
		r = poll(&pfd, 1, XVI_BROKER_TIMEOUT_MS);
	} while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	if (!r)
		return -ETIMEDOUT;
	n = xvi_broker__recv_fd(conn, resp, sizeof(*resp), fd, 0, &mflags);
	if (n < 0)
		return n;
	if (n == 0)
		return -ECONNRESET;
	if (n == sizeof(*resp) && resp->magic == XVI_BROKER_MAGIC &&
	    resp->op == XVI_BROKER_REVOKE && op != XVI_BROKER_REVOKE) {
		resp->msg[sizeof(resp->msg) - 1] = '\0';
		pr_warn("xdp-vid revoked the endpoint: %s\n", resp->msg);
		return resp->error < 0 ? resp->error : -ECONNRESET;
	}
	if (n != sizeof(*resp) || (mflags & (MSG_TRUNC | MSG_CTRUNC)) ||
	    resp->magic != XVI_BROKER_MAGIC || resp->size != sizeof(*resp) ||
	    resp->op != op) {
		if (fd && *fd >= 0) {
			close(*fd);
			*fd = -1;
		}
		return -EPROTO;
	}
	resp->msg[sizeof(resp->msg) - 1] = '\0';
	resp->dev[sizeof(resp->dev) - 1] = '\0';
	return 0;
}

/* A connection to the broker of @ifname in @*fd; a negative errno, logged. */
static int broker_connect(const char *ifname, int *fd)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int err;

	*fd = -1;
	err = xvi_broker__path(ifname, sun.sun_path, sizeof(sun.sun_path));
	if (err) {
		pr_warn("%s: cannot name the xdp-vid socket: %s\n", ifname, strerror(-err));
		return err;
	}
	*fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (*fd < 0)
		return -errno;
	if (connect(*fd, (struct sockaddr *)&sun, sizeof(sun))) {
		err = -errno;
		pr_warn("%s: no endpoint broker at %s (%s): start 'xdp-vid %s' as root "
			"for unprivileged endpoints, or run with CAP_NET_RAW and CAP_BPF\n",
			ifname, sun.sun_path, strerror(-err), ifname);
		close(*fd);
		*fd = -1;
		return err == -ENOENT ? -ECONNREFUSED : err;
	}
	return 0;
}

int xvi_broker__open(const char *ifname, const struct xvi_tag *tag,
		     __u32 frame_size, __u32 num_frames, int *conn, int *xsk,
		     struct xvi_broker_resp *resp)
{
	struct xvi_broker_req req;
	int fd, err, sfd = -1;

	*conn = -1;
	*xsk = -1;
	err = broker_connect(ifname, &fd);
	if (err)
		return err;
	xvi_broker__req_init(&req, XVI_BROKER_OPEN);
	req.frame_size = frame_size;
	req.num_frames = num_frames;
	req.tag = *tag;
	snprintf(req.ifname, sizeof(req.ifname), "%s", ifname);
	err = send_req(fd, &req);
	if (!err)
		err = recv_resp(fd, XVI_BROKER_OPEN, resp, &sfd);
	if (err) {
		pr_warn("%s: xdp-vid did not answer the open request: %s\n", ifname,
			strerror(-err));
		goto fail;
	}
	if (resp->error) {
		err = resp->error < 0 ? resp->error : -EPROTO;
		pr_warn("%s: xdp-vid refused the endpoint: %s\n", ifname,
			resp->msg[0] ? resp->msg : strerror(-err));
		goto fail;
	}
	if (sfd < 0) {
		pr_warn("%s: xdp-vid answered without a socket\n", ifname);
		err = -EPROTO;
		goto fail;
	}
	*conn = fd;
	*xsk = sfd;
	return 0;
fail:
	if (sfd >= 0)
		close(sfd);
	close(fd);
	return err;
}

int xvi_broker__ready(int conn)
{
	struct xvi_broker_resp resp;
	struct xvi_broker_req req;
	int err;

	xvi_broker__req_init(&req, XVI_BROKER_READY);
	err = send_req(conn, &req);
	if (!err)
		err = recv_resp(conn, XVI_BROKER_READY, &resp, NULL);
	if (err) {
		pr_warn("xdp-vid did not confirm the endpoint: %s\n", strerror(-err));
		return err;
	}
	if (resp.error) {
		pr_warn("xdp-vid could not publish the endpoint: %s\n",
			resp.msg[0] ? resp.msg : strerror(-resp.error));
		return resp.error < 0 ? resp.error : -EPROTO;
	}
	return 0;
}

int xvi_broker__resolve(int conn, int family, const __u8 *nexthop, __u8 mac[6],
			int timeout_ms)
{
	long long deadline = xvi_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	struct xvi_broker_resp resp;
	struct xvi_broker_req req;
	int err, nap_us = 500;

	xvi_broker__req_init(&req, XVI_BROKER_RESOLVE);
	req.family = family;
	memcpy(req.addr, nexthop, family == AF_INET6 ? 16 : 4);
	for (;;) {
		err = send_req(conn, &req);
		if (!err)
			err = recv_resp(conn, XVI_BROKER_RESOLVE, &resp, NULL);
		if (err)
			return err;
		if (!resp.error) {
			memcpy(mac, resp.mac, 6);
			return 0;
		}
		if (resp.error != -EAGAIN)
			return resp.error < 0 ? resp.error : -EPROTO;
		if (xvi_now_ms() >= deadline)
			return -EHOSTUNREACH;
		/* the daemon started resolution: poll fast, then back off */
		usleep(nap_us);
		if (nap_us < 8000)
			nap_us *= 2;
	}
}

int xvi_broker__revoked(int conn)
{
	struct pollfd pfd = { .fd = conn, .events = POLLIN };
	struct xvi_broker_resp resp;
	int err;

	if (poll(&pfd, 1, 0) != 1)
		return 0;
	err = recv_resp(conn, XVI_BROKER_REVOKE, &resp, NULL);
	if (err)
		return err == -ECONNRESET ? err : 0;
	pr_warn("xdp-vid revoked the endpoint: %s\n", resp.msg);
	return resp.error < 0 ? resp.error : -ECONNRESET;
}

/* An EXT_* request on a connection of its own: the reply in @resp. */
static int ext_request(const char *ifname, struct xvi_broker_req *req, int obj_fd,
		       struct xvi_broker_resp *resp, char *log, size_t log_size)
{
	struct pollfd pfd;
	int fd, err;
	ssize_t n;

	if (log && log_size)
		log[0] = '\0';
	err = broker_connect(ifname, &fd);
	if (err)
		return err;
	req->tag.queue = 0;
	snprintf(req->ifname, sizeof(req->ifname), "%s", ifname);
	err = send_req_fd(fd, req, obj_fd);
	if (!err)
		err = recv_resp(fd, req->op, resp, NULL);
	if (err) {
		pr_warn("%s: xdp-vid did not answer the handler request: %s\n", ifname,
			strerror(-err));
		goto out;
	}
	/* The verifier's log follows the reply as one message of its own. */
	if (resp->log_len && log && log_size > 1) {
		pfd.fd = fd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, XVI_BROKER_TIMEOUT_MS) == 1) {
			n = recv(fd, log, log_size - 1, 0);
			log[n > 0 ? n : 0] = '\0';
		}
	}
	if (resp->error) {
		err = resp->error < 0 ? resp->error : -EPROTO;
		pr_warn("%s: xdp-vid refused: %s\n", ifname,
			resp->msg[0] ? resp->msg : strerror(-err));
	}
out:
	close(fd);
	return err;
}

int xvi_broker__ext_load(const char *ifname, const struct xvi_tag *tag, __u32 handler,
			 int obj_fd, const char *prog, bool replace, char *log, size_t log_size,
			 __u32 *prog_id)
{
	struct xvi_broker_resp resp;
	struct xvi_broker_req req;
	int err;

	if (prog && strlen(prog) >= sizeof(req.ext_prog))
		return -ENAMETOOLONG;
	xvi_broker__req_init(&req, XVI_BROKER_EXT_LOAD);
	req.tag = *tag;
	req.ext_handler = handler;
	req.ext_flags = replace ? XVI_BROKER_EXT_REPLACE : 0;
	if (prog)
		snprintf(req.ext_prog, sizeof(req.ext_prog), "%s", prog);
	err = ext_request(ifname, &req, obj_fd, &resp, log, log_size);
	if (!err && prog_id)
		*prog_id = resp.prog_id;
	return err;
}

int xvi_broker__ext_unload(const char *ifname, const struct xvi_tag *tag, __u32 handler)
{
	struct xvi_broker_resp resp;
	struct xvi_broker_req req;

	xvi_broker__req_init(&req, XVI_BROKER_EXT_UNLOAD);
	req.tag = *tag;
	req.ext_handler = handler;
	return ext_request(ifname, &req, -1, &resp, NULL, 0);
}

int xvi_broker__ext_list(const char *ifname, struct xvi_broker_ext_entry *out, __u32 max)
{
	struct xvi_broker_ext_entry *buf;
	struct xvi_broker_resp resp;
	struct xvi_broker_req req;
	struct pollfd pfd;
	int fd, err;
	__u32 sent = 0;
	ssize_t n;

	xvi_broker__req_init(&req, XVI_BROKER_EXT_LIST);
	snprintf(req.ifname, sizeof(req.ifname), "%s", ifname);
	err = broker_connect(ifname, &fd);
	if (err)
		return err;
	err = send_req(fd, &req);
	if (!err)
		err = recv_resp(fd, req.op, &resp, NULL);
	if (err) {
		pr_warn("%s: xdp-vid did not answer the handler list request: %s\n", ifname,
			strerror(-err));
		goto out;
	}
	if (resp.error) {
		err = resp.error < 0 ? resp.error : -EPROTO;
		pr_warn("%s: xdp-vid refused: %s\n", ifname,
			resp.msg[0] ? resp.msg : strerror(-err));
		goto out;
	}
	sent = resp.ext_count < XVI_BROKER_EXT_LIST_MAX ? resp.ext_count : XVI_BROKER_EXT_LIST_MAX;
	if (!sent) {
		err = 0;
		goto out;
	}
	buf = calloc(sent + 1, sizeof(*buf));
	if (!buf) {
		err = -ENOMEM;
		goto out;
	}
	pfd.fd = fd;
	pfd.events = POLLIN;
	n = poll(&pfd, 1, XVI_BROKER_TIMEOUT_MS) == 1 ?
	    recv(fd, buf, (sent + 1) * sizeof(*buf), 0) : -1;
	if (n != (ssize_t)(sent * sizeof(*buf))) {
		pr_warn("%s: xdp-vid's handler list is malformed (%zd bytes for %u handlers)\n",
			ifname, n, sent);
		err = -EPROTO;
	} else {
		if (max)
			memcpy(out, buf, (max < sent ? max : sent) * sizeof(*buf));
		err = 0;
	}
	free(buf);
out:
	close(fd);
	return err ? err : (int)sent;
}

/* The socket setup by hand (xvi_xsk__setup_fd) lives in xsk/setup.c. */
