/* resolver.c - c-ares on the event loop (see resolver.h). Each query owns a
 * small struct that c-ares' callback finds; cancelling only detaches the
 * user callback because c-ares cannot cancel one query of a channel. */
#include "resolver.h"

#include <ares.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "fdutil.h"
#include "parse.h"

#define HOSTS_CAP (1u << 20)
#define HOSTS_MAX 4096
#define SOCKS_MAX 16

struct host_entry {
	char name[256];
	struct ip_addr addr;
};

struct resolver_query {
	struct resolver *r;
	resolver_cb cb;
	void *data;
	int cancelled;
	/* literal / hosts-file answers are delivered through a deferred call */
	struct ip_addr addrs[RESOLVER_ADDRS_MAX];
	size_t n;
};

struct sock_watch {
	int fd;
	struct loop_io *io;
};

struct resolver {
	struct loop *loop;
	ares_channel channel;
	struct loop_timer *timer;
	struct sock_watch socks[SOCKS_MAX];
	struct host_entry *hosts;
	size_t n_hosts;
	bool has_gateway;
	struct ip_addr gateway;
};

static void rearm_timer(struct resolver *r)
{
	struct timeval tv, *tvp = ares_timeout(r->channel, NULL, &tv);
	if (!tvp) {
		loop_timer_disarm(r->timer);
		return;
	}
	uint64_t ms = (uint64_t)tvp->tv_sec * 1000 + (uint64_t)tvp->tv_usec / 1000;
	loop_timer_set(r->timer, ms ? ms : 1, 0, NULL);
}

static void on_timer(struct loop *l, struct loop_timer *t, void *data)
{
	struct resolver *r = data;
	ares_process_fd(r->channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
	rearm_timer(r);
}

static void on_sock_io(struct loop *l, struct loop_io *w, int fd, unsigned events, void *data)
{
	struct resolver *r = data;
	ares_socket_t rfd = (events & (LOOP_IN | LOOP_HUP | LOOP_ERR)) ? fd : ARES_SOCKET_BAD;
	ares_socket_t wfd = (events & LOOP_OUT) ? fd : ARES_SOCKET_BAD;
	ares_process_fd(r->channel, rfd, wfd);
	rearm_timer(r);
}

/* c-ares tells us which sockets to watch for what. */
static void on_sock_state(void *data, ares_socket_t fd, int readable, int writable)
{
	struct resolver *r = data;
	struct sock_watch *slot = NULL, *free_slot = NULL;
	for (size_t i = 0; i < SOCKS_MAX; i++) {
		if (r->socks[i].io && r->socks[i].fd == fd)
			slot = &r->socks[i];
		else if (!r->socks[i].io && !free_slot)
			free_slot = &r->socks[i];
	}
	unsigned ev = (readable ? LOOP_IN : 0) | (writable ? LOOP_OUT : 0);
	if (!ev) {
		if (slot) {
			loop_io_remove(slot->io);
			slot->io = NULL;
		}
		return;
	}
	if (slot) {
		loop_io_modify(slot->io, ev, NULL);
		return;
	}
	if (free_slot && loop_io_add(r->loop, fd, ev, 0, on_sock_io, r, &free_slot->io, NULL) == 0)
		free_slot->fd = fd;
}

/* Next blank-separated word of [*p, end): pointer-advancing, no copies. */
static const char *next_word(const char **p, const char *end, size_t *len)
{
	const char *s = *p;
	while (s < end && (*s == ' ' || *s == '\t' || *s == '\r'))
		s++;
	const char *w = s;
	while (s < end && *s != ' ' && *s != '\t' && *s != '\r')
		s++;
	*len = (size_t)(s - w);
	*p = s;
	return *len ? w : NULL;
}

static int parse_hosts_line(const char *line, size_t len, struct resolver *r, os_error *err)
{
	const char *hash = memchr(line, '#', len);
	const char *end = hash ? hash : line + len, *p = line;
	size_t wl;
	const char *w = next_word(&p, end, &wl);
	if (!w)
		return 0;
	char text[64];
	if (wl >= sizeof text)
		return os_error_set(err, EINVAL, "address too long");
	memcpy(text, w, wl);
	text[wl] = '\0';
	struct ip_addr addr;
	if (ip_addr_parse(text, &addr, err) < 0)
		return -1;
	while ((w = next_word(&p, end, &wl)) != NULL) {
		if (r->n_hosts == HOSTS_MAX)
			return os_error_set(err, ENOSPC, "more than %d names", HOSTS_MAX);
		struct host_entry *e = &r->hosts[r->n_hosts];
		if (wl >= sizeof e->name)
			return os_error_set(err, EINVAL, "name too long");
		for (size_t i = 0; i < wl; i++)
			e->name[i] = (w[i] >= 'A' && w[i] <= 'Z') ? (char)(w[i] + 32) : w[i];
		e->name[wl] = '\0';
		e->addr = addr;
		r->n_hosts++;
	}
	return 0;
}

static int load_hosts(struct resolver *r, const char *path, os_error *err)
{
	_cleanup_free_ char *text = NULL;
	if (file_read_all(path, HOSTS_CAP, &text, NULL, err) < 0)
		return -1;
	r->hosts = calloc(HOSTS_MAX, sizeof *r->hosts);
	if (!r->hosts)
		return os_error_set(err, ENOMEM, "out of memory");
	unsigned lineno = 1;
	for (const char *p = text; *p; lineno++) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		if (parse_hosts_line(p, len, r, err) < 0)
			return os_error_prefix(err, "%s:%u", path, lineno);
		p += len + (nl ? 1 : 0);
	}
	return 0;
}

int resolver_new(struct loop *l, const struct resolver_config *cfg, struct resolver **out,
		 os_error *err)
{
	static int library_ready;
	if (!library_ready) {
		if (ares_library_init(ARES_LIB_INIT_ALL) != ARES_SUCCESS)
			return os_error_set(err, EIO, "initialising c-ares");
		library_ready = 1;
	}
	struct resolver *r = calloc(1, sizeof *r);
	if (!r)
		return os_error_set(err, ENOMEM, "out of memory");
	r->loop = l;
	struct ares_options opts = { 0 };
	opts.sock_state_cb = on_sock_state;
	opts.sock_state_cb_data = r;
	opts.timeout = (int)(cfg && cfg->timeout_ms ? cfg->timeout_ms : 5000);
	opts.tries = 2;
	int mask = ARES_OPT_SOCK_STATE_CB | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES;
	int rc = ares_init_options(&r->channel, &opts, mask);
	if (rc != ARES_SUCCESS) {
		free(r);
		return os_error_set(err, EIO, "initialising resolver: %s", ares_strerror(rc));
	}
	if (cfg && cfg->dns_servers &&
	    (rc = ares_set_servers_ports_csv(r->channel, cfg->dns_servers)) != ARES_SUCCESS) {
		os_error_set(err, EINVAL, "DNS servers \"%s\": %s", cfg->dns_servers,
			     ares_strerror(rc));
		resolver_free(r);
		return -1;
	}
	if (loop_timer_add(l, 1000, 0, on_timer, r, &r->timer, err) < 0 ||
	    (cfg && cfg->hosts_file && load_hosts(r, cfg->hosts_file, err) < 0)) {
		resolver_free(r);
		return -1;
	}
	if (cfg && cfg->host_gateway) {
		r->has_gateway = true;
		r->gateway = *cfg->host_gateway;
	}
	loop_timer_disarm(r->timer);
	*out = r;
	return 0;
}

void resolver_free(struct resolver *r)
{
	if (!r)
		return;
	ares_destroy(r->channel); /* runs pending callbacks with ARES_EDESTRUCTION */
	for (size_t i = 0; i < SOCKS_MAX; i++)
		if (r->socks[i].io)
			loop_io_remove(r->socks[i].io);
	if (r->timer)
		loop_timer_remove(r->timer);
	free(r->hosts);
	free(r);
}

static void deliver_local(struct loop *l, void *data)
{
	struct resolver_query *q = data;
	if (!q->cancelled)
		q->cb(q->data, q->n ? 0 : ENOENT, q->addrs, q->n, q->n ? NULL : "no address");
	free(q);
}

static void on_ares_answer(void *arg, int status, int timeouts, struct ares_addrinfo *res)
{
	struct resolver_query *q = arg;
	q->n = 0;
	if (status == ARES_SUCCESS && res) {
		for (struct ares_addrinfo_node *n = res->nodes; n && q->n < RESOLVER_ADDRS_MAX;
		     n = n->ai_next)
			if (ip_addr_from_sockaddr(n->ai_addr, &q->addrs[q->n]) == 0)
				q->n++;
	}
	ares_freeaddrinfo(res);
	if (!q->cancelled) {
		if (status == ARES_SUCCESS && q->n)
			q->cb(q->data, 0, q->addrs, q->n, NULL);
		else
			q->cb(q->data, status == ARES_ENOTFOUND ? ENOENT : EIO, NULL, 0,
			      status == ARES_SUCCESS ? "no address" : ares_strerror(status));
	}
	free(q);
}

struct resolver_query *resolver_lookup(struct resolver *r, const char *host, resolver_cb cb,
				       void *data, os_error *err)
{
	struct resolver_query *q = calloc(1, sizeof *q);
	if (!q) {
		os_error_set(err, ENOMEM, "out of memory");
		return NULL;
	}
	q->r = r;
	q->cb = cb;
	q->data = data;
	bool local = false;
	if (ip_addr_parse(host, &q->addrs[0], NULL) == 0 ||
	    (r->has_gateway && host_is_gateway_alias(host) && (q->addrs[0] = r->gateway, true))) {
		q->n = 1;
		local = true;
	}
	for (size_t i = 0; !local && i < r->n_hosts; i++)
		if (strcmp(r->hosts[i].name, host) == 0 && q->n < RESOLVER_ADDRS_MAX)
			q->addrs[q->n++] = r->hosts[i].addr;
	if (local || q->n) {
		if (loop_defer(r->loop, deliver_local, q, NULL, err) < 0) {
			free(q);
			return NULL;
		}
		return q;
	}
	struct ares_addrinfo_hints hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	ares_getaddrinfo(r->channel, host, NULL, &hints, on_ares_answer, q);
	rearm_timer(r);
	return q;
}

void resolver_cancel(struct resolver_query *q)
{
	if (q)
		q->cancelled = 1;
}

int resolver_host_gateway_parse(const char *spec, const struct sockaddr *listen,
				struct ip_addr *out, os_error *err)
{
	if (strcmp(spec, "proxy") != 0) {
		if (ip_addr_parse(spec, out, NULL) < 0)
			return os_error_set(
				err, EINVAL,
				"--host-gateway: expected an IP address or `proxy`, got "
				"\"%.64s\"",
				spec);
		return 0;
	}
	char text[INET6_ADDRSTRLEN] = "";
	const struct sockaddr_in *v4 = (const struct sockaddr_in *)listen;
	const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)listen;
	if (listen && listen->sa_family == AF_INET && v4->sin_addr.s_addr != htonl(INADDR_ANY))
		inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text);
	else if (listen && listen->sa_family == AF_INET6 &&
		 !IN6_IS_ADDR_UNSPECIFIED(&v6->sin6_addr))
		inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text);
	if (!text[0] || ip_addr_parse(text, out, NULL) < 0)
		return os_error_set(
			err, EINVAL,
			"--host-gateway proxy: the proxy listens on no specific address");
	return 0;
}
