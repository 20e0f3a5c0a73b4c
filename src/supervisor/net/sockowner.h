/* sockowner.h - who sent a logged packet: find the live socket in the
 * sandbox namespace (sock_diag), then the process holding it (/proc) and its
 * binary. Best effort by nature: a socket already closed yields "unknown". */
#ifndef OS_SUPERVISOR_SOCKOWNER_H
#define OS_SUPERVISOR_SOCKOWNER_H

#include <limits.h>
#include <sys/types.h>

#include "error.h"
#include "nflog.h"

struct sockowner;

int sockowner_open(int ns_fd, struct sockowner **out, os_error *err);
void sockowner_close(struct sockowner *o);

/* Returns 1 and fills *pid and binary[cap] when the socket that sent pkt is
 * still open in the namespace; 0 when it is gone; -1 on error. */
int sockowner_lookup(struct sockowner *o, const struct nflog_packet *pkt, pid_t *pid, char *binary,
		     size_t cap, os_error *err);

#endif
