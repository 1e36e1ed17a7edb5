// SPDX-License-Identifier: Apache-2.0
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kepler/log.h"

#define LINE_MAX_BYTES 4096

static const char *log_prog = "kepler";
static enum kepler_log_level log_level = KEPLER_LOG_INFO;
static enum kepler_log_format log_format = KEPLER_LOG_TEXT;

static const char *const level_names[] = { "debug", "info", "warn", "error" };

void kepler_log_setup(const char *prog, enum kepler_log_level level, enum kepler_log_format format)
{
	log_prog = prog;
	log_level = level;
	log_format = format;
}

bool kepler_log_enabled(enum kepler_log_level level)
{
	return level >= log_level;
}

/* Length of the valid UTF-8 sequence at @s (1..4), or 0 if invalid. */
static size_t utf8_len(const unsigned char *s)
{
	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		return (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (s[0] >= 0xe0 && s[0] <= 0xef) {
		if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80)
			return 0;
		if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f))
			return 0; /* overlong or surrogate */
		return 3;
	}
	if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 || (s[3] & 0xc0) != 0x80)
			return 0;
		if ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] > 0x8f))
			return 0;
		return 4;
	}
	return 0;
}

/*
 * Append @msg to @buf escaped: for JSON as a string body, for text with
 * control characters as \xNN. Invalid UTF-8 becomes U+FFFD. Returns the
 * new length; never writes past @cap - 1.
 */
static size_t append_escaped(char *buf, size_t used, size_t cap, const char *msg, bool json)
{
	const unsigned char *s = (const unsigned char *)msg;
	char tmp[8];

	while (*s && used + 8 < cap) {
		size_t n = utf8_len(s);
		const char *out = tmp;
		size_t outlen;

		if (n == 0) {
			out = "\xef\xbf\xbd";
			outlen = 3;
			n = 1;
		} else if (json && (*s == '"' || *s == '\\')) {
			tmp[0] = '\\';
			tmp[1] = (char)*s;
			outlen = 2;
		} else if (*s < 0x20 || *s == 0x7f) {
			outlen = (size_t)snprintf(tmp, sizeof(tmp), json ? "\\u%04x" : "\\x%02x", *s);
		} else {
			out = (const char *)s;
			outlen = n;
		}
		memcpy(buf + used, out, outlen);
		used += outlen;
		s += n;
	}
	buf[used] = '\0';
	return used;
}

static void format_time(char *buf, size_t len, long long ts_ns)
{
	time_t secs = (time_t)(ts_ns / 1000000000LL);
	struct tm tm;

	gmtime_r(&secs, &tm);
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03lldZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (ts_ns / 1000000LL) % 1000LL);
}

void kepler_log_format_line(char *buf, size_t len, enum kepler_log_format format, const char *prog, int pid,
			    enum kepler_log_level level, long long ts_ns, const char *msg)
{
	char ts[40];
	size_t used;
	bool json = format == KEPLER_LOG_JSON;

	format_time(ts, sizeof(ts), ts_ns);
	if (json)
		used = (size_t)snprintf(
			buf, len,
			"{\"time\":\"%s\",\"level\":\"%s\",\"program\":\"%s\",\"pid\":%d,\"msg\":\"", ts,
			level_names[level], prog, pid);
	else
		used = (size_t)snprintf(buf, len, "%s %s[%d] %s: ", ts, prog, pid, level_names[level]);
	if (used >= len - 4) /* the prefix alone filled the buffer */
		used = len > 4 ? len - 4 : 0;
	used = append_escaped(buf, used, len - 3, msg, json);
	snprintf(buf + used, len - used, json ? "\"}\n" : "\n");
}

void kepler_logv(enum kepler_log_level level, const char *fmt, va_list ap)
{
	char msg[LINE_MAX_BYTES], line[LINE_MAX_BYTES + 256];
	struct timespec ts;
	ssize_t w;

	if (!kepler_log_enabled(level))
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	clock_gettime(CLOCK_REALTIME, &ts);
	kepler_log_format_line(line, sizeof(line), log_format, log_prog, (int)getpid(), level,
			       (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec, msg);
	w = write(STDERR_FILENO, line, strlen(line));
	(void)w; /* nowhere left to report a failed write to stderr */
}

void kepler_log(enum kepler_log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	kepler_logv(level, fmt, ap);
	va_end(ap);
}
