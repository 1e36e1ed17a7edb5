// SPDX-License-Identifier: Apache-2.0
/* The intensity file kepler-carbon keeps (see intensity_out.h). */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "intensity_out.h"
#include "kepler/buf.h"
#include "kepler/log.h"

#define MAX_FILE (64u << 20)

int carbon_out_load(const char *path, struct kepler_carbon *ret, struct kepler_error *err)
{
	struct kepler_error perr = { 0 };
	char *text = NULL, aside[4096];
	size_t len = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), r = 0;

	memset(ret, 0, sizeof(*ret));
	if (fd < 0)
		return errno == ENOENT ? 0
				       : kepler_error_set(err, -errno, "carbon.intensity-file %s: %s", path,
							  strerror(errno));
	if (!(text = malloc(MAX_FILE)))
		r = kepler_error_set(err, -ENOMEM, "out of memory");
	while (r == 0 && (n = read(fd, text + len, MAX_FILE - len)) > 0)
		len += (size_t)n;
	if (r == 0 && n < 0)
		r = kepler_error_set(err, -errno, "carbon.intensity-file %s: %s", path, strerror(errno));
	close(fd);
	if (r == 0 && (len == MAX_FILE || kepler_carbon_parse(text, len, ret, &perr) < 0)) {
		snprintf(aside, sizeof(aside), "%s.damaged", path);
		if (rename(path, aside) < 0)
			r = kepler_error_set(
				err, -errno,
				"carbon.intensity-file %s does not parse (%s) and cannot be moved aside: %s",
				path, len == MAX_FILE ? "too large" : perr.msg, strerror(errno));
		else
			kepler_warn(
				"carbon.intensity-file %s does not parse (%s): kept as %s; starting a new one",
				path, len == MAX_FILE ? "too large" : perr.msg, aside);
	}
	free(text);
	return r;
}

static int by_time(const void *a, const void *b)
{
	const struct kepler_carbon_point *x = a, *y = b;

	return x->from_ns < y->from_ns ? -1 : x->from_ns > y->from_ns;
}

int carbon_out_merge(struct kepler_carbon *c, const struct carbon_values *in, size_t keep, int *ret_changed)
{
	struct kepler_carbon_point *p = realloc(c->points, (c->n + in->n + 1) * sizeof(*p)), *old;
	size_t n = c->n, w = 0, oldn = c->n;

	*ret_changed = 0;
	if (!p)
		return -ENOMEM;
	c->points = p;
	if (!(old = malloc((oldn + 1) * sizeof(*old))))
		return -ENOMEM;
	memcpy(old, p, oldn * sizeof(*old));
	for (size_t i = 0; i < in->n; i++) {
		size_t j;

		for (j = 0; j < n && p[j].from_ns != in->v[i].from_ns; j++)
			;
		p[j < n ? j : n++] = in->v[i]; /* the same time again: the newer answer wins */
	}
	qsort(p, n, sizeof(*p), by_time);
	for (size_t i = 0; i < n;
	     i++) /* a line that changes nothing in force (the same value and kind) goes */
		if (!w || p[i].mg_kwh != p[w - 1].mg_kwh || p[i].kind != p[w - 1].kind)
			p[w++] = p[i];
	if (w > keep) {
		memmove(p, p + (w - keep), keep * sizeof(*p));
		w = keep;
	}
	c->n = w;
	*ret_changed = w != oldn;
	for (size_t i = 0; i < w && !*ret_changed; i++)
		*ret_changed = p[i].from_ns != old[i].from_ns || p[i].mg_kwh != old[i].mg_kwh ||
			       p[i].kind != old[i].kind;
	free(old);
	return 0;
}

static void rfc3339(uint64_t ns, char *buf, size_t size)
{
	time_t t = (time_t)(ns / 1000000000u);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (ns % 1000000000u) /* to the ns: a provider's sub-second times survive a rewrite */
		snprintf(buf + strlen(buf) - 1, size - (strlen(buf) - 1), ".%09uZ",
			 (unsigned)(ns % 1000000000u));
}

int carbon_out_write(const char *path, const struct kepler_carbon *c, struct kepler_error *err)
{
	struct kepler_buf b = KEPLER_BUF_INIT;
	char tmp[4096], dir[4096], ts[48];
	int fd = -1, r = 0;
	size_t off = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.new.%ld", path, (long)getpid()) >= (int)sizeof(tmp))
		return kepler_error_set(err, -ENAMETOOLONG, "carbon.intensity-file %s: name too long", path);
	kepler_buf_adds(&b,
			"# kepler-carbon: the grid's carbon intensity, g CO2e per kWh, from each time on\n"
			"# time,g_per_kwh,kind (measured, estimated, forecast, fallback, static)\n");
	for (size_t i = 0; i < c->n; i++) {
		rfc3339(c->points[i].from_ns, ts, sizeof(ts));
		kepler_buf_printf(&b, "%s,%u.%03u,%s\n", ts, c->points[i].mg_kwh / 1000,
				  c->points[i].mg_kwh % 1000, kepler_carbon_kind_name(c->points[i].kind));
	}
	if (b.error) {
		kepler_buf_free(&b);
		return kepler_error_set(err, -ENOMEM, "out of memory");
	}
	unlink(tmp); /* one left by a process of ours that died (our pid again) */
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		r = kepler_error_set(err, -errno, "cannot write %s: %s", tmp, strerror(errno));
	while (r == 0 && off < b.len) {
		ssize_t n = write(fd, b.data + off, b.len - off);

		if (n < 0 && errno != EINTR)
			r = kepler_error_set(err, -errno, "cannot write %s: %s", tmp, strerror(errno));
		else if (n > 0)
			off += (size_t)n;
	}
	if (r == 0 && fchmod(fd, 0644) < 0) /* whatever the umask: the collector's user reads it */
		r = kepler_error_set(err, -errno, "cannot write %s: %s", tmp, strerror(errno));
	if (r == 0 && fsync(fd) < 0)
		r = kepler_error_set(err, -errno, "cannot write %s: %s", tmp, strerror(errno));
	if (fd >= 0)
		close(fd);
	if (r == 0 && rename(tmp, path) < 0)
		r = kepler_error_set(err, -errno, "cannot replace carbon.intensity-file %s: %s", path,
				     strerror(errno));
	if (r < 0)
		unlink(tmp);
	else {
		snprintf(dir, sizeof(dir), "%s", path);
		if ((fd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
			fsync(fd); /* the rename itself (best effort: it is done either way) */
			close(fd);
		}
	}
	kepler_buf_free(&b);
	return r;
}
