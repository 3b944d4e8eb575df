// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * One netlink request and its replies, over a socket the caller opened:
 * the loop that rtnetlink and generic netlink requests share.
 */
#include <errno.h>
#include <stdbool.h>
#include <time.h>
#include <libmnl/libmnl.h>

#include "nl/nl.h"

struct mnl_socket *xvi_nl__open(int bus)
{
	struct mnl_socket *nl;
	int err;

	nl = mnl_socket_open2(bus, SOCK_CLOEXEC);
	if (!nl)
		return NULL;
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		err = errno;
		mnl_socket_close(nl);
		errno = err;
		return NULL;
	}
	return nl;
}

int xvi_nl__request(struct mnl_socket *nl, struct nlmsghdr *nlh, mnl_cb_t cb, void *data)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	bool dump = nlh->nlmsg_flags & NLM_F_DUMP;
	unsigned int portid = mnl_socket_get_portid(nl);
	int ret;

	/*
	 * Two requests on one socket within a second (a generic netlink
	 * family lookup, then the command) differ by their type, so a late
	 * answer to the first never passes for the second's.
	 */
	nlh->nlmsg_seq = (unsigned int)time(NULL) ^ nlh->nlmsg_type;
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	for (;;) {
		ret = mnl_socket_recvfrom(nl, buf, sizeof(buf));
		if (ret < 0)
			return -errno;
		ret = mnl_cb_run(buf, ret, nlh->nlmsg_seq, portid, cb, data);
		if (ret < 0)	/* NLMSG_ERROR from the kernel or a callback error */
			return errno ? -errno : -EIO;
		if (ret == MNL_CB_STOP || !dump)
			return 0;
	}
}
