// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Device AF_XDP features from the netdev generic-netlink family (libmnl):
 * resolve the family id with the genl controller, then NETDEV_CMD_DEV_GET.
 *
 * Slow path: each call opens its own NETLINK_GENERIC socket, so a caller in
 * another network namespace (setns) asks about that namespace's devices.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <libmnl/libmnl.h>
#include <linux/genetlink.h>

#include "common/log.h"
#include "nl/netdev.h"
#include "nl/nl.h"

int xvi_genl__parse_family_id(const struct nlmsghdr *nlh, __u16 *id)
{
	const struct nlattr *attr;

	if (nlh->nlmsg_type != GENL_ID_CTRL ||
	    nlh->nlmsg_len < mnl_nlmsg_size(sizeof(struct genlmsghdr)))
		return -EPROTO;
	mnl_attr_for_each(attr, nlh, sizeof(struct genlmsghdr)) {
		if (mnl_attr_get_type(attr) != CTRL_ATTR_FAMILY_ID)
			continue;
		if (mnl_attr_validate(attr, MNL_TYPE_U16) < 0)
			return -EPROTO;
		*id = mnl_attr_get_u16(attr);
		return *id ? 0 : -EPROTO;
	}
	return -ENOENT;
}

int xvi_netdev__parse_dev(const struct nlmsghdr *nlh, int ifindex, int want, __u64 *features)
{
	const struct nlattr *attr;
	bool have_if = false, have_feat = false;
	__u64 feat = 0;

	if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(struct genlmsghdr)))
		return -EPROTO;
	mnl_attr_for_each(attr, nlh, sizeof(struct genlmsghdr)) {
		switch (mnl_attr_get_type(attr)) {
		case XVI_NETDEV_A_DEV_IFINDEX:
			if (mnl_attr_validate(attr, MNL_TYPE_U32) < 0 ||
			    mnl_attr_get_u32(attr) != (__u32)ifindex)
				return -EPROTO;
			have_if = true;
			break;
		default:
			if (mnl_attr_get_type(attr) != want)
				break;
			if (mnl_attr_validate(attr, MNL_TYPE_U64) < 0)
				return -EPROTO;
			feat = mnl_attr_get_u64(attr);
			have_feat = true;
			break;
		}
	}
	if (!have_if)
		return -EPROTO;
	if (!have_feat)
		return -EOPNOTSUPP;
	*features = feat;
	return 0;
}

struct reply {
	__u16 type;		/* expected nlmsg_type */
	int ifindex;
	int attr;		/* the DEV_GET attribute wanted */
	int err;		/* of the parser; 1 = no reply seen */
	__u16 family;
	__u64 features;
};

static int reply_cb(const struct nlmsghdr *nlh, void *data)
{
	struct reply *r = data;

	if (nlh->nlmsg_type != r->type)
		return MNL_CB_OK;
	if (r->type == GENL_ID_CTRL)
		r->err = xvi_genl__parse_family_id(nlh, &r->family);
	else
		r->err = xvi_netdev__parse_dev(nlh, r->ifindex, r->attr, &r->features);
	return MNL_CB_STOP;
}

/* One generic-netlink request, its one reply parsed into @r. */
static int genl_do(struct mnl_socket *nl, struct nlmsghdr *nlh, struct reply *r)
{
	int err;

	r->err = 1;
	err = xvi_nl__request(nl, nlh, reply_cb, r);
	if (err)
		return err;
	return r->err == 1 ? -EPROTO : r->err;
}

/*
 * The whole buffer is zeroed first: libmnl 1.0.4 does not clear attribute
 * padding (the byte after "netdev\0"), and an uninitialised byte would go
 * to the kernel with the request.
 */
static struct nlmsghdr *genl_put(char *buf, size_t len, __u16 type, __u8 cmd,
				 __u8 version)
{
	struct nlmsghdr *nlh;
	struct genlmsghdr *g;

	memset(buf, 0, len);
	nlh = mnl_nlmsg_put_header(buf);

	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST;
	g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	g->cmd = cmd;
	g->version = version;
	return nlh;
}

/*
 * A NETLINK_GENERIC socket into *@nl and the netdev family's id into
 * r->family; -EOPNOTSUPP before kernel 6.3.  The socket is closed on error.
 */
static int netdev_open(struct mnl_socket **nl, char *buf, size_t len, struct reply *r)
{
	struct nlmsghdr *nlh;
	int err;

	*nl = xvi_nl__open(NETLINK_GENERIC);
	if (!*nl)
		return -errno;
	nlh = genl_put(buf, len, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 1);
	mnl_attr_put_strz(nlh, CTRL_ATTR_FAMILY_NAME, XVI_NETDEV_FAMILY_NAME);
	r->type = GENL_ID_CTRL;
	err = genl_do(*nl, nlh, r);
	if (err)
		mnl_socket_close(*nl);
	return err == -ENOENT ? -EOPNOTSUPP : err;
}

/* One u64 attribute of NETDEV_CMD_DEV_GET for @ifindex. */
static int dev_get(int ifindex, int attr, __u64 *features)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct reply r = { .ifindex = ifindex, .attr = attr };
	struct mnl_socket *nl;
	struct nlmsghdr *nlh;
	int err;

	if (ifindex <= 0 || !features)
		return -EINVAL;
	err = netdev_open(&nl, buf, sizeof(buf), &r);
	if (err)
		return err;
	r.type = r.family;
	nlh = genl_put(buf, sizeof(buf), r.family, XVI_NETDEV_CMD_DEV_GET,
		       XVI_NETDEV_FAMILY_VERSION);
	mnl_attr_put_u32(nlh, XVI_NETDEV_A_DEV_IFINDEX, (__u32)ifindex);
	err = genl_do(nl, nlh, &r);
	if (!err)
		*features = r.features;
	mnl_socket_close(nl);
	return err;
}

int xvi_netdev__xsk_features(int ifindex, __u64 *features)
{
	return dev_get(ifindex, XVI_NETDEV_A_DEV_XSK_FEATURES, features);
}

int xvi_netdev__xdp_features(int ifindex, __u64 *features)
{
	return dev_get(ifindex, XVI_NETDEV_A_DEV_XDP_FEATURES, features);
}

struct napi_pids {
	__u16 family;
	int ifindex;
	int *pids;
	int max, n;
};

static int napi_cb(const struct nlmsghdr *nlh, void *data)
{
	struct napi_pids *np = data;
	const struct nlattr *attr;
	int ifindex = 0, pid = 0;

	if (nlh->nlmsg_type != np->family ||
	    nlh->nlmsg_len < mnl_nlmsg_size(sizeof(struct genlmsghdr)))
		return MNL_CB_OK;
	mnl_attr_for_each(attr, nlh, sizeof(struct genlmsghdr)) {
		if (mnl_attr_validate(attr, MNL_TYPE_U32) < 0)
			continue;
		if (mnl_attr_get_type(attr) == XVI_NETDEV_A_NAPI_IFINDEX)
			ifindex = (int)mnl_attr_get_u32(attr);
		else if (mnl_attr_get_type(attr) == XVI_NETDEV_A_NAPI_PID)
			pid = (int)mnl_attr_get_u32(attr);
	}
	if (ifindex == np->ifindex && pid > 0 && np->n < np->max)
		np->pids[np->n++] = pid;
	return MNL_CB_OK;
}

int xvi_netdev__napi_pids(int ifindex, int *pids, int max)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct napi_pids np = { .ifindex = ifindex, .pids = pids, .max = max };
	struct reply r = {};
	struct mnl_socket *nl;
	struct nlmsghdr *nlh;
	int err;

	if (ifindex <= 0 || !pids || max <= 0)
		return -EINVAL;
	err = netdev_open(&nl, buf, sizeof(buf), &r);
	if (err)
		return err;
	np.family = r.family;
	nlh = genl_put(buf, sizeof(buf), r.family, XVI_NETDEV_CMD_NAPI_GET,
		       XVI_NETDEV_FAMILY_VERSION);
	nlh->nlmsg_flags |= NLM_F_DUMP;
	mnl_attr_put_u32(nlh, XVI_NETDEV_A_NAPI_IFINDEX, (__u32)ifindex);
	/* no such command (EOPNOTSUPP): a kernel before 6.8 */
	err = xvi_nl__request(nl, nlh, napi_cb, &np);
	mnl_socket_close(nl);
	return err ? err : np.n;
}
