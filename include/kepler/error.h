/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kepler/error.h: an error code with a human message.
 *
 * Functions that can fail return 0 or a negative errno and, when given a
 * non-NULL struct kepler_error, write a one-line message into it that names
 * what failed (a key, a file:line, a path). Library code never prints; the
 * mains decide where messages go.
 */
#ifndef KEPLER_ERROR_H
#define KEPLER_ERROR_H

#define KEPLER_ERROR_MSG_MAX 512

struct kepler_error {
	int code;                       /* negative errno, 0 if none */
	char msg[KEPLER_ERROR_MSG_MAX]; /* NUL-terminated, "" if none */
};

/*
 * Record an error and return @code (a negative errno), so that callers can
 * write `return kepler_error_set(err, -EINVAL, "bad value '%s'", v);`.
 * @err may be NULL. The message is truncated to KEPLER_ERROR_MSG_MAX - 1.
 */
int kepler_error_set(struct kepler_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Reset @err to "no error". @err may be NULL. */
void kepler_error_clear(struct kepler_error *err);

#endif /* KEPLER_ERROR_H */
