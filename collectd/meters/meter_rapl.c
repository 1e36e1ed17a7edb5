// SPDX-License-Identifier: Apache-2.0
/*
 * RAPL through the powercap sysfs interface (drivers/powercap/intel_rapl_*,
 * also used for AMD): <sysfs>/class/powercap/intel-rapl:N is socket N's
 * package domain, intel-rapl:N:M its sub-domains (core, uncore, dram),
 * intel-rapl-mmio:N the same package counter reached through MMIO. Each
 * has `name`, `energy_uj` and `max_energy_range_uj`.
 *
 * The same domain of every socket is one zone ("package" = package-0 +
 * package-1), each socket kept as a part. A domain seen both through MSR
 * (intel-rapl:) and MMIO (intel-rapl-mmio:) is counted once, MSR first.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "kepler/log.h"
#include "meter_internal.h"

#define MAX_DOMAINS 128

struct domain {
	char entry[64];                   /* "intel-rapl:0:1" */
	char base[KEPLER_METER_NAME_MAX]; /* "package" */
	char name[KEPLER_METER_NAME_MAX]; /* "package-0" */
	int index;
	bool mmio;
	bool dropped;
};

struct discovery {
	char *dir; /* <sysfs>/class/powercap */
	struct domain d[MAX_DOMAINS];
	unsigned n;
};

static bool is_rapl_entry(const char *name, bool *ret_mmio)
{
	const char *p;

	if (!strncmp(name, "intel-rapl-mmio:", 16)) {
		p = name + 16;
		*ret_mmio = true;
	} else if (!strncmp(name, "intel-rapl:", 11)) {
		p = name + 11;
		*ret_mmio = false;
	} else {
		return false;
	}
	/* N or N:M */
	if (!isdigit((unsigned char)*p))
		return false;
	while (isdigit((unsigned char)*p) || (*p == ':' && isdigit((unsigned char)p[1])))
		p++;
	return *p == '\0';
}

/* "package-0" -> "package", 0; "dram" -> "dram", -1 */
static void split_name(const char *name, char *base, size_t size, int *ret_index)
{
	const char *dash = strrchr(name, '-');
	size_t len = strlen(name);
	char *end;
	long idx;

	*ret_index = -1;
	if (dash && dash[1] && isdigit((unsigned char)dash[1])) {
		idx = strtol(dash + 1, &end, 10);
		if (!*end && idx >= 0 && idx <= 4096) {
			len = (size_t)(dash - name);
			*ret_index = (int)idx;
		}
	}
	if (len >= size)
		len = size - 1;
	memmove(base, name, len);
	base[len] = '\0';
}

static bool name_ok(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '-' && *s != '_' && *s != '.')
			return false;
	return true;
}

static int scan_domains(struct discovery *dc, struct kepler_error *err)
{
	struct dirent **ents = NULL;
	int n, r = 0;

	n = scandir(dc->dir, &ents, NULL, versionsort);
	if (n < 0) {
		r = -errno;
		if (r == -ENOENT)
			return kepler_error_set(err, r,
						"no RAPL: %s does not exist (a VM, or no powercap "
						"driver: modprobe intel_rapl_msr)",
						dc->dir);
		return kepler_error_set(err, r, "cannot list %s: %s", dc->dir, strerror(-r));
	}
	for (int i = 0; i < n; i++) {
		struct domain *d = &dc->d[dc->n];
		char path[4096];
		bool mmio;

		if (r == 0 && is_rapl_entry(ents[i]->d_name, &mmio) && dc->n < MAX_DOMAINS) {
			snprintf(path, sizeof(path), "%s/%s/name", dc->dir, ents[i]->d_name);
			memset(d, 0, sizeof(*d));
			snprintf(d->entry, sizeof(d->entry), "%s", ents[i]->d_name);
			d->mmio = mmio;
			r = kepler_sysfs_read_line(path, d->name, sizeof(d->name), err);
			if (r == -ENOENT) {
				r = 0; /* no name: not an energy domain (as procfs/sysfs readers do) */
			} else if (r == 0 && !name_ok(d->name)) {
				r = kepler_error_set(err, -EINVAL, "%s holds an invalid zone name", path);
			} else if (r == 0) {
				split_name(d->name, d->base, sizeof(d->base), &d->index);
				dc->n++;
			}
		}
		free(ents[i]);
	}
	free(ents);
	if (r == 0 && dc->n == 0)
		r = kepler_error_set(err, -ENOENT, "no RAPL zones in %s", dc->dir);
	return r;
}

/* Names without a numeric suffix (dram, core) get the running count of that name. */
static void assign_indexes(struct discovery *dc)
{
	for (unsigned i = 0; i < dc->n; i++) {
		int count = 0;

		if (dc->d[i].index >= 0)
			continue;
		for (unsigned j = 0; j < i; j++)
			if (!strcmp(dc->d[j].base, dc->d[i].base) && dc->d[j].mmio == dc->d[i].mmio)
				count++;
		dc->d[i].index = count;
	}
}

static bool wanted(const struct kepler_strlist *zones, const char *base)
{
	if (!zones || zones->count == 0)
		return true;
	for (size_t i = 0; i < zones->count; i++)
		if (!strcasecmp(zones->items[i], base))
			return true;
	return false;
}

static void filter_and_dedup(struct discovery *dc, const struct kepler_strlist *zones)
{
	for (unsigned i = 0; i < dc->n; i++) {
		struct domain *d = &dc->d[i];

		if (!wanted(zones, d->base)) {
			d->dropped = true;
			continue;
		}
		if (!d->mmio)
			continue;
		for (unsigned j = 0; j < dc->n; j++)
			if (!dc->d[j].mmio && !strcmp(dc->d[j].base, d->base) && dc->d[j].index == d->index)
				d->dropped = true;
	}
}

static void found_names(const struct discovery *dc, char *buf, size_t size)
{
	size_t o = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < dc->n && o < size; i++) {
		bool dup = false;

		for (unsigned j = 0; j < i; j++)
			dup |= !strcmp(dc->d[j].base, dc->d[i].base);
		if (!dup)
			o += (size_t)snprintf(buf + o, size - o, "%s%s", o ? ", " : "", dc->d[i].base);
	}
}

/* the first read of each energy_uj: tries, and the pause between them */
#define START_READ_TRIES 10
#define START_READ_PAUSE_NS 100000000L

static int setup_part(struct kepler_meter *m, struct kepler_meter_zone *z, unsigned zi, unsigned pj,
		      const struct discovery *dc, const struct domain *d, struct kepler_error *err)
{
	struct kepler_meter_part *part = &z->parts[pj];
	struct kepler_part_state *st = &m->states[zi][pj];
	uint64_t v;
	char *range;
	int r;

	snprintf(part->name, sizeof(part->name), "%s", d->name);
	part->path = kepler_path_join(dc->dir, d->entry);
	st->kind = KEPLER_PART_ENERGY;
	st->file = part->path ? kepler_path_join(part->path, "energy_uj") : NULL;
	range = part->path ? kepler_path_join(part->path, "max_energy_range_uj") : NULL;
	if (!st->file || !range) {
		free(range);
		return kepler_error_set(err, -ENOMEM, "out of memory");
	}
	r = kepler_sysfs_read_u64(range, &st->counter.max_range_uj, err);
	free(range);
	if (r < 0)
		return r;
	z->max_range_uj += st->counter.max_range_uj;
	/*
	 * One read now, so that a root-only energy_uj fails at start, not
	 * later. Anything else is tried again for a while (sysfs reads are
	 * atomic, but a tree written by a stand-in may not be): one bad read
	 * must not turn a restart into a switch to the power model.
	 */
	for (int tries = 0; tries < START_READ_TRIES; tries++) {
		r = kepler_sysfs_read_held_u64(st->file, &st->held, &v, err);
		if (r == 0 || r == -EACCES || r == -ENOENT || r == -ENOMEM)
			break;
		nanosleep(&(struct timespec){ .tv_nsec = START_READ_PAUSE_NS }, NULL);
	}
	if (r == -EACCES)
		return kepler_error_set(err, r,
					"permission denied reading %s (root-only since Linux 5.10): "
					"run kepler-collectd as root",
					st->file);
	return r;
}

static int build_zones(struct kepler_meter *m, const struct discovery *dc, struct kepler_error *err)
{
	bool used[MAX_DOMAINS] = { false };

	for (unsigned i = 0; i < dc->n; i++) {
		struct kepler_meter_zone *z;
		unsigned nparts = 0, zi = m->nzones, pj = 0;
		int r;

		if (dc->d[i].dropped || used[i])
			continue;
		for (unsigned j = i; j < dc->n; j++)
			nparts += !dc->d[j].dropped && !strcmp(dc->d[j].base, dc->d[i].base);
		z = kepler_meter_add_zone(m, dc->d[i].base, KEPLER_SOURCE_RAPL, nparts, err);
		if (!z)
			return err ? err->code : -ENOMEM;
		for (unsigned j = i; j < dc->n; j++) {
			if (dc->d[j].dropped || strcmp(dc->d[j].base, dc->d[i].base))
				continue;
			used[j] = true;
			r = setup_part(m, z, zi, pj++, dc, &dc->d[j], err);
			if (r < 0)
				return r;
		}
		r = kepler_meter_zone_finish(z, dc->d[i].index, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * Domains that appear after start (a hot-plugged socket, a driver loaded
 * late) are not measured: their energy files are opened at start, before
 * the privilege drop. The powercap directory is listed once a minute and
 * a new domain is logged, once, as needing a restart.
 */
#define RESCAN_NS (60ULL * 1000000000ULL)

struct rapl_priv {
	unsigned entries; /* RAPL entries at start */
	unsigned seen;    /* the most seen since, said once */
	uint64_t next_scan_ns;
	char dir[4096];
};

static unsigned count_entries(const char *dir)
{
	struct dirent *de;
	unsigned n = 0;
	bool mmio;
	DIR *d = opendir(dir);

	if (!d)
		return 0;
	while ((de = readdir(d)))
		n += is_rapl_entry(de->d_name, &mmio);
	closedir(d);
	return n;
}

static int rapl_read(struct kepler_meter *m, const struct kepler_meter_sample *s, struct kepler_error *err)
{
	struct rapl_priv *p = m->priv;
	int r = kepler_meter_read_files(m, s, err);
	unsigned now;

	if (!p || s->mono_ns < p->next_scan_ns)
		return r;
	p->next_scan_ns = s->mono_ns + RESCAN_NS;
	now = count_entries(p->dir);
	if (now > p->entries && now > p->seen) {
		kepler_warn("%u new RAPL domain(s) in %s since start (%u then, %u now): not measured; "
			    "restart kepler-collectd to measure them",
			    now - p->entries, p->dir, p->entries, now);
		p->seen = now;
	}
	return r;
}

unsigned kepler_meter_new_domains(const struct kepler_meter *m)
{
	const struct rapl_priv *p = m->source == KEPLER_METER_RAPL ? m->priv : NULL;

	return p && p->seen > p->entries ? p->seen - p->entries : 0;
}

static const struct kepler_meter_ops rapl_ops = {
	.read = rapl_read,
	.close = kepler_meter_free_priv,
};

int kepler_meter_rapl_open(struct kepler_meter *m, const struct kepler_meter_params *p,
			   struct kepler_error *err)
{
	struct discovery *dc;
	char found[512];
	int r;

	dc = calloc(1, sizeof(*dc));
	if (!dc)
		return kepler_error_set(err, -ENOMEM, "out of memory");
	m->ops = &rapl_ops;
	dc->dir = kepler_path_join(p->sysfs ? p->sysfs : "/sys", "class/powercap");
	if (!dc->dir) {
		r = kepler_error_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	r = scan_domains(dc, err);
	if (r < 0)
		goto out;
	assign_indexes(dc);
	filter_and_dedup(dc, p->rapl_zones);
	r = build_zones(m, dc, err);
	if (r == 0 && m->nzones > 0) {
		struct rapl_priv *rp = calloc(1, sizeof(*rp));

		if (!rp) {
			r = kepler_error_set(err, -ENOMEM, "out of memory");
			goto out;
		}
		snprintf(rp->dir, sizeof(rp->dir), "%s", dc->dir);
		rp->entries = rp->seen = count_entries(dc->dir);
		rp->next_scan_ns = 0; /* the first read sets the clock */
		m->priv = rp;
	}
	if (r == 0 && m->nzones == 0) {
		found_names(dc, found, sizeof(found));
		r = kepler_error_set(err, -ENOENT,
				     "no RAPL zones left after filtering by rapl.zones (found: %s)", found);
	}
out:
	free(dc->dir);
	free(dc);
	return r;
}
