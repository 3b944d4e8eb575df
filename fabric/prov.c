// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The provider's entry point: libfabric dlopen()s libxvi-fi.so, calls
 * fi_prov_ini() and keeps the struct fi_provider it returns (name, version,
 * getinfo, fabric, cleanup) for the life of the process.
 */
#include <stdio.h>

#include "xvi_fi.h"

struct xfi_env xfi_env;

static void xfi_cleanup(void)
{
}

struct fi_provider xfi_prov = {
	.name = XFI_NAME,
	.version = XFI_PROV_VERSION,
	.fi_version = XFI_FI_VERSION,
	.getinfo = xfi_getinfo,
	.fabric = xfi_fabric,
	.cleanup = xfi_cleanup,
};

/*
 * libxvi's warnings name a problem and its fix (datapath not attached, port
 * taken): they go to stderr as they would without the provider, since
 * libfabric prints nothing unless FI_LOG_LEVEL asks.  Info and debug go
 * through libfabric's log.
 */
static int xfi_xvi_print(enum xvi_print_level level, const char *fmt, va_list args)
{
	enum fi_log_level fl = level == XVI_INFO ? FI_LOG_INFO : FI_LOG_DEBUG;
	char msg[512];

	if (level == XVI_WARN)
		return vfprintf(stderr, fmt, args);
	if (!fi_log_enabled(&xfi_prov, fl, FI_LOG_CORE))
		return 0;
	vsnprintf(msg, sizeof(msg), fmt, args);
	fi_log(&xfi_prov, fl, FI_LOG_CORE, "libxvi", 0, "%s", msg);
	return 0;
}

int xfi_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	return -FI_ENOSYS;
}

int xfi_no_control(struct fid *fid, int command, void *arg)
{
	return -FI_ENOSYS;
}

int xfi_no_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops,
		    void *context)
{
	return -FI_ENOSYS;
}

FI_EXT_INI
{
	fi_param_define(&xfi_prov, "iface", FI_PARAM_STRING,
			"Interface running the xdp-vi datapath (default: the first "
			"interface that is up, not loopback, with an IPv4 address)");
	fi_param_define(&xfi_prov, "queue", FI_PARAM_INT,
			"Interface queue the endpoints bind (default: 0)");
	fi_param_get_str(&xfi_prov, "iface", &xfi_env.iface);
	fi_param_get_int(&xfi_prov, "queue", &xfi_env.queue);
	xvi_set_print(xfi_xvi_print);
	return &xfi_prov;
}
