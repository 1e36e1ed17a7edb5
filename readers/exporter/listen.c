// SPDX-License-Identifier: Apache-2.0
/*
 * The exporter's listening socket (listen.h): web.listen-address parsed,
 * resolved and bound (":PORT" on one dual-stack socket), and the URL the
 * exporter says it serves.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "listen.h"
#include "server.h"

/* "9100" as a port, or -EINVAL: digits only, at most 65535 (no overflow: "4294976396" is refused). */
static int port_number(const char *s)
{
	unsigned long v = 0;

	if (!*s || strlen(s) > 5 || strspn(s, "0123456789") != strlen(s))
		return -EINVAL;
	for (; *s; s++)
		v = v * 10 + (unsigned long)(*s - '0');
	return v > 65535 ? -EINVAL : (int)v;
}

/* "HOST:PORT", ":PORT", "[V6]:PORT" -> host (NULL: any) and port. */
static int split_address(const char *addr, char *host, size_t hsize, char *port, size_t psize)
{
	const char *colon;

	if (addr[0] == '[') {
		const char *end = strchr(addr, ']');

		if (!end || end[1] != ':')
			return -EINVAL;
		snprintf(host, hsize, "%.*s", (int)(end - addr - 1), addr + 1);
		colon = end + 1;
	} else {
		colon = strrchr(addr, ':');
		if (!colon)
			return -EINVAL;
		snprintf(host, hsize, "%.*s", (int)(colon - addr), addr);
	}
	snprintf(port, psize, "%s", colon + 1);
	return port_number(port) < 0 ? -EINVAL : 0;
}

static int bind_one(const struct addrinfo *ai)
{
	int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol), one = 1, zero = 0;

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ai->ai_family == AF_INET6) /* ":PORT" serves IPv4 too */
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, SOMAXCONN) < 0) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

/* ":PORT": every address, IPv6 and IPv4 on one dual-stack socket where IPv6 exists. */
static int listen_any(const char *port)
{
	struct addrinfo ai6 = { .ai_family = AF_INET6, .ai_socktype = SOCK_STREAM };
	struct addrinfo ai4 = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6,
				   .sin6_addr = IN6ADDR_ANY_INIT,
				   .sin6_port = htons((uint16_t)port_number(port)) };
	struct sockaddr_in a4 = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_ANY),
				  .sin_port = htons((uint16_t)port_number(port)) };
	int fd;

	ai6.ai_addr = (struct sockaddr *)&a6;
	ai6.ai_addrlen = sizeof(a6);
	ai4.ai_addr = (struct sockaddr *)&a4;
	ai4.ai_addrlen = sizeof(a4);
	fd = bind_one(&ai6);
	if (fd == -EAFNOSUPPORT || fd == -EADDRNOTAVAIL)
		fd = bind_one(&ai4);
	return fd;
}

int kepler_server_check_address(const char *addr, struct kepler_error *err)
{
	char host[256], port[16];

	if (split_address(addr, host, sizeof(host), port, sizeof(port)) < 0)
		return kepler_error_set(err, -EINVAL,
					"invalid listen address '%s': expected HOST:PORT, "
					":PORT or [IPV6]:PORT with a port of 0 to 65535",
					addr);
	return 0;
}

void kepler_server_url(const char *addr, bool tls, unsigned port, char *buf, size_t size)
{
	char host[256] = "", p[16];
	bool any;

	split_address(addr, host, sizeof(host), p, sizeof(p));
	any = !host[0] || !strcmp(host, "0.0.0.0") || !strcmp(host, "::");
	snprintf(buf, size, "%s://%s%s%s:%u/metrics%s", tls ? "https" : "http", strchr(host, ':') ? "[" : "",
		 any ? "localhost" : host, strchr(host, ':') ? "]" : "", port,
		 any ? " (every address of this host)" : "");
}

int kepler_listen_open(const char *addr, struct kepler_error *err)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;
	char host[256], port[16];
	int fd = -EADDRNOTAVAIL, rc;

	if (kepler_server_check_address(addr, err) < 0)
		return -EINVAL;
	split_address(addr, host, sizeof(host), port, sizeof(port));
	if (!host[0]) {
		fd = listen_any(port);
	} else {
		rc = getaddrinfo(host, port, &hints, &res);
		if (rc != 0)
			return kepler_error_set(err, -EINVAL, "cannot resolve listen address '%s': %s", addr,
						gai_strerror(rc));
		for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next)
			fd = bind_one(ai);
		freeaddrinfo(res);
	}
	if (fd < 0)
		return kepler_error_set(err, fd, "cannot listen on %s: %s", addr, strerror(-fd));
	return fd;
}

unsigned kepler_listen_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return 0;
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}
