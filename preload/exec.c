// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * exec: the closes the reapers still have (reap.c) finish first.
 *
 * An exec ends the reaper threads wherever they are, and the process keeps
 * its pid and start time: a slot whose close had not begun stays claimed
 * "by this process", and the next program's bind of that port fails with
 * EADDRINUSE until the process exits.  Every exec function is wrapped,
 * since glibc's execv, execvp and execl* reach execve inside libc, where
 * no interposer sees them.
 */
#include <errno.h>
#include <stdarg.h>
#include <unistd.h>
#include "preload.h"
#include "reap.h"

/* execl* take their arguments inline; more than this many is E2BIG. */
#define EXECL_MAX_ARGS 4096

XP_API int execve(const char *path, char *const argv[], char *const envp[])
{
	xp_reap_wait(NULL);
	return XP_NEXT(execve)(path, argv, envp);
}

XP_API int execv(const char *path, char *const argv[])
{
	xp_reap_wait(NULL);
	return XP_NEXT(execv)(path, argv);
}

XP_API int execvp(const char *file, char *const argv[])
{
	xp_reap_wait(NULL);
	return XP_NEXT(execvp)(file, argv);
}

XP_API int execvpe(const char *file, char *const argv[], char *const envp[])
{
	xp_reap_wait(NULL);
	return XP_NEXT(execvpe)(file, argv, envp);
}

XP_API int fexecve(int fd, char *const argv[], char *const envp[])
{
	xp_reap_wait(NULL);
	return XP_NEXT(fexecve)(fd, argv, envp);
}

/* The inline arguments from @arg0 on into @argv, NULL-terminated; E2BIG past the room. */
static int collect(const char *arg0, va_list ap, char **argv)
{
	int n = 0;

	argv[n++] = (char *)arg0;
	while (argv[n - 1]) {
		if (n == EXECL_MAX_ARGS) {
			errno = E2BIG;
			return -1;
		}
		argv[n++] = va_arg(ap, char *);
	}
	return n;
}

/* execl and execlp: the inline arguments, then @fn (execv or execvp). */
static int exec_inline(int (*fn)(const char *, char *const[]), const char *name,
		       const char *arg0, va_list ap)
{
	char *argv[EXECL_MAX_ARGS];

	return collect(arg0, ap, argv) < 0 ? -1 : fn(name, argv);
}

XP_API int execl(const char *path, const char *arg, ...)
{
	va_list ap;
	int r;

	va_start(ap, arg);
	r = exec_inline(execv, path, arg, ap);
	va_end(ap);
	return r;
}

XP_API int execlp(const char *file, const char *arg, ...)
{
	va_list ap;
	int r;

	va_start(ap, arg);
	r = exec_inline(execvp, file, arg, ap);
	va_end(ap);
	return r;
}

/* After the NULL that ends the arguments: the environment. */
XP_API int execle(const char *path, const char *arg, ...)
{
	char *argv[EXECL_MAX_ARGS], **envp = NULL;
	va_list ap;
	int n;

	va_start(ap, arg);
	n = collect(arg, ap, argv);
	if (n >= 0)
		envp = va_arg(ap, char **);
	va_end(ap);
	return n < 0 ? -1 : execve(path, argv, envp);
}
