/* SPDX-License-Identifier: Apache-2.0 */
/*
 * readers/exporter/listen.h: the exporter's listening socket. The address
 * checks and the URL (kepler_server_check_address(), kepler_server_url())
 * are declared in server.h, which the main uses.
 */
#ifndef KEPLER_EXPORTER_LISTEN_H
#define KEPLER_EXPORTER_LISTEN_H

#include "kepler/error.h"

/*
 * A listening TCP socket on @addr ("HOST:PORT", ":PORT", "[V6]:PORT";
 * port 0: any free one), close-on-exec. The descriptor, or -EINVAL (a bad
 * or unresolvable address) or the bind's or listen's -errno, with the
 * message in @err.
 */
int kepler_listen_open(const char *addr, struct kepler_error *err);

/* The port @fd is bound to (0 if it cannot be told). */
unsigned kepler_listen_port(int fd);

#endif /* KEPLER_EXPORTER_LISTEN_H */
