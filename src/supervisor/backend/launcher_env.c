/* launcher_env.c - see launcher_env.h. In a normal build the launcher gets
 * PATH and nothing else; never the supervisor's own variables. */
#include "launcher_env.h"

#include <stdio.h>
#include <stdlib.h>

#define LAUNCHER_PATH "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

void launcher_env_init(struct launcher_env *e)
{
	size_t n = 0;
	e->envp[n++] = LAUNCHER_PATH;
#if defined(__SANITIZE_ADDRESS__)
	/* The launcher reports where the supervisor's own reports go, but never
	 * checks leaks at exit: starting an agent, it exits after the PID
	 * namespace it unshared lost its init, where LeakSanitizer cannot clone
	 * its tracer (ENOMEM, a failed exit); joining a running sandbox for an
	 * exec, the tracer never gets hold of it and the exit hangs. */
	const char *asan = getenv("ASAN_OPTIONS"), *ubsan = getenv("UBSAN_OPTIONS");
	int len = snprintf(e->asan, sizeof(e->asan), "ASAN_OPTIONS=%s%sdetect_leaks=0",
			   asan ? asan : "", asan && *asan ? ":" : "");
	e->envp[n++] =
		len > 0 && (size_t)len < sizeof(e->asan) ? e->asan : "ASAN_OPTIONS=detect_leaks=0";
	len = ubsan ? snprintf(e->ubsan, sizeof(e->ubsan), "UBSAN_OPTIONS=%s", ubsan) : -1;
	if (len > 0 && (size_t)len < sizeof(e->ubsan))
		e->envp[n++] = e->ubsan;
#endif
	e->envp[n] = NULL;
}
