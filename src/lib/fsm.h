/* fsm.h - a connection state machine's tables, checked in one place: the
 * states' names for logs and the moves allowed between them. The gateway's
 * and the proxy's connections use it; it never aborts on a bad move (a bug,
 * never peer input, must not take every other connection down). */
#ifndef OS_FSM_H
#define OS_FSM_H

#include <stdbool.h>

#define FSM_TO(s) (1u << (s))

struct fsm {
	const char *what; /* log prefix: "gateway", "proxy" */
	unsigned n; /* states 0 .. n-1, at most 32 */
	const char *const *names;
	const unsigned *allowed; /* allowed[from] has FSM_TO(to) for each allowed move */
};

/* The state's name, or "invalid" outside 0 .. n-1. */
const char *fsm_name(const struct fsm *m, unsigned s);
bool fsm_allowed(const struct fsm *m, unsigned from, unsigned to);
/* Logs the move from -> to of connection fd: at debug level when allowed,
 * as an error when not (the caller still makes it). */
void fsm_log_move(const struct fsm *m, unsigned from, unsigned to, int fd);

#endif
