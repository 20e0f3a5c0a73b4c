/* proctitle.h - what `ps` shows for a forked helper that does not exec (the
 * local driver's per-sandbox monitors): its command line rewritten in place
 * over the program's own argv area, and its thread name. Never writes past
 * the area the kernel gave argv. */
#ifndef OS_PROCTITLE_H
#define OS_PROCTITLE_H

/* Remembers argv's area; main() calls it once, before anything forks. */
void proctitle_init(int argc, char **argv);
/* The command line becomes title (cut to the area), the thread name comm
 * (at most 15 bytes: /proc/PID/comm). Without proctitle_init, only comm. */
void proctitle_set(const char *title, const char *comm);

#endif
