// SPDX-License-Identifier: Apache-2.0
/*
 * RAPL through perf_event (meter.source rapl-perf): the kernel's RAPL PMU
 * (arch/x86/events/rapl.c), <sysfs>/bus/event_source/devices/power. Its
 * `type` is perf_event_attr.type; `cpumask` names one CPU per package;
 * events/energy-pkg (-cores, -gpu, -ram, -psys) hold "event=0xNN", with a
 * .scale (joules per count, 2^-32 on Intel and AMD) and a .unit (Joules).
 *
 * It works where powercap's energy_uj is root-only (since Linux 5.10) or
 * absent: each counter is opened once at start (CAP_PERFMON, held by the
 * collector then, or kernel.perf_event_paranoid at most 0), one per
 * package, and read with read(2) after the privilege drop. A count is the
 * counter's 64-bit total since it was opened (the kernel folds the MSR's
 * 32-bit wraps in), so microjoules are computed from the total each read,
 * never summed from rounded deltas: nothing drifts. The 64-bit total wraps
 * too, after 2^32 J (165 days at 300 W): the counter arithmetic shared with
 * powercap (meter.c) takes it as a wrap of that range.
 *
 * The same event on every package is one zone ("package" = package-0 +
 * package-1), each package a part, as the powercap meter does. psys is the
 * platform's, not a package's: read on the first CPU of the mask only.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kepler/snapshot.h"
#include "meter_internal.h"
#include "rapl_perf.h"

#define UJ_PER_J 1000000.0L

/* ---- what sysfs says ---- */

int kepler_perf_parse_event(const char *text, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	if (strncmp(text, "event=", 6) != 0 || !isxdigit((unsigned char)text[6]))
		return -EINVAL;
	errno = 0;
	v = strtoull(text + 6, &end, 0);
	if (errno || (*end && *end != '\n') || v > 0xff) /* format: config:0-7 */
		return -EINVAL;
	*ret = v;
	return 0;
}

int kepler_perf_parse_scale(const char *text, long double *ret)
{
	char *end;
	long double v;

	if (!isdigit((unsigned char)text[0]))
		return -EINVAL;
	errno = 0;
	v = strtold(text, &end);
	if (errno || (*end && *end != '\n') || !isfinite(v) || !(v > 0) || v > 1)
		return -EINVAL;
	*ret = v;
	return 0;
}

int kepler_perf_parse_cpulist(const char *text, int *cpus, unsigned max, unsigned *ret_n)
{
	const char *p = text;
	unsigned n = 0;

	while (*p && *p != '\n') {
		char *end;
		long a, b;

		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		a = strtol(p, &end, 10);
		b = a;
		if (*end == '-') {
			if (!isdigit((unsigned char)end[1]))
				return -EINVAL;
			b = strtol(end + 1, &end, 10);
		}
		if (a > b || b > 65535 || (n && a <= cpus[n - 1]))
			return -EINVAL;
		for (long c = a; c <= b; c++) {
			if (n == max)
				return -E2BIG;
			cpus[n++] = (int)c;
		}
		if (*end == ',' && isdigit((unsigned char)end[1]))
			end++;
		else if (*end && *end != '\n')
			return -EINVAL;
		p = end;
	}
	if (!n)
		return -EINVAL;
	*ret_n = n;
	return 0;
}

uint64_t kepler_perf_count_uj(uint64_t count, long double scale)
{
	long double uj = (long double)count * scale * UJ_PER_J;

	return uj >= 18446744073709551615.0L ? UINT64_MAX : (uint64_t)uj;
}

/* The zone an event measures, by the names the powercap meter gives the same domains. */
static void zone_of(const char *event, char *zone, size_t size)
{
	static const char *const map[][2] = {
		{ "pkg", "package" }, { "cores", "core" }, { "gpu", "uncore" },
		{ "ram", "dram" },    { "psys", "psys" },
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(event, map[i][0])) {
			snprintf(zone, size, "%s", map[i][1]);
			return;
		}
	snprintf(zone, size, "%s", event);
}

static bool event_name_ok(const char *s)
{
	if (!*s || strlen(s) >= 32)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return false;
	return true;
}

/* events/energy-@name, .scale, .unit */
static int read_event(struct kepler_rapl_pmu *pmu, const char *name, struct kepler_error *err)
{
	struct kepler_perf_event *ev = &pmu->ev[pmu->nevents];
	char path[4200], text[128];
	int r;

	if (pmu->nevents == KEPLER_PERF_MAX_EVENTS)
		return kepler_error_set(err, -E2BIG, "%s/events: more than %d energy events", pmu->dir,
					KEPLER_PERF_MAX_EVENTS);
	memset(ev, 0, sizeof(*ev));
	snprintf(ev->name, sizeof(ev->name), "%s", name);
	zone_of(name, ev->zone, sizeof(ev->zone));
	snprintf(path, sizeof(path), "%s/events/energy-%s", pmu->dir, name);
	r = kepler_sysfs_read_line(path, text, sizeof(text), err);
	if (r == 0 && kepler_perf_parse_event(text, &ev->config) < 0)
		return kepler_error_set(err, -EINVAL, "%s holds '%.40s', not event=0xNN", path, text);
	if (r == 0) {
		snprintf(path, sizeof(path), "%s/events/energy-%s.scale", pmu->dir, name);
		r = kepler_sysfs_read_line(path, text, sizeof(text), err);
	}
	if (r == 0 && kepler_perf_parse_scale(text, &ev->scale) < 0)
		return kepler_error_set(err, -EINVAL, "%s holds '%.40s', not joules per count", path, text);
	if (r == 0) {
		snprintf(path, sizeof(path), "%s/events/energy-%s.unit", pmu->dir, name);
		r = kepler_sysfs_read_line(path, text, sizeof(text), err);
	}
	if (r == 0 && strcmp(text, "Joules"))
		return kepler_error_set(err, -EINVAL, "%s holds '%.40s', not Joules", path, text);
	if (r == 0)
		pmu->nevents++;
	return r;
}

static int read_cpus(const char *sysfs, struct kepler_rapl_pmu *pmu, struct kepler_error *err)
{
	char path[4200], text[1024];
	int r;

	snprintf(path, sizeof(path), "%s/cpumask", pmu->dir);
	r = kepler_sysfs_read_line(path, text, sizeof(text), err);
	if (r < 0)
		return r;
	r = kepler_perf_parse_cpulist(text, pmu->cpu, KEPLER_PERF_MAX_PACKAGES, &pmu->ncpus);
	if (r < 0)
		return kepler_error_set(err, r, "%s holds '%.60s', not a list of at most %d CPUs", path, text,
					KEPLER_PERF_MAX_PACKAGES);
	for (unsigned i = 0; i < pmu->ncpus; i++) {
		uint64_t id;
		struct kepler_error ignored = { 0 };

		snprintf(path, sizeof(path), "%s/devices/system/cpu/cpu%d/topology/physical_package_id",
			 sysfs, pmu->cpu[i]);
		/* no topology (a trimmed container's /sys): the mask's order */
		pmu->package[i] =
			kepler_sysfs_read_u64(path, &id, &ignored) == 0 && id < 65536 ? (int)id : (int)i;
	}
	return 0;
}

static int by_zone(const void *a, const void *b)
{
	return kepler_zone_rank(((const struct kepler_perf_event *)a)->zone) -
	       kepler_zone_rank(((const struct kepler_perf_event *)b)->zone);
}

int kepler_rapl_pmu_read(const char *sysfs, struct kepler_rapl_pmu *pmu, struct kepler_error *err)
{
	struct dirent **ents = NULL;
	char path[4200];
	uint64_t type;
	int n, r;

	memset(pmu, 0, sizeof(*pmu));
	snprintf(pmu->dir, sizeof(pmu->dir), "%s/bus/event_source/devices/power", sysfs ? sysfs : "/sys");
	snprintf(path, sizeof(path), "%s/type", pmu->dir);
	r = kepler_sysfs_read_u64(path, &type, err);
	if (r == -ENOENT)
		return kepler_error_set(err, r,
					"no RAPL PMU: %s does not exist (a VM, or a kernel without "
					"CONFIG_PERF_EVENTS_INTEL_RAPL)",
					pmu->dir);
	if (r < 0)
		return r;
	if (type > UINT32_MAX)
		return kepler_error_set(err, -EINVAL, "%s holds %llu, not a PMU type", path,
					(unsigned long long)type);
	pmu->type = (uint32_t)type;
	r = read_cpus(sysfs ? sysfs : "/sys", pmu, err);
	if (r < 0)
		return r;
	snprintf(path, sizeof(path), "%s/events", pmu->dir);
	n = scandir(path, &ents, NULL, alphasort);
	if (n < 0)
		return kepler_error_set(err, -errno, "cannot list %s: %s", path, strerror(errno));
	for (int i = 0; i < n; i++) {
		const char *name = ents[i]->d_name;

		if (r == 0 && !strncmp(name, "energy-", 7) && !strchr(name, '.')) {
			if (!event_name_ok(name + 7))
				r = kepler_error_set(err, -EINVAL, "%s/%.60s: not an event name", path, name);
			else
				r = read_event(pmu, name + 7, err);
		}
		free(ents[i]);
	}
	free(ents);
	if (r == 0 && pmu->nevents == 0)
		r = kepler_error_set(err, -ENOENT, "no energy events in %s", path);
	if (r == 0)
		qsort(pmu->ev, pmu->nevents, sizeof(pmu->ev[0]), by_zone);
	return r;
}

/* ---- the counters ---- */

static int kernel_open(void *ctx, uint32_t type, uint64_t config, int cpu)
{
	struct perf_event_attr a;
	long fd;

	(void)ctx;
	memset(&a, 0, sizeof(a));
	a.type = type;
	a.size = sizeof(a);
	a.config = config;
	fd = syscall(SYS_perf_event_open, &a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	return fd < 0 ? -errno : (int)fd;
}

static int kernel_read(void *ctx, int fd, uint64_t *count)
{
	ssize_t n = read(fd, count, sizeof(*count));

	(void)ctx;
	if (n == (ssize_t)sizeof(*count))
		return 0;
	return n < 0 ? -errno : -EIO;
}

static const struct kepler_perf_io kernel_io = { kernel_open, kernel_read, NULL };
static const struct kepler_perf_io *next_io = &kernel_io;

void kepler_rapl_perf_set_io(const struct kepler_perf_io *io)
{
	next_io = io ? io : &kernel_io;
}

struct perf_priv {
	struct kepler_perf_io io;
	long double scale[KEPLER_MAX_ZONES];
};

static bool wanted(const struct kepler_strlist *zones, const char *zone)
{
	if (!zones || zones->count == 0)
		return true;
	for (size_t i = 0; i < zones->count; i++)
		if (!strcasecmp(zones->items[i], zone))
			return true;
	return false;
}

static int read_part(struct kepler_meter *m, unsigned i, unsigned j, uint64_t mono_ns,
		     struct kepler_error *err)
{
	struct perf_priv *pp = m->priv;
	struct kepler_part_state *st = &m->states[i][j];
	struct kepler_meter_part *part = &m->zones[i].parts[j];
	uint64_t count, delta = 0;
	int r = pp->io.read(pp->io.ctx, st->held.fd_plus_one - 1, &count);

	if (r < 0)
		return kepler_error_set(err, r, "reading %s: %s", part->path, strerror(-r));
	part->event = kepler_counter_update(&st->counter, kepler_perf_count_uj(count, pp->scale[i]), mono_ns,
					    &delta);
	if (part->event == KEPLER_COUNTER_WRAPPED)
		m->zones[i].wraps++;
	else if (part->event == KEPLER_COUNTER_RESET)
		m->zones[i].resets++;
	kepler_meter_account(m, i, j, delta);
	return 0;
}

static int perf_read(struct kepler_meter *m, const struct kepler_meter_sample *s, struct kepler_error *err)
{
	int first = 0;

	for (unsigned i = 0; i < m->nzones; i++) {
		struct kepler_meter_zone *z = &m->zones[i];

		z->delta_uj = 0;
		for (unsigned j = 0; j < z->nparts; j++) {
			int r = read_part(m, i, j, s->mono_ns, first ? NULL : err);

			z->parts[j].read_failed = r < 0;
			if (r < 0) {
				z->parts[j].delta_uj = 0;
				z->read_errors++;
				if (!first)
					first = r;
			}
		}
	}
	return first;
}

static const struct kepler_meter_ops perf_ops = {
	.read = perf_read,
	.close = kepler_meter_free_priv,
};

/* Open event @ev on the PMU's CPU @c as part @pj of zone @zi, and read it once. */
static int open_part(struct kepler_meter *m, const struct kepler_rapl_pmu *pmu,
		     const struct kepler_perf_event *ev, unsigned zi, unsigned pj, unsigned c,
		     struct kepler_error *err)
{
	struct perf_priv *pp = m->priv;
	struct kepler_meter_part *part = &m->zones[zi].parts[pj];
	struct kepler_part_state *st = &m->states[zi][pj];
	uint64_t count;
	int fd, r;

	if (strcmp(ev->zone, "psys"))
		snprintf(part->name, sizeof(part->name), "%s-%d", ev->zone, pmu->package[c]);
	else
		snprintf(part->name, sizeof(part->name), "psys");
	if (asprintf(&part->path, "%s/events/energy-%s@cpu%d", pmu->dir, ev->name, pmu->cpu[c]) < 0) {
		part->path = NULL;
		return kepler_error_set(err, -ENOMEM, "out of memory");
	}
	st->kind = KEPLER_PART_ENERGY;
	st->counter.max_range_uj = kepler_perf_count_uj(UINT64_MAX, ev->scale);
	m->zones[zi].max_range_uj += st->counter.max_range_uj;
	fd = pp->io.open(pp->io.ctx, pmu->type, ev->config, pmu->cpu[c]);
	if (fd == -EACCES || fd == -EPERM)
		return kepler_error_set(err, -EACCES,
					"perf_event_open(power/energy-%s/, cpu %d): %s: needs CAP_PERFMON "
					"(kepler-collectd holds it at start as root), or "
					"kernel.perf_event_paranoid at most 0",
					ev->name, pmu->cpu[c], strerror(-fd));
	if (fd < 0)
		return kepler_error_set(err, fd, "perf_event_open(power/energy-%s/, cpu %d): %s%s", ev->name,
					pmu->cpu[c], strerror(-fd),
					fd == -ENOENT || fd == -ENODEV || fd == -EINVAL
						? " (the running kernel has no such PMU event: is host.sysfs "
						  "this kernel's /sys?)"
						: "");
	st->held.fd_plus_one = fd + 1; /* closed with the zones (kepler_sysfs_held_close) */
	r = pp->io.read(pp->io.ctx, fd, &count);
	if (r < 0)
		return kepler_error_set(err, r, "reading power/energy-%s/ on cpu %d: %s", ev->name,
					pmu->cpu[c], strerror(-r));
	return 0;
}

int kepler_meter_rapl_perf_open(struct kepler_meter *m, const struct kepler_meter_params *p,
				struct kepler_error *err)
{
	struct kepler_rapl_pmu *pmu = calloc(1, sizeof(*pmu));
	struct perf_priv *pp = calloc(1, sizeof(*pp));
	char found[256] = "";
	size_t o = 0;
	int r;

	if (!pmu || !pp) {
		free(pmu);
		free(pp);
		return kepler_error_set(err, -ENOMEM, "out of memory");
	}
	pp->io = *next_io;
	m->ops = &perf_ops;
	m->priv = pp;
	r = kepler_rapl_pmu_read(p->sysfs, pmu, err);
	for (unsigned e = 0; r == 0 && e < pmu->nevents; e++) {
		const struct kepler_perf_event *ev = &pmu->ev[e];
		unsigned zi = m->nzones, nparts = strcmp(ev->zone, "psys") ? pmu->ncpus : 1;
		struct kepler_meter_zone *z;

		if (o < sizeof(found))
			o += (size_t)snprintf(found + o, sizeof(found) - o, "%s%s", o ? ", " : "", ev->zone);
		if (!wanted(p->rapl_zones, ev->zone))
			continue;
		z = kepler_meter_add_zone(m, ev->zone, KEPLER_SOURCE_RAPL, nparts, err);
		if (!z) {
			r = err ? err->code : -ENOMEM;
			break;
		}
		pp->scale[zi] = ev->scale;
		for (unsigned c = 0; r == 0 && c < nparts; c++)
			r = open_part(m, pmu, ev, zi, c, c, err);
		if (r == 0)
			r = kepler_meter_zone_finish(z, nparts == 1 ? pmu->package[0] : -1, err);
	}
	if (r == 0 && m->nzones == 0)
		r = kepler_error_set(err, -ENOENT,
				     "no RAPL events left after filtering by rapl.zones (found: %s)", found);
	free(pmu);
	return r;
}
