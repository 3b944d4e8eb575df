// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xdp-vid policy: who may open which endpoint.
 *
 * File (default /etc/xdp-vi/policy), one rule a line, '#' comments, the
 * first rule that matches the request decides; no match is a refusal:
 *
 *   allow|deny  WHO  udp PORT[-PORT] [addr iface|any|IP] [guard-allow KINDS] [ext]
 *   allow|deny  WHO  raw TAG[-TAG] [guard-allow KINDS] [ext]
 *   limit endpoints-per-uid N
 *   limit connections-per-uid N
 *   limit opens-per-second N
 *   limit segment-bytes N
 *   limit pending-connections N		(all uids together)
 *   limit total-opens-per-second N	(all uids together)
 *   limit ext-handlers-per-uid N		(handlers one uid may have loaded)
 *   limit ext-insns N			(instructions of one handler program)
 *   limit ext-map-bytes N		(map memory of one loaded handler)
 *
 *   WHO = *  |  uid:N  |  user:NAME  |  gid:N  |  group:NAME
 *   N, PORT = decimal ("uid:010" is uid 10, never octal);  TAG = decimal or
 *   explicit 0x hex;  addr defaults to iface (the interface's own addresses,
 *   or the wildcard that means all of them).
 *   PORTS may also be "default": 1024-65535 without the control-protocol
 *   ports below and without net.ipv4.ip_local_reserved_ports (read at
 *   every OPEN: where NodePort and similar ranges are reserved).
 *   KINDS (allow rules only) = comma-separated kinds of frame the guard
 *   drops by default and lets out for endpoints this rule allows:
 *   group (multicast and broadcast destinations), ip-options,
 *   net-control (DSCP 48-63), control-ports; or all.
 *   ext (allow rules only): the owner of an endpoint this rule allows may
 *   load extension handlers for it (EXT_LOAD, docs/EXTENSIONS.md).
 *
 * Without a file the built-in policy is one rule, for the members of one
 * group an administrator grants (xdp-vid --group, default "xdp-vi"):
 *   allow group:xdp-vi udp default addr iface
 * and without that group nobody is allowed anything.
 */
#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include "ctl/ctl.h"
#include "xvid.h"

#define DEF_MAX_PER_UID		16
#define DEF_CONNS_PER_UID	16
#define DEF_OPENS_PER_SEC	5
#define MAX_OPENS_PER_SEC	1000
#define DEF_MAX_SEGMENT		(256ULL << 20)
/* Every OPEN makes a veth pair under RTNL, which the whole host shares. */
#define DEF_PENDING		32
#define DEF_TOTAL_OPENS_PER_SEC	20
/* Extension handlers (rules with "ext"): small by default. */
#define DEF_EXT_HANDLERS	4
#define DEF_EXT_INSNS		4096
#define MAX_EXT_INSNS		1000000		/* the verifier's own bound */
#define DEF_EXT_MAP_BYTES	(1U << 20)

/*
 * Decimal only, unless @hex_ok and the number starts with an explicit 0x:
 * an administrator writing uid:010 means uid 10, not 8 (strtoull base 0).
 */
static int parse_num(const char *s, __u32 *out, bool hex_ok)
{
	unsigned long long v;
	int base = 10;
	char *end;

	if (hex_ok && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	if (!isxdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, base);
	if (errno || *end || v > 0xffffffffULL)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_u32(const char *s, __u32 *out)
{
	return parse_num(s, out, false);
}

/* PORT[-PORT] (decimal) or TAG[-TAG] (@hex_ok: decimal or 0x hex). */
static int parse_range(char *s, __u32 *lo, __u32 *hi, bool hex_ok)
{
	char *dash = strchr(s, '-');

	if (dash)
		*dash++ = '\0';
	if (parse_num(s, lo, hex_ok) || parse_num(dash ? dash : s, hi, hex_ok) || *lo > *hi)
		return -EINVAL;
	return 0;
}

static __u32 clamp_u32(__u32 v, __u32 lo, __u32 hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/*
 * UDP ports of protocols that steer the network itself: a client sending
 * as the host from one of them could take the LAN's gateway, poison name
 * resolution, or tear down the host's tunnels and liveness sessions.
 * Kept out of "udp default"; a rule naming them explicitly still allows.
 */
static const struct {
	__u16 port;
	const char *what;
} control_ports[] = {
	{ 1900, "SSDP" },		{ 1985, "HSRP" },
	{ 2123, "GTP-C" },		{ 2152, "GTP-U" },
	{ 3222, "GLBP" },		{ 3702, "WS-Discovery" },
	{ 3784, "BFD" },		{ 3785, "BFD echo" },
	{ 4341, "LISP data" },		{ 4342, "LISP control" },
	{ 4500, "IPsec NAT-T" },	{ 4784, "BFD multihop" },
	{ 4789, "VXLAN" },		{ 4790, "VXLAN-GPE" },
	{ 5353, "mDNS" },		{ 5355, "LLMNR" },
	{ 6080, "GUE" },		{ 6081, "Geneve" },
	{ 6635, "MPLS in UDP" },	{ 6784, "BFD on LAG" },
	{ 8472, "VXLAN (Linux default)" },
};

#define DEFAULT_PORTS_LO	1024
#define DEFAULT_PORTS_HI	65535
#define RESERVED_PORTS_FILE	"/proc/sys/net/ipv4/ip_local_reserved_ports"

static const char *control_port(__u32 port)
{
	size_t i;

	for (i = 0; i < sizeof(control_ports) / sizeof(control_ports[0]); i++)
		if (control_ports[i].port == port)
			return control_ports[i].what;
	return NULL;
}

/* Is @port in net.ipv4.ip_local_reserved_ports ("8080,30000-32767")? */
static bool reserved_port(__u32 port)
{
	char buf[4096], *t, *save = NULL;
	__u32 lo, hi;
	ssize_t n;
	int fd;

	fd = open(RESERVED_PORTS_FILE, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	for (t = strtok_r(buf, ", \n", &save); t; t = strtok_r(NULL, ", \n", &save))
		if (!parse_range(t, &lo, &hi, false) && port >= lo && port <= hi)
			return true;
	return false;
}

/* Why "udp default" leaves out @port, or NULL if it does not. */
static const char *default_excludes(__u32 port, char *buf, size_t len)
{
	const char *what = control_port(port);

	if (port < DEFAULT_PORTS_LO)
		return "a privileged port";
	if (what) {
		if (len)
			snprintf(buf, len, "the %s port", what);
		return len ? buf : what;
	}
	if (reserved_port(port))
		return "reserved in net.ipv4.ip_local_reserved_ports";
	return NULL;
}

static int parse_who(const char *s, struct xvid_rule *r)
{
	if (!strcmp(s, "*")) {
		r->who = WHO_ANY;
		return 0;
	}
	if (!strncmp(s, "uid:", 4)) {
		r->who = WHO_UID;
		return parse_u32(s + 4, &r->id);
	}
	if (!strncmp(s, "gid:", 4)) {
		r->who = WHO_GID;
		return parse_u32(s + 4, &r->id);
	}
	if (!strncmp(s, "user:", 5)) {
		struct passwd *pw = getpwnam(s + 5);

		if (!pw)
			return -ENOENT;
		r->who = WHO_UID;
		r->id = pw->pw_uid;
		return 0;
	}
	if (!strncmp(s, "group:", 6)) {
		struct group *gr = getgrnam(s + 6);

		if (!gr)
			return -ENOENT;
		r->who = WHO_GID;
		r->id = gr->gr_gid;
		return 0;
	}
	return -EINVAL;
}

static const struct {
	const char *name;
	__u32 bit;
} guard_kinds[] = {
	{ "group", XVI_GUARD_ALLOW_GROUP },
	{ "ip-options", XVI_GUARD_ALLOW_IP_OPTIONS },
	{ "net-control", XVI_GUARD_ALLOW_NET_CONTROL },
	{ "control-ports", XVI_GUARD_ALLOW_CTL_PORTS },
};

#define GUARD_ALLOW_ALL	(XVI_GUARD_ALLOW_GROUP | XVI_GUARD_ALLOW_IP_OPTIONS | \
			 XVI_GUARD_ALLOW_NET_CONTROL | XVI_GUARD_ALLOW_CTL_PORTS)

/* "group,net-control" or "all" -> XVI_GUARD_ALLOW_* bits. */
static int parse_guard_allow(char *s, __u32 *bits)
{
	char *save = NULL, *k;
	size_t i;

	*bits = 0;
	if (!strcmp(s, "all")) {
		*bits = GUARD_ALLOW_ALL;
		return 0;
	}
	for (k = strtok_r(s, ",", &save); k; k = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < sizeof(guard_kinds) / sizeof(guard_kinds[0]); i++)
			if (!strcmp(k, guard_kinds[i].name))
				break;
		if (i == sizeof(guard_kinds) / sizeof(guard_kinds[0]))
			return -EINVAL;
		*bits |= guard_kinds[i].bit;
	}
	return *bits ? 0 : -EINVAL;
}

const char *xvid_guard_allow_str(__u32 bits, char *buf, size_t len)
{
	size_t i, off = 0;

	buf[0] = '\0';
	for (i = 0; i < sizeof(guard_kinds) / sizeof(guard_kinds[0]); i++)
		if ((bits & guard_kinds[i].bit) && off < len)
			off += snprintf(buf + off, len - off, "%s%s", off ? "," : "",
					guard_kinds[i].name);
	if (!off)
		snprintf(buf, len, "none");
	return buf;
}

/*
 * What may end a rule, from @tok[@i] on, each at most once, in any order:
 * "guard-allow KINDS" and "ext".  0 when there is none (@i == @n) or they
 * parsed; -EBADMSG for a guard-allow and -ENOTSUP for an ext the reader
 * should be told about (bad kind, on a deny rule), -EINVAL otherwise.
 */
static int parse_rule_tail(struct xvid_rule *r, char **tok, int i, int n)
{
	bool guard = false;

	while (i < n) {
		if (!strcmp(tok[i], "ext")) {
			if (!r->allow || r->ext)
				return -ENOTSUP;
			r->ext = true;
			i++;
			continue;
		}
		if (strcmp(tok[i], "guard-allow") || guard)
			return -EINVAL;
		if (i + 1 == n || !r->allow || parse_guard_allow(tok[i + 1], &r->guard_allow))
			return -EBADMSG;
		guard = true;
		i += 2;
	}
	return 0;
}

static const char *parse_error_str(int err)
{
	switch (err) {
	case -ENOENT:
		return "no such user or group";
	case -EBADMSG:
		return "guard-allow goes on allow rules and takes group, ip-options, "
		       "net-control, control-ports (comma-separated) or all";
	case -ENOTSUP:
		return "ext goes once on allow rules: it lets the endpoints they allow load "
		       "handlers";
	case -ERANGE:
		return "unknown limit: endpoints-per-uid, connections-per-uid, opens-per-second, "
		       "segment-bytes, pending-connections, total-opens-per-second, "
		       "ext-handlers-per-uid, ext-insns or ext-map-bytes";
	case -E2BIG:
		return "too many words";
	}
	return "syntax";
}

/* One line, already stripped of comments; 0 for a rule, 1 for blank/limit. */
static int parse_line(struct xvid_policy *p, char *line, struct xvid_rule *r)
{
	char *tok[9], *save = NULL, *t;
	int n = 0;

	for (t = strtok_r(line, " \t\r\n", &save); t && n < 9; t = strtok_r(NULL, " \t\r\n", &save))
		tok[n++] = t;
	if (t)
		return -E2BIG;
	if (!n)
		return 1;
	if (!strcmp(tok[0], "limit")) {
		__u32 v;

		if (n != 3 || parse_u32(tok[2], &v))
			return -EINVAL;
		/* clamped: the daemon compares these with int counts */
		if (!strcmp(tok[1], "endpoints-per-uid"))
			p->max_per_uid = clamp_u32(v, 0, XVI_MAX_ENDPOINTS);
		else if (!strcmp(tok[1], "connections-per-uid"))
			p->max_conns_per_uid = clamp_u32(v, 1, XVID_MAX_CONNS);
		else if (!strcmp(tok[1], "opens-per-second"))
			p->opens_per_sec = clamp_u32(v, 1, MAX_OPENS_PER_SEC);
		else if (!strcmp(tok[1], "segment-bytes"))
			p->max_segment = v;
		else if (!strcmp(tok[1], "pending-connections"))
			p->max_pending = clamp_u32(v, 1, XVID_MAX_CONNS);
		else if (!strcmp(tok[1], "total-opens-per-second"))
			p->total_opens_per_sec = clamp_u32(v, 1, MAX_OPENS_PER_SEC);
		else if (!strcmp(tok[1], "ext-handlers-per-uid"))
			p->ext_handlers_per_uid = clamp_u32(v, 0, XVI_MAX_ENDPOINTS * 16);
		else if (!strcmp(tok[1], "ext-insns"))
			p->ext_insns = clamp_u32(v, 1, MAX_EXT_INSNS);
		else if (!strcmp(tok[1], "ext-map-bytes"))
			p->ext_map_bytes = v;
		else
			return -ERANGE;
		return 1;
	}
	memset(r, 0, sizeof(*r));
	if (!strcmp(tok[0], "allow"))
		r->allow = true;
	else if (strcmp(tok[0], "deny"))
		return -EINVAL;
	if (n < 4 || parse_who(tok[1], r))
		return -EINVAL;
	if (!strcmp(tok[2], "udp")) {
		r->what = WHAT_UDP;
		if (!strcmp(tok[3], "default")) {
			r->ports_default = true;
			r->lo = DEFAULT_PORTS_LO;
			r->hi = DEFAULT_PORTS_HI;
		} else if (parse_range(tok[3], &r->lo, &r->hi, false) || r->hi > 65535 || !r->lo) {
			return -EINVAL;
		}
		r->addr = ADDR_IFACE;
		if (n < 6 || strcmp(tok[4], "addr"))
			return parse_rule_tail(r, tok, 4, n);
		if (!strcmp(tok[5], "iface"))
			r->addr = ADDR_IFACE;
		else if (!strcmp(tok[5], "any"))
			r->addr = ADDR_ANY;
		else if (inet_pton(AF_INET, tok[5], r->ip) == 1)
			r->addr = ADDR_IP, r->family = AF_INET;
		else if (inet_pton(AF_INET6, tok[5], r->ip) == 1)
			r->addr = ADDR_IP, r->family = AF_INET6;
		else
			return -EINVAL;
		return parse_rule_tail(r, tok, 6, n);
	}
	if (!strcmp(tok[2], "raw")) {
		r->what = WHAT_RAW;
		if (parse_range(tok[3], &r->lo, &r->hi, true) || !r->lo)
			return -EINVAL;
		return parse_rule_tail(r, tok, 4, n);
	}
	return -EINVAL;
}

static void set_text(struct xvid_rule *r, const char *line)
{
	size_t n;

	snprintf(r->text, sizeof(r->text), "%.*s", (int)sizeof(r->text) - 1, line);
	n = strcspn(r->text, "#\r\n");
	r->text[n] = '\0';
	while (n && isspace((unsigned char)r->text[n - 1]))
		r->text[--n] = '\0';
}

/*
 * The built-in policy: members of @group (a name, or a gid in decimal)
 * may open UDP endpoints on the default ports; nobody else anything.
 */
static void load_builtin(struct xvid_policy *p, const char *group)
{
	struct xvid_rule *r = &p->rules[0];
	struct group *gr = getgrnam(group);
	__u32 gid;

	snprintf(p->group, sizeof(p->group), "%s", group);
	if (!gr && parse_u32(group, &gid)) {
		log_warn("built-in policy: there is no group '%s': every request will be refused; "
			 "create it (groupadd --system %s) and add the users who may open "
			 "protected endpoints, or write %s\n", group, group, XVID_DEFAULT_POLICY);
		return;
	}
	memset(r, 0, sizeof(*r));
	r->allow = true;
	r->who = WHO_GID;
	r->id = gr ? gr->gr_gid : gid;
	r->what = WHAT_UDP;
	r->ports_default = true;
	r->lo = DEFAULT_PORTS_LO;
	r->hi = DEFAULT_PORTS_HI;
	r->addr = ADDR_IFACE;
	snprintf(r->text, sizeof(r->text), "allow group:%s udp default addr iface", group);
	p->nrules = 1;
	log_info("built-in policy '%s' (gid %u)\n", r->text, r->id);
}

int xvid_policy_load(struct xvid_policy *p, const char *path, bool explicit_path,
		     const char *group)
{
	char line[512], copy[512];
	struct xvid_rule r;
	int lineno = 0, err;
	FILE *f = NULL;

	memset(p, 0, sizeof(*p));
	p->max_per_uid = DEF_MAX_PER_UID;
	p->max_conns_per_uid = DEF_CONNS_PER_UID;
	p->opens_per_sec = DEF_OPENS_PER_SEC;
	p->max_segment = DEF_MAX_SEGMENT;
	p->max_pending = DEF_PENDING;
	p->total_opens_per_sec = DEF_TOTAL_OPENS_PER_SEC;
	p->ext_handlers_per_uid = DEF_EXT_HANDLERS;
	p->ext_insns = DEF_EXT_INSNS;
	p->ext_map_bytes = DEF_EXT_MAP_BYTES;
	if (path)
		f = fopen(path, "re");
	if (!f) {
		if (path && (errno != ENOENT || explicit_path)) {
			err = -errno;
			log_warn("policy %s: %s\n", path, strerror(errno));
			return err;
		}
		if (path)
			log_info("no policy file %s\n", path);
		load_builtin(p, group);
		return 0;
	}
	snprintf(p->path, sizeof(p->path), "%s", path);
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			log_warn("%s:%d: line too long\n", path, lineno);
			fclose(f);
			return -EINVAL;
		}
		snprintf(copy, sizeof(copy), "%s", line);
		copy[strcspn(copy, "#")] = '\0';
		err = parse_line(p, copy, &r);
		if (err == 1)
			continue;
		if (err) {
			log_warn("%s:%d: cannot parse '%.*s' (%s); see xdp-vid(8) for the format\n",
				 path, lineno, (int)strcspn(line, "\r\n"), line,
				 parse_error_str(err));
			fclose(f);
			return -EINVAL;
		}
		if (p->nrules == XVID_MAX_RULES) {
			log_warn("%s: more than %d rules\n", path, XVID_MAX_RULES);
			fclose(f);
			return -E2BIG;
		}
		r.line = lineno;
		set_text(&r, line);
		p->rules[p->nrules++] = r;
	}
	fclose(f);
	log_info("policy %s: %d rule(s), per uid %u endpoints, %u connections, %u opens/s; "
		 "in all %u pending connections, %u opens/s; segments up to %llu bytes\n",
		 path, p->nrules, p->max_per_uid, p->max_conns_per_uid, p->opens_per_sec,
		 p->max_pending, p->total_opens_per_sec, (unsigned long long)p->max_segment);
	if (p->max_conns_per_uid < p->max_per_uid)
		log_warn("%s: connections-per-uid %u is below endpoints-per-uid %u: a uid can "
			 "hold only %u endpoints (one connection each)\n", path,
			 p->max_conns_per_uid, p->max_per_uid, p->max_conns_per_uid);
	return 0;
}

static bool who_matches(const struct xvid_rule *r, const struct xvid_client_id *c)
{
	int i;

	switch (r->who) {
	case WHO_ANY:
		return true;
	case WHO_UID:
		return c->uid == r->id;
	case WHO_GID:
		if (c->gid == r->id)
			return true;
		for (i = 0; i < c->ngroups; i++)
			if (c->groups[i] == r->id)
				return true;
		return false;
	}
	return false;
}

static bool what_matches(const struct xvid_rule *r, const struct xvi_tag *tag,
			 bool addr_on_iface)
{
	static const __u8 zero[16];
	__u32 v;

	if (tag->kind == XVI_TAG_RAW) {
		v = ntohl(tag->raw_tag);
		return r->what == WHAT_RAW && v >= r->lo && v <= r->hi;
	}
	if (r->what != WHAT_UDP)
		return false;
	v = ntohs(tag->port);
	if (v < r->lo || v > r->hi)
		return false;
	if (r->ports_default && default_excludes(v, NULL, 0))
		return false;
	switch (r->addr) {
	case ADDR_ANY:
		return true;
	case ADDR_IFACE:
		return addr_on_iface;
	case ADDR_IP:
		if ((r->family == AF_INET) != (tag->kind == XVI_TAG_UDP4))
			return false;
		return !memcmp(r->ip, tag->addr, r->family == AF_INET ? 4 : 16) &&
		       memcmp(tag->addr, zero, 16);
	}
	return false;
}

bool xvid_policy_admits(const struct xvid_policy *p, const struct xvid_client_id *c)
{
	int i;

	for (i = 0; i < p->nrules; i++)
		if (p->rules[i].allow && who_matches(&p->rules[i], c))
			return true;
	return false;
}

void xvid_policy_explain(const struct xvid_policy *p, const struct xvid_client_id *c,
			 const char *ifname, char *why, size_t len)
{
	if (p->path[0])
		snprintf(why, len, "uid %u may not open endpoints on %s: no rule of %s allows it "
			 "(ask the administrator)", c->uid, ifname, p->path);
	else if (!p->nrules)
		snprintf(why, len, "uid %u may not open endpoints on %s: xdp-vid allows only "
			 "members of group %s, and there is no such group: ask the administrator "
			 "to create it (groupadd --system %s) and add you, or to write %s",
			 c->uid, ifname, p->group, p->group, XVID_DEFAULT_POLICY);
	else
		snprintf(why, len, "uid %u may not open endpoints on %s: you are not in group "
			 "%s: ask the administrator to add you (usermod -aG %s USER; then log in "
			 "again), or to write %s", c->uid, ifname, p->group, p->group,
			 XVID_DEFAULT_POLICY);
}

int xvid_policy_check(const struct xvid_policy *p, const struct xvid_client_id *c,
		      const struct xvi_tag *tag, bool addr_on_iface, const char *ifname,
		      struct xvid_grant *grant, char *why, size_t len)
{
	char tagstr[80], ex[64], note[128] = "";
	const char *excl = NULL;
	int i;

	xvi_tag__format(tag, tagstr, sizeof(tagstr));
	for (i = 0; i < p->nrules; i++) {
		const struct xvid_rule *r = &p->rules[i];

		if (!who_matches(r, c) || !what_matches(r, tag, addr_on_iface))
			continue;
		if (r->allow) {
			grant->guard_allow = r->guard_allow;
			grant->ext = r->ext;
			return 0;
		}
		if (r->line)
			snprintf(why, len, "uid %u may not open %s on %s: denied by %s:%d '%s'",
				 c->uid, tagstr, ifname, p->path, r->line, r->text);
		else
			snprintf(why, len, "uid %u may not open %s on %s: denied by the built-in rule '%s'",
				 c->uid, tagstr, ifname, r->text);
		return -EPERM;
	}
	if (tag->kind != XVI_TAG_RAW)
		excl = default_excludes(ntohs(tag->port), ex, sizeof(ex));
	if (excl)
		snprintf(note, sizeof(note), " (%s: not one of the default ports)", excl);
	if (p->path[0])
		snprintf(why, len, "uid %u may not open %s on %s: no rule of %s allows it%s",
			 c->uid, tagstr, ifname, p->path, note);
	else if (!xvid_policy_admits(p, c))
		xvid_policy_explain(p, c, ifname, why, len);
	else
		snprintf(why, len, "uid %u may not open %s on %s: the built-in policy allows only "
			 "'%s'%s (the administrator can write %s)", c->uid, tagstr, ifname,
			 p->rules[0].text, note, XVID_DEFAULT_POLICY);
	return -EPERM;
}
