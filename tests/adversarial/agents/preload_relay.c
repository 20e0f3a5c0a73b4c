/* preload_relay.c - test-only LD_PRELOAD library for the adversarial suite:
 * its constructor, running inside whatever allowed binary loads it, makes
 * its own request through the proxy (GET /preload-evil) and reports the
 * status on stderr. It must never be built into anything but that test. */
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

__attribute__((constructor)) static void relay(void)
{
	const char *url = getenv("HTTP_PROXY");
	char host[64], port[8];
	const char *h = url ? strstr(url, "//") : NULL;
	const char *colon = h ? strrchr(h, ':') : NULL;
	if (!colon || (size_t)(colon - h - 2) >= sizeof host || strlen(colon + 1) >= sizeof port)
		return;
	memcpy(host, h + 2, (size_t)(colon - h - 2));
	host[colon - h - 2] = '\0';
	memcpy(port, colon + 1, strlen(colon + 1) + 1);
	port[strcspn(port, "/")] = '\0';
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	if (getaddrinfo(host, port, &hints, &ai) != 0)
		return;
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
		static const char req[] = "GET http://binonly.test:8000/preload-evil HTTP/1.1\r\n"
					  "Host: binonly.test:8000\r\nConnection: close\r\n\r\n";
		char ans[16] = { 0 };
		if (write(fd, req, sizeof req - 1) > 0 && read(fd, ans, 12) > 0)
			fprintf(stderr, "PRELOAD %.3s\n", ans + 9);
	}
	if (fd >= 0)
		close(fd);
	freeaddrinfo(ai);
}
