// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The functions underneath the interceptors: dlsym(RTLD_NEXT), resolved on
 * first use (an interceptor may run before the constructors, from another
 * library's constructor).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "preload.h"

struct xp_real xp_real;

#define RESOLVE(fn)							\
	do {								\
		void *p = dlsym(RTLD_NEXT, #fn);			\
		if (!p) {						\
			static const char m[] =				\
				"libxvi-preload: no libc " #fn ", cannot run\n"; \
			(void)!write(2, m, sizeof(m) - 1);		\
			abort();					\
		}							\
		__atomic_store_n((void **)&xp_real.fn, p, __ATOMIC_RELEASE); \
	} while (0)

void xp_real_init(void)
{
	/* Every pointer but socket first, socket last: REAL() tests its own. */
	RESOLVE(bind);
	RESOLVE(connect);
	RESOLVE(close);
	RESOLVE(dup);
	RESOLVE(dup2);
	RESOLVE(dup3);
	RESOLVE(fcntl);
	RESOLVE(ioctl);
	RESOLVE(setsockopt);
	RESOLVE(getsockopt);
	RESOLVE(getsockname);
	RESOLVE(getpeername);
	RESOLVE(send);
	RESOLVE(sendto);
	RESOLVE(sendmsg);
	RESOLVE(sendmmsg);
	RESOLVE(recv);
	RESOLVE(recvfrom);
	RESOLVE(recvmsg);
	RESOLVE(recvmmsg);
	RESOLVE(read);
	RESOLVE(write);
	RESOLVE(readv);
	RESOLVE(writev);
	RESOLVE(poll);
	RESOLVE(ppoll);
	RESOLVE(select);
	RESOLVE(pselect);
	RESOLVE(epoll_create);
	RESOLVE(epoll_create1);
	RESOLVE(epoll_ctl);
	RESOLVE(epoll_wait);
	RESOLVE(epoll_pwait);
	RESOLVE(listen);
	RESOLVE(accept4);
	RESOLVE(shutdown);
	RESOLVE(sendfile);
	RESOLVE(socket);
}
