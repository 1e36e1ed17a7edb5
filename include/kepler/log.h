/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kepler/log.h: the mains' logger. Writes one line per message to stderr,
 * as text or as one JSON object, each with one write(2) so that lines from
 * several threads or processes sharing stderr never interleave.
 * Library code does not log; it returns errors for the mains to report.
 */
#ifndef KEPLER_LOG_H
#define KEPLER_LOG_H

#include <stdarg.h>
#include <stdbool.h>

enum kepler_log_level {
	KEPLER_LOG_DEBUG = 0,
	KEPLER_LOG_INFO = 1,
	KEPLER_LOG_WARN = 2,
	KEPLER_LOG_ERROR = 3,
};

enum kepler_log_format {
	KEPLER_LOG_TEXT = 0,
	KEPLER_LOG_JSON = 1,
};

/*
 * Set the program name shown in each line, the least severe level written
 * and the format. Before this call: "kepler", info, text.
 * @prog must stay valid for the life of the process.
 */
void kepler_log_setup(const char *prog, enum kepler_log_level level, enum kepler_log_format format);

/* True if a message at @level would be written. */
bool kepler_log_enabled(enum kepler_log_level level);

void kepler_log(enum kepler_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void kepler_logv(enum kepler_log_level level, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

#define kepler_debug(...) kepler_log(KEPLER_LOG_DEBUG, __VA_ARGS__)
#define kepler_info(...) kepler_log(KEPLER_LOG_INFO, __VA_ARGS__)
#define kepler_warn(...) kepler_log(KEPLER_LOG_WARN, __VA_ARGS__)
#define kepler_err(...) kepler_log(KEPLER_LOG_ERROR, __VA_ARGS__)

/*
 * Format one log line into @buf (at most @len bytes, always terminated,
 * ending in '\n'); exposed for tests. @ts_ns is wall-clock time in ns.
 * Control characters and invalid UTF-8 in @msg are escaped in both formats.
 */
void kepler_log_format_line(char *buf, size_t len, enum kepler_log_format format, const char *prog, int pid,
			    enum kepler_log_level level, long long ts_ns, const char *msg);

#endif /* KEPLER_LOG_H */
