// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xdp-vid: extension handlers for protected endpoints (docs/EXTENSIONS.md,
 * "Loading through xdp-vid").
 *
 * Two jobs:
 *  - loading an owner's handler object without lending it the daemon's
 *    powers: a child process with no fd of the daemon's (but the return
 *    map it must share), with CAP_BPF, CAP_NET_ADMIN and CAP_PERFMON only,
 *    checks the object's maps and, once loaded, every instruction of the
 *    program against the helpers a handler may call.  CAP_PERFMON because
 *    without it the verifier refuses a packet pointer plus a variable
 *    offset (its Spectre v1 sanitation knows only stack and map values),
 *    which every handler built on xvi_ext_msg() does (docs/KERNEL.md,
 *    fact 35); what it lets through besides (kernel reads by helper) the
 *    helper check refuses, what it does not (addresses written into a
 *    frame) docs/SECURITY.md states;
 *  - the endpoint's two generations of handlers in xvi_client's tables
 *    (bpf/xvi_client.bpf.c): a change is written into the generation not
 *    in use, made live by one update of xvi_client_gen, and the old one is
 *    emptied once no CPU can still be running it.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/capability.h>
#include <linux/membarrier.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "broker/broker.h"
#include "xvi_ext.h"
#include "xvid.h"

/* An object file larger than this is refused before it is read. */
#define EXT_OBJ_MAX		(4 << 20)
/* The child's verifier run is bounded by the kernel; this bounds the rest. */
#define EXT_CHILD_TIMEOUT_MS	30000

/*
 * Helpers a handler may call: its own maps, the frame, time, randomness,
 * checksums, loops.  Not bpf_redirect or bpf_redirect_map (a frame out of
 * another interface would skip the guard), nothing that reads the kernel,
 * sockets, routes or prints.
 */
static const int allowed_helpers[] = {
	BPF_FUNC_map_lookup_elem, BPF_FUNC_map_update_elem, BPF_FUNC_map_delete_elem,
	BPF_FUNC_map_push_elem, BPF_FUNC_map_pop_elem, BPF_FUNC_map_peek_elem,
	BPF_FUNC_ktime_get_ns, BPF_FUNC_ktime_get_boot_ns, BPF_FUNC_ktime_get_coarse_ns,
	BPF_FUNC_get_prandom_u32, BPF_FUNC_get_smp_processor_id, BPF_FUNC_tail_call,
	BPF_FUNC_csum_diff, BPF_FUNC_xdp_adjust_head, BPF_FUNC_xdp_adjust_meta,
	BPF_FUNC_xdp_adjust_tail, BPF_FUNC_xdp_get_buff_len, BPF_FUNC_xdp_load_bytes,
	BPF_FUNC_xdp_store_bytes, BPF_FUNC_spin_lock, BPF_FUNC_spin_unlock,
	BPF_FUNC_ringbuf_output, BPF_FUNC_ringbuf_reserve, BPF_FUNC_ringbuf_submit,
	BPF_FUNC_ringbuf_discard, BPF_FUNC_ringbuf_query, BPF_FUNC_for_each_map_elem,
	BPF_FUNC_loop,
};

/* Maps a handler may have: plain data.  No device, socket, CPU or program maps. */
static bool map_type_allowed(enum bpf_map_type t)
{
	switch (t) {
	case BPF_MAP_TYPE_ARRAY:
	case BPF_MAP_TYPE_PERCPU_ARRAY:
	case BPF_MAP_TYPE_HASH:
	case BPF_MAP_TYPE_PERCPU_HASH:
	case BPF_MAP_TYPE_LRU_HASH:
	case BPF_MAP_TYPE_LRU_PERCPU_HASH:
	case BPF_MAP_TYPE_QUEUE:
	case BPF_MAP_TYPE_STACK:
	case BPF_MAP_TYPE_RINGBUF:
		return true;
	default:
		return false;
	}
}

static bool helper_allowed(int id)
{
	size_t i;

	for (i = 0; i < sizeof(allowed_helpers) / sizeof(allowed_helpers[0]); i++)
		if (allowed_helpers[i] == id)
			return true;
	return false;
}

/* The child's answer; the program's fd rides along (SCM_RIGHTS). */
struct ext_answer {
	int err;
	__u32 prog_id;
	__u32 log_len;		/* the next message */
	char why[200];
};

static int silent(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return 0;
}

/* CAP_BPF, CAP_NET_ADMIN and CAP_PERFMON, effective and permitted; nothing else. */
static int drop_caps(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct c[2];

	memset(c, 0, sizeof(c));
	c[CAP_TO_INDEX(CAP_PERFMON)].effective |= CAP_TO_MASK(CAP_PERFMON);
	c[CAP_TO_INDEX(CAP_PERFMON)].permitted |= CAP_TO_MASK(CAP_PERFMON);
	c[CAP_TO_INDEX(CAP_BPF)].effective |= CAP_TO_MASK(CAP_BPF);
	c[CAP_TO_INDEX(CAP_BPF)].permitted |= CAP_TO_MASK(CAP_BPF);
	c[CAP_TO_INDEX(CAP_NET_ADMIN)].effective |= CAP_TO_MASK(CAP_NET_ADMIN);
	c[CAP_TO_INDEX(CAP_NET_ADMIN)].permitted |= CAP_TO_MASK(CAP_NET_ADMIN);
	return syscall(SYS_capset, &h, c) ? -errno : 0;
}

static __u64 map_bytes(const struct bpf_map *m)
{
	__u64 n = bpf_map__max_entries(m);
	int cpus;

	if (bpf_map__type(m) == BPF_MAP_TYPE_RINGBUF)
		return n;
	n *= (__u64)bpf_map__key_size(m) + bpf_map__value_size(m);
	switch (bpf_map__type(m)) {
	case BPF_MAP_TYPE_PERCPU_ARRAY:
	case BPF_MAP_TYPE_PERCPU_HASH:
	case BPF_MAP_TYPE_LRU_PERCPU_HASH:
		cpus = libbpf_num_possible_cpus();
		n *= cpus > 0 ? cpus : 1;
		break;
	default:
		break;
	}
	return n;
}

/* The object's maps: allowed types, within the limit.  0 or -EPERM/-EDQUOT. */
static int check_maps(struct bpf_object *obj, const struct xvid_ext_limits *lim,
		      struct ext_answer *a)
{
	__u64 total = 0;
	struct bpf_map *m;

	bpf_object__for_each_map(m, obj) {
		if (!strcmp(bpf_map__name(m), XVI_EXT_RET_MAP))
			continue;	/* the endpoint's own, not the object's */
		if (!map_type_allowed(bpf_map__type(m))) {
			snprintf(a->why, sizeof(a->why), "map %s: a handler may have array, hash, "
				 "LRU, queue, stack and ring buffer maps only", bpf_map__name(m));
			return -EPERM;
		}
		total += map_bytes(m);
	}
	if (total > lim->map_bytes) {
		snprintf(a->why, sizeof(a->why), "the handler's maps take %llu bytes, above the "
			 "%llu of policy limit ext-map-bytes", (unsigned long long)total,
			 (unsigned long long)lim->map_bytes);
		return -EDQUOT;
	}
	return 0;
}

/*
 * The program as the kernel got it (subprograms appended, relocated): its
 * size, and every call a helper of allowed_helpers, no kfunc, no kernel
 * variable.
 */
static int check_insns(const struct bpf_program *p, const struct xvid_ext_limits *lim,
		       struct ext_answer *a)
{
	const struct bpf_insn *in = bpf_program__insns(p);
	size_t n = bpf_program__insn_cnt(p), i;

	if (n > lim->insns) {
		snprintf(a->why, sizeof(a->why), "the handler has %zu instructions, above the "
			 "%u of policy limit ext-insns", n, lim->insns);
		return -E2BIG;
	}
	for (i = 0; i < n; i++) {
		if (in[i].code == (BPF_LD | BPF_IMM | BPF_DW)) {
			if (in[i].src_reg == BPF_PSEUDO_BTF_ID) {
				snprintf(a->why, sizeof(a->why), "instruction %zu: a handler may "
					 "not reach kernel variables", i);
				return -EPERM;
			}
			i++;
			continue;
		}
		if (in[i].code != (BPF_JMP | BPF_CALL) || in[i].src_reg == BPF_PSEUDO_CALL)
			continue;
		if (in[i].src_reg != 0 || !helper_allowed(in[i].imm)) {
			snprintf(a->why, sizeof(a->why), "instruction %zu calls %s %d, which a "
				 "handler may not (docs/EXTENSIONS.md lists the helpers it may)",
				 i, in[i].src_reg ? "kernel function" : "helper", in[i].imm);
			return -EPERM;
		}
	}
	return 0;
}

/* Pick @name (or the only program) in @obj. */
static struct bpf_program *pick(struct bpf_object *obj, const char *name, struct ext_answer *a)
{
	struct bpf_program *p, *found = NULL;
	int n = 0;

	bpf_object__for_each_program(p, obj) {
		n++;
		if (*name ? !strcmp(bpf_program__name(p), name) : !found)
			found = p;
	}
	if (*name && !found)
		snprintf(a->why, sizeof(a->why), "no program '%s' in the object", name);
	else if (!*name && n != 1) {
		snprintf(a->why, sizeof(a->why), "%d programs in the object: name the handler "
			 "(--prog NAME)", n);
		found = NULL;
	}
	return found;
}

/* In the child: fd 3 the endpoint's xvi_ext_ret, the answer to @sk. */
static int child_load(const void *buf, size_t size, const char *name,
		      const struct xvid_ext_limits *lim, struct ext_answer *a, char *log,
		      size_t log_size, int *prog_fd)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .object_name = "handler");
	struct bpf_prog_info info = {};
	__u32 ilen = sizeof(info);
	struct bpf_object *obj;
	struct bpf_program *p, *prog;
	struct bpf_map *m;
	int err;

	/*
	 * xvi_client's tables take single-buffer programs only, and libbpf
	 * (1.1) adds BPF_F_XDP_HAS_FRAGS for a program in "xdp.frags" (the
	 * section XVI_EXT_HANDLER gives) at load, whatever its flags say: a
	 * handler of our own for the section, registered in this child only,
	 * leaves the flag out.
	 */
	if (libbpf_register_prog_handler("xdp.frags", BPF_PROG_TYPE_XDP, BPF_XDP, NULL) < 0) {
		snprintf(a->why, sizeof(a->why), "cannot register the handler section");
		return -EINVAL;
	}
	obj = bpf_object__open_mem(buf, size, &oo);
	if (!obj) {
		snprintf(a->why, sizeof(a->why), "not a BPF object libbpf can open: %s",
			 strerror(errno));
		return -ENOEXEC;
	}
	prog = pick(obj, name, a);
	if (!prog) {
		err = -ENOENT;
		goto out;
	}
	bpf_object__for_each_program(p, obj)
		bpf_program__set_autoload(p, p == prog);
	/* xvi_client is a single-buffer XDP program: its tables take only those. */
	bpf_program__set_type(prog, BPF_PROG_TYPE_XDP);
	bpf_program__set_expected_attach_type(prog, BPF_XDP);
	bpf_program__set_flags(prog, bpf_program__flags(prog) & ~BPF_F_XDP_HAS_FRAGS);
	bpf_program__set_log_buf(prog, log, log_size);
	m = bpf_object__find_map_by_name(obj, XVI_EXT_RET_MAP);
	if (m && bpf_map__reuse_fd(m, 3)) {
		snprintf(a->why, sizeof(a->why), "its map %s is not the one of include/xvi_ext.h",
			 XVI_EXT_RET_MAP);
		err = -EINVAL;
		goto out;
	}
	/* Before loading what can be told (the entry's own instructions)... */
	err = check_maps(obj, lim, a);
	if (!err)
		err = check_insns(prog, lim, a);
	if (err)
		goto out;
	err = bpf_object__load(obj);
	if (err) {
		snprintf(a->why, sizeof(a->why), "the kernel refused the handler %s: %s (the "
			 "verifier's log follows)", bpf_program__name(prog), strerror(-err));
		goto out;
	}
	/* ... and after, the program whole, as the kernel took it. */
	err = check_insns(prog, lim, a);
	if (err)
		goto out;
	*prog_fd = dup(bpf_program__fd(prog));
	if (*prog_fd < 0 || bpf_obj_get_info_by_fd(*prog_fd, &info, &ilen)) {
		err = -errno;
		snprintf(a->why, sizeof(a->why), "cannot keep the handler: %s", strerror(-err));
		goto out;
	}
	a->prog_id = info.id;
out:
	bpf_object__close(obj);
	return err;
}

static void send_or_exit(int sk, const void *p, size_t n, int fd)
{
	if (xvi_broker__send_fd(sk, p, n, fd, 0) < 0)
		_exit(2);
}

static void __attribute__((noreturn)) child(int sk, int ret_fd, const void *buf, size_t size,
					    const char *name, const struct xvid_ext_limits *lim)
{
	static char log[XVI_BROKER_EXT_LOG_MAX];
	struct ext_answer a = {};
	int r, s, prog_fd = -1;

	/* Only fds 3 (the return map) and 4 (the answer) survive. */
	r = fcntl(ret_fd, F_DUPFD, 10);
	s = fcntl(sk, F_DUPFD, 10);
	if (r < 0 || s < 0 || dup2(r, 3) != 3 || dup2(s, 4) != 4 ||
	    syscall(SYS_close_range, 5, ~0U, 0))
		_exit(2);
	signal(SIGPIPE, SIG_IGN);
	libbpf_set_print(silent);
	a.err = drop_caps();
	if (a.err)
		snprintf(a.why, sizeof(a.why), "cannot drop capabilities: %s", strerror(-a.err));
	else
		a.err = child_load(buf, size, name, lim, &a, log, sizeof(log), &prog_fd);
	log[sizeof(log) - 1] = '\0';
	a.log_len = a.err && log[0] ? strlen(log) : 0;
	send_or_exit(4, &a, sizeof(a), a.err ? -1 : prog_fd);
	if (a.log_len)
		send_or_exit(4, log, a.log_len, -1);
	_exit(0);
}

/* The object @obj_fd names, read whole: a regular file, bounded. */
static void *read_object(int obj_fd, size_t *size, char *why, size_t len)
{
	struct stat st;
	size_t got = 0;
	ssize_t n;
	void *buf;

	if (fstat(obj_fd, &st) || !S_ISREG(st.st_mode)) {
		snprintf(why, len, "the handler object must be passed as a regular file");
		return NULL;
	}
	if (st.st_size <= 0 || st.st_size > EXT_OBJ_MAX) {
		snprintf(why, len, "the handler object has %lld bytes: at most %d",
			 (long long)st.st_size, EXT_OBJ_MAX);
		return NULL;
	}
	buf = malloc(st.st_size);
	if (!buf) {
		snprintf(why, len, "out of memory");
		return NULL;
	}
	while (got < (size_t)st.st_size) {
		n = pread(obj_fd, (char *)buf + got, st.st_size - got, got);
		if (n <= 0)
			break;
		got += n;
	}
	if (got != (size_t)st.st_size) {
		free(buf);
		snprintf(why, len, "cannot read the handler object");
		return NULL;
	}
	*size = got;
	return buf;
}

/* The child's next message, waited for (bounded). */
static ssize_t recv_fd(int sk, void *p, size_t n, int *fd)
{
	struct pollfd pfd = { .fd = sk, .events = POLLIN };

	if (fd)
		*fd = -1;
	if (poll(&pfd, 1, EXT_CHILD_TIMEOUT_MS) != 1)
		return -1;
	return xvi_broker__recv_fd(sk, p, n, fd, 0, NULL);
}

int xvid_ext_load(int obj_fd, const char *prog, int ret_fd, const struct xvid_ext_limits *lim,
		  __u32 *prog_id, char *log, size_t log_size, char *why, size_t len)
{
	struct ext_answer a = {};
	int sk[2], fd = -1, status;
	size_t size = 0;
	ssize_t n;
	void *buf;
	pid_t pid;

	if (log_size)
		log[0] = '\0';
	buf = read_object(obj_fd, &size, why, len);
	if (!buf)
		return -EINVAL;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sk)) {
		free(buf);
		snprintf(why, len, "socketpair: %s", strerror(errno));
		return -errno;
	}
	pid = fork();
	if (pid == 0)
		child(sk[1], ret_fd, buf, size, prog, lim);
	free(buf);
	close(sk[1]);
	if (pid < 0) {
		close(sk[0]);
		snprintf(why, len, "fork: %s", strerror(errno));
		return -EAGAIN;
	}
	n = recv_fd(sk[0], &a, sizeof(a), &fd);
	if (n != sizeof(a)) {
		kill(pid, SIGKILL);
		a.err = -EIO;
		snprintf(a.why, sizeof(a.why), "the handler loader failed");
	} else if (a.log_len && log_size > 1) {
		n = recv_fd(sk[0], log, log_size - 1, NULL);
		log[n > 0 ? n : 0] = '\0';
	}
	close(sk[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	a.why[sizeof(a.why) - 1] = '\0';
	if (!a.err && fd < 0) {
		a.err = -EIO;
		snprintf(a.why, sizeof(a.why), "the handler loader sent no program");
	}
	if (a.err) {
		if (fd >= 0)
			close(fd);
		snprintf(why, len, "%s", a.why);
		return a.err;
	}
	*prog_id = a.prog_id;
	return fd;
}

/* ---- generations ---------------------------------------------------------- */

/*
 * Wait until every XDP run that may have read the old generation is over:
 * MEMBARRIER_CMD_GLOBAL waits for an RCU grace period (synchronize_rcu),
 * and an XDP program runs from start to end, tail calls included, inside
 * one RCU read-side section (docs/KERNEL.md, fact 34).
 */
static int grace_period(void)
{
	return syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) ? -errno : 0;
}

int xvid_ext_swap(struct xvid_ext_tab *t, __u32 index, int prog_fd, char *why, size_t len)
{
	__u32 cur = t->gen, nxt = cur ^ 1, h, key, id, zero = 0;
	int fd, err = 0;
	__u16 mask = 0;

	/* Left over only if a grace period could not be waited for. */
	for (h = 0; h < XVI_EXT_MAX_HANDLERS; h++) {
		key = nxt * XVI_EXT_MAX_HANDLERS + h;
		bpf_map_delete_elem(t->ext_fd, &key);
	}
	for (h = 0; h < XVI_EXT_MAX_HANDLERS && !err; h++) {
		key = nxt * XVI_EXT_MAX_HANDLERS + h;
		if (h == index) {
			fd = prog_fd;
		} else {
			__u32 ckey = cur * XVI_EXT_MAX_HANDLERS + h;

			if (bpf_map_lookup_elem(t->ext_fd, &ckey, &id))
				continue;
			fd = bpf_prog_get_fd_by_id(id);
			if (fd < 0) {
				err = -errno;
				break;
			}
		}
		if (fd >= 0) {
			if (bpf_map_update_elem(t->ext_fd, &key, &fd, 0))
				err = -errno;
			else
				mask |= 1u << h;
		}
		if (fd >= 0 && fd != prog_fd)
			close(fd);
	}
	/* The flip: the whole new generation goes live in one update. */
	if (!err && bpf_map_update_elem(t->gen_fd, &zero, &nxt, 0))
		err = -errno;
	if (err) {
		for (h = 0; h < XVI_EXT_MAX_HANDLERS; h++) {
			key = nxt * XVI_EXT_MAX_HANDLERS + h;
			bpf_map_delete_elem(t->ext_fd, &key);
		}
		snprintf(why, len, "cannot install the handlers: %s", strerror(-err));
		return err;
	}
	t->gen = nxt;
	t->mask = mask;
	/* The old generation goes once nothing can run it (else at the next swap). */
	err = grace_period();
	if (err) {
		log_warn("membarrier: %s: the previous handlers stay until the next change\n",
			 strerror(-err));
		return 0;
	}
	for (h = 0; h < XVI_EXT_MAX_HANDLERS; h++) {
		key = cur * XVI_EXT_MAX_HANDLERS + h;
		bpf_map_delete_elem(t->ext_fd, &key);
	}
	return 0;
}

/* ---- counters ------------------------------------------------------------- */

/* Per CPU values of one xvi_cext_stats element; NULL when out of memory. */
static struct xvi_ext_counters *percpu_buf(int *ncpu)
{
	*ncpu = libbpf_num_possible_cpus();
	if (*ncpu <= 0)
		return NULL;
	return calloc(*ncpu, sizeof(struct xvi_ext_counters));
}

void xvid_ext_zero(struct xvid_ext_tab *t, __u32 index)
{
	struct xvi_ext_counters *v;
	int ncpu;

	v = percpu_buf(&ncpu);
	if (!v)
		return;
	if (bpf_map_update_elem(t->stats_fd, &index, v, 0))
		log_warn("zeroing the counters of handler %u: %s\n", index, strerror(errno));
	free(v);
}

int xvid_ext_read(struct xvid_ext_tab *t, __u32 index, __u32 *prog_id,
		  struct xvi_ext_counters *c)
{
	__u32 key = t->gen * XVI_EXT_MAX_HANDLERS + index;
	struct xvi_ext_counters *v;
	int ncpu, i, a, err = 0;

	memset(c, 0, sizeof(*c));
	if (bpf_map_lookup_elem(t->ext_fd, &key, prog_id))
		return -errno;
	v = percpu_buf(&ncpu);
	if (!v)
		return -ENOMEM;
	if (bpf_map_lookup_elem(t->stats_fd, &index, v)) {
		err = -errno;
	} else {
		for (i = 0; i < ncpu; i++) {
			c->runs += v[i].runs;
			for (a = 0; a < XVI_EXT_ACT_NR; a++)
				c->act[a] += v[i].act[a];
		}
	}
	free(v);
	return err;
}
