/* sockdiag.c - exact sock_diag lookups (see sockdiag.h). One request, one
 * answer: the kernel's inet_diag "find one" path probes its socket hash for
 * the 4-tuple instead of dumping the table. The answer is checked against
 * the tuple asked for, since that path falls back to a listening socket on
 * the local port when no connection matches: a listener is not the caller. */
#include "sockdiag.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#define SOCKDIAG_RECV_BUF 8192
/* An answer is one message; a kernel that does not answer in this long is
 * a failed lookup (deny), not a proxy stuck forever. */
#define SOCKDIAG_TIMEOUT_MS 1000

struct sockdiag {
	int fd;
	uint32_t seq;
};

struct opener {
	int ns_fd, fd, saved_errno;
	const char *step;
};

static int open_netlink(void)
{
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0)
		return -1;
	struct timeval tv = { SOCKDIAG_TIMEOUT_MS / 1000, (SOCKDIAG_TIMEOUT_MS % 1000) * 1000 };
	struct sockaddr_nl self = { .nl_family = AF_NETLINK };
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0 ||
	    bind(fd, (struct sockaddr *)&self, sizeof self) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* The helper thread: joins the namespace (its own, not the process's:
 * setns acts on the calling thread) and creates the socket there. */
static void *open_in_netns(void *arg)
{
	struct opener *o = arg;
	if (setns(o->ns_fd, CLONE_NEWNET) < 0) {
		o->step = "joining the network namespace";
		o->saved_errno = errno;
		return NULL;
	}
	o->fd = open_netlink();
	if (o->fd < 0) {
		o->step = "opening a NETLINK_SOCK_DIAG socket";
		o->saved_errno = errno;
	}
	return NULL;
}

int sockdiag_open(int ns_fd, struct sockdiag **out, os_error *err)
{
	struct opener o = { .ns_fd = ns_fd, .fd = -1 };
	if (ns_fd < 0) {
		if ((o.fd = open_netlink()) < 0)
			return os_error_errno(err, "sock_diag: opening a NETLINK_SOCK_DIAG socket");
	} else {
		pthread_t t;
		int rc = pthread_create(&t, NULL, open_in_netns, &o);
		if (rc != 0)
			return os_error_set(err, rc, "sock_diag: starting the helper thread: %s",
					    strerror(rc));
		pthread_join(t, NULL);
		if (o.fd < 0)
			return os_error_set(err, o.saved_errno, "sock_diag: %s: %s", o.step,
					    strerror(o.saved_errno));
	}
	struct sockdiag *d = calloc(1, sizeof *d);
	if (!d) {
		close(o.fd);
		return os_error_set(err, ENOMEM, "sock_diag: out of memory");
	}
	d->fd = o.fd;
	*out = d;
	return 0;
}

void sockdiag_close(struct sockdiag *d)
{
	if (!d)
		return;
	close(d->fd);
	free(d);
}

/* An address as 16 bytes, IPv4 in its v4-mapped form, and its port, so a
 * v4 question and a v6 socket's answer compare as the kernel matched them. */
struct mapped {
	uint8_t a[16];
	uint16_t port; /* network order */
};

static int to_mapped(const struct sockaddr *sa, struct mapped *m)
{
	memset(m, 0, sizeof *m);
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;
		m->a[10] = m->a[11] = 0xff;
		memcpy(m->a + 12, &in->sin_addr, 4);
		m->port = in->sin_port;
		return 0;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;
		memcpy(m->a, &in6->sin6_addr, 16);
		m->port = in6->sin6_port;
		return 0;
	}
	return -1;
}

static bool is_v4_mapped(const uint8_t a[16])
{
	static const uint8_t prefix[12] = { [10] = 0xff, [11] = 0xff };
	return memcmp(a, prefix, sizeof prefix) == 0;
}

/* The diag id fields of family fam, from a mapped address. */
static void diag_addr(int fam, const struct mapped *m, __be32 out[4])
{
	memset(out, 0, 4 * sizeof *out);
	if (fam == AF_INET)
		memcpy(out, m->a + 12, 4);
	else
		memcpy(out, m->a, 16);
}

static void answer_addr(const struct inet_diag_msg *msg, const __be32 in[4], uint8_t out[16])
{
	if (msg->idiag_family == AF_INET) {
		memset(out, 0, 16);
		out[10] = out[11] = 0xff;
		memcpy(out + 12, in, 4);
	} else {
		memcpy(out, in, 16);
	}
}

/* The answer names the very connection asked for (not a listener). */
static bool answer_matches(const struct inet_diag_msg *msg, const struct mapped *src,
			   const struct mapped *dst)
{
	uint8_t s[16], d[16];
	if (msg->idiag_family != AF_INET && msg->idiag_family != AF_INET6)
		return false;
	answer_addr(msg, msg->id.idiag_src, s);
	answer_addr(msg, msg->id.idiag_dst, d);
	return msg->idiag_state != TCP_LISTEN && msg->id.idiag_sport == src->port &&
	       msg->id.idiag_dport == dst->port && memcmp(s, src->a, 16) == 0 &&
	       memcmp(d, dst->a, 16) == 0;
}

struct diag_request {
	struct nlmsghdr nlh;
	struct inet_diag_req_v2 req;
};

static int send_request(struct sockdiag *d, const struct mapped *src, const struct mapped *dst,
			os_error *err)
{
	/* Both v4 (or v4-mapped): the IPv4 family, which is what the kernel
	 * looks a mapped pair up in anyway. */
	int fam = is_v4_mapped(src->a) && is_v4_mapped(dst->a) ? AF_INET : AF_INET6;
	struct diag_request r = {
		.nlh = { .nlmsg_len = sizeof r,
			 .nlmsg_type = SOCK_DIAG_BY_FAMILY,
			 .nlmsg_flags = NLM_F_REQUEST,
			 .nlmsg_seq = ++d->seq },
		.req = { .sdiag_family = (uint8_t)fam,
			 .sdiag_protocol = IPPROTO_TCP,
			 .idiag_states = ~0u,
			 .id = { .idiag_sport = src->port,
				 .idiag_dport = dst->port,
				 .idiag_cookie = { INET_DIAG_NOCOOKIE, INET_DIAG_NOCOOKIE } } },
	};
	diag_addr(fam, src, r.req.id.idiag_src);
	diag_addr(fam, dst, r.req.id.idiag_dst);
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	for (;;) {
		ssize_t n =
			sendto(d->fd, &r, sizeof r, 0, (struct sockaddr *)&kernel, sizeof kernel);
		if (n == (ssize_t)sizeof r)
			return 0;
		if (n < 0 && errno == EINTR)
			continue;
		return os_error_errno(err, "sock_diag: sending the lookup");
	}
}

/* Reads until the answer to our sequence number: 1 found, 0 none. */
static int read_answer(struct sockdiag *d, const struct mapped *src, const struct mapped *dst,
		       struct sockdiag_tcp *out, os_error *err)
{
	static char buf[SOCKDIAG_RECV_BUF] __attribute__((aligned(8)));
	for (;;) {
		ssize_t n = recv(d->fd, buf, sizeof buf, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return os_error_errno(err, "sock_diag: reading the answer");
		size_t left = (size_t)n;
		for (struct nlmsghdr *h = (void *)buf; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
			if (h->nlmsg_seq != d->seq)
				continue; /* a late answer to an earlier, timed-out lookup */
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);
				if (h->nlmsg_len < NLMSG_LENGTH(sizeof *e))
					return os_error_set(err, EPROTO, "sock_diag: short error");
				if (e->error == -ENOENT || e->error == 0)
					return 0;
				errno = -e->error;
				return os_error_errno(err, "sock_diag: lookup");
			}
			const struct inet_diag_msg *msg = NLMSG_DATA(h);
			if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
			    h->nlmsg_len < NLMSG_LENGTH(sizeof *msg))
				return os_error_set(err, EPROTO, "sock_diag: unexpected answer");
			if (!answer_matches(msg, src, dst))
				return 0;
			*out = (struct sockdiag_tcp){ .family = msg->idiag_family,
						      .state = msg->idiag_state,
						      .inode = msg->idiag_inode,
						      .uid = msg->idiag_uid };
			return 1;
		}
	}
}

int sockdiag_tcp_find(struct sockdiag *d, const struct sockaddr *src, const struct sockaddr *dst,
		      struct sockdiag_tcp *out, os_error *err)
{
	struct mapped s, t;
	if (to_mapped(src, &s) < 0 || to_mapped(dst, &t) < 0)
		return os_error_set(err, EAFNOSUPPORT, "sock_diag: not an IP socket address");
	if (send_request(d, &s, &t, err) < 0)
		return -1;
	return read_answer(d, &s, &t, out, err);
}
