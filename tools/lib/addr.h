/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Addresses as the tools take them on the command line and print them:
 * IPv4 and IPv6 literals (brackets allowed around IPv6), ports, interface
 * names.  Parsers return NULL on success or what is wrong with the input,
 * for the caller to print after the input itself.
 */
#ifndef XVI_TOOLS_ADDR_H
#define XVI_TOOLS_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <linux/types.h>
#include <xvi.h>

#define XT_PORT_RANGE	"a port is 1..65535"

/* An IPv4 or IPv6 literal and @port into @out; the family comes from the
 * literal.  NULL, or why @ip is not one. */
const char *xt_parse_ip(const char *ip, __u16 port, union xvi_sockaddr *out);
/* A port, 1..65535.  NULL, or XT_PORT_RANGE. */
const char *xt_parse_port(const char *s, __u16 *port);
/* An existing interface: its index in @ifindex.  NULL, or why not. */
const char *xt_parse_ifname(const char *name, int *ifindex);

/* The wildcard address of @family (AF_INET6, else IPv4) and @port. */
void xt_any_addr(int family, __u16 port, union xvi_sockaddr *out);
socklen_t xt_addrlen(const union xvi_sockaddr *a);
__u16 xt_port(const union xvi_sockaddr *a);
/* "198.18.0.1:7000" or "[2001:2::1]:7000" */
const char *xt_addr_str(const union xvi_sockaddr *a, char *buf, size_t len);
/* A port in the dynamic range 49152..65535, from the pid: no two tools that
 * run at once on a host pick the same one unless their pids differ by 16384. */
__u16 xt_pid_port(void);

#endif /* XVI_TOOLS_ADDR_H */
