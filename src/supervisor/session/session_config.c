/* session_config.c - the session's two operator inputs: the gateway URL
 * (unix:, http:// or https://; an address, or a name resolved once here at
 * start-up, before the loop runs: a Kubernetes Service name is stable, and
 * resolving later would block the loop) and the token file (readable by us alone, or refused: a token
 * other users could read is a leaked token). Never logs the token. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cleanup.h"
#include "fdutil.h"
#include "http.h"
#include "parse.h"
#include "session.h"

static int parse_unix(const char *path, struct sockaddr_storage *addr, unsigned *len, os_error *err)
{
	struct sockaddr_un *sun = (struct sockaddr_un *)addr;
	if (path[0] != '/')
		return os_error_set(err, EINVAL, "--gateway unix:PATH: PATH must be absolute");
	sun->sun_family = AF_UNIX;
	if (str_copy(sun->sun_path, sizeof(sun->sun_path), path, err) < 0)
		return os_error_prefix(err, "--gateway unix socket path");
	*len = (unsigned)sizeof(*sun);
	return 0;
}

/* A name (e.g. a Kubernetes Service): resolved now, once. */
static int resolve_once(const char *name, uint16_t port, struct sockaddr_storage *addr,
			unsigned *len, os_error *err)
{
	char service[8];
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
	snprintf(service, sizeof service, "%u", (unsigned)port);
	int rc = getaddrinfo(name, service, &hints, &res);
	if (rc != 0)
		return os_error_set(err, EHOSTUNREACH, "--gateway %s: cannot resolve: %s", name,
				    gai_strerror(rc));
	memcpy(addr, res->ai_addr, res->ai_addrlen);
	*len = (unsigned)res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

/* http:// or https://HOST[:PORT][/]. Over TLS, HOST as written is what the
 * certificate must name, even when it is resolved to an address here. */
static int parse_http(const char *rest, bool tls, struct gw_endpoint *ep, os_error *err)
{
	const char *scheme = tls ? "https" : "http";
	size_t n = strcspn(rest, "/");
	if (rest[n] && strcmp(rest + n, "/") != 0)
		return os_error_set(err, EINVAL, "--gateway %s://HOST:PORT takes no path", scheme);
	struct http_authority a;
	if (http_parse_authority(rest, n, tls ? 443 : 80, false, &a, err) < 0)
		return os_error_prefix(err, "--gateway");
	char h[256];
	if (a.host.len >= sizeof(h))
		return os_error_set(err, EINVAL, "--gateway: host too long");
	memcpy(h, a.host.p, a.host.len);
	h[a.host.len] = '\0';
	memcpy(ep->name, h, a.host.len + 1);
	if (!strcmp(h, "localhost"))
		str_copy(h, sizeof(h), "127.0.0.1", NULL);
	struct sockaddr_in *sin = (struct sockaddr_in *)&ep->addr;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ep->addr;
	if (!a.ipv6 && inet_pton(AF_INET, h, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(a.port);
		ep->addr_len = (unsigned)sizeof(*sin);
	} else if (a.ipv6 && inet_pton(AF_INET6, h, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(a.port);
		ep->addr_len = (unsigned)sizeof(*sin6);
	} else if (a.ipv6 || resolve_once(h, a.port, &ep->addr, &ep->addr_len, err) < 0) {
		return a.ipv6 ? os_error_set(err, EINVAL, "--gateway: bad IPv6 address %s", h) : -1;
	}
	if (n >= sizeof(ep->host))
		return os_error_set(err, EINVAL, "--gateway: authority too long");
	memcpy(ep->host, rest, n);
	ep->host[n] = '\0';
	ep->tls = tls;
	if (!tls)
		ep->name[0] = '\0';
	return 0;
}

int gw_session_parse_url(const char *url, struct gw_endpoint *ep, os_error *err)
{
	memset(ep, 0, sizeof(*ep));
	if (str_has_prefix(url, "unix:")) {
		if (str_copy(ep->host, sizeof(ep->host), "localhost", err) < 0)
			return -1;
		return parse_unix(url + 5, &ep->addr, &ep->addr_len, err);
	}
	if (str_has_prefix(url, "http://"))
		return parse_http(url + 7, false, ep, err);
	if (str_has_prefix(url, "https://"))
		return parse_http(url + 8, true, ep, err);
	return os_error_set(err, EINVAL,
			    "--gateway \"%s\": expected unix:/PATH, http://HOST:PORT or "
			    "https://HOST:PORT",
			    url);
}

/* Bearer token68 characters: nothing that could end a header. */
static bool token_chars(const char *t, size_t n)
{
	static const char ok[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				 "0123456789-._~+/=";
	return n > 0 && strspn(t, ok) == n;
}

/* Nobody else may read or write it: owner us or root, nothing for others,
 * no group write, and group read only when the group is our own (how the
 * kubelet hands a Secret to a non-root container with fsGroup). */
static bool token_file_private(const struct stat *st)
{
	if (st->st_uid != geteuid() && st->st_uid != 0)
		return false;
	if ((st->st_mode & 0027) != 0)
		return false;
	return !(st->st_mode & 0040) ||
	       (geteuid() != 0 && st->st_uid == 0 && st->st_gid == getegid());
}

int gw_session_read_token(const char *path, char *tok, size_t cap, os_error *err)
{
	/* Symlinks are followed: a Kubernetes Secret volume is links into ..data;
	 * what counts is the file reached, checked on the opened fd. */
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return os_error_errno(err, "--token-file %s", path);
	if (!S_ISREG(st.st_mode))
		return os_error_set(err, EINVAL, "--token-file %s: not a regular file", path);
	if (!token_file_private(&st))
		return os_error_set(
			err, EPERM,
			"--token-file %s: must be readable by this user alone: owned by "
			"it (or root) with mode 0600/0400, or root-owned 0440 with our "
			"group (a Kubernetes Secret with fsGroup) (found uid %u gid %u, "
			"mode %04o)",
			path, (unsigned)st.st_uid, (unsigned)st.st_gid,
			(unsigned)(st.st_mode & 07777));
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	if (fd_read_all(fd, GW_SESSION_TOKEN_MAX + 2, &text, &len, err) < 0)
		return os_error_prefix(err, "--token-file %s", path);
	while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r'))
		text[--len] = '\0';
	if (len >= cap || len > GW_SESSION_TOKEN_MAX || !token_chars(text, len))
		return os_error_set(err, EINVAL,
				    "--token-file %s: expected one token of at most %d "
				    "[A-Za-z0-9-._~+/=] characters",
				    path, GW_SESSION_TOKEN_MAX);
	memcpy(tok, text, len + 1);
	return 0;
}
