/* fsm.c - see fsm.h. Pure table look-ups plus one log line per move. */
#include "fsm.h"

#include "log.h"

const char *fsm_name(const struct fsm *m, unsigned s)
{
	return s < m->n ? m->names[s] : "invalid";
}

bool fsm_allowed(const struct fsm *m, unsigned from, unsigned to)
{
	return from < m->n && to < m->n && (m->allowed[from] & FSM_TO(to)) != 0;
}

void fsm_log_move(const struct fsm *m, unsigned from, unsigned to, int fd)
{
	if (fsm_allowed(m, from, to))
		log_debug("%s: fd %d: %s -> %s", m->what, fd, fsm_name(m, from), fsm_name(m, to));
	else
		log_error("%s: fd %d: unexpected state change %s -> %s", m->what, fd,
			  fsm_name(m, from), fsm_name(m, to));
}
