// SPDX-License-Identifier: Apache-2.0
/*
 * The meter interface: choosing a source, the zones every source fills,
 * and the arithmetic of hardware energy counters (wraparound, resets) and
 * power sensors (integration over time), shared by the sources.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meter_internal.h"

#define NS_PER_S 1000000000ULL
/* uW * ns per uJ */
#define UWNS_PER_UJ 1000000000ULL
/* A power sensor reading above this (100 kW) is garbage, not a node. */
#define MAX_SENSOR_UW 100000000000ULL

static const char *const source_names[] = { "auto",        "rapl",      "hwmon",   "model", "fake",
					    "passthrough", "rapl-perf", "redfish", "ipmi" };

const char *kepler_meter_source_name(enum kepler_meter_source s)
{
	if ((unsigned)s < sizeof(source_names) / sizeof(source_names[0]))
		return source_names[s];
	return "unknown";
}

/* Could @delta_uj have been used in @dt_ns? (dt 0: unknown, yes.) */
static bool plausible(const struct kepler_counter *c, uint64_t delta_uj, uint64_t dt_ns)
{
	uint64_t watts = c->max_watts ? c->max_watts : KEPLER_RAPL_MAX_PLAUSIBLE_W;
	unsigned __int128 limit;

	if (dt_ns == 0)
		return true;
	/* W * ns / 1000 = uJ */
	limit = (unsigned __int128)watts * dt_ns / 1000;
	return delta_uj <= limit;
}

enum kepler_counter_event kepler_counter_update(struct kepler_counter *c, uint64_t raw_uj, uint64_t mono_ns,
						uint64_t *ret_delta_uj)
{
	uint64_t dt = c->primed && mono_ns > c->last_mono_ns ? mono_ns - c->last_mono_ns : 0;
	enum kepler_counter_event ev;
	uint64_t delta = 0;

	if (!c->primed) {
		ev = KEPLER_COUNTER_PRIMED;
	} else if (raw_uj >= c->last_raw_uj) {
		delta = raw_uj - c->last_raw_uj;
		ev = KEPLER_COUNTER_OK;
		if (!plausible(c, delta, dt)) {
			delta = 0;
			ev = KEPLER_COUNTER_RESET;
		}
	} else if (c->max_range_uj > 0 && c->last_raw_uj <= c->max_range_uj) {
		/* went backwards: a wrap if what it implies fits half the range */
		delta = (c->max_range_uj - c->last_raw_uj) + raw_uj;
		ev = KEPLER_COUNTER_WRAPPED;
		if (delta > c->max_range_uj / 2 || !plausible(c, delta, dt)) {
			delta = 0;
			ev = KEPLER_COUNTER_RESET;
		}
	} else {
		ev = KEPLER_COUNTER_RESET;
	}
	c->primed = true;
	c->last_raw_uj = raw_uj;
	c->last_mono_ns = mono_ns;
	*ret_delta_uj = delta;
	return ev;
}

/*
 * Trapezoidal integration of a power sensor: the energy between the last
 * reading and this one is the mean of the two powers times the elapsed
 * time. Energy below 1 uJ is carried to the next reading, not dropped.
 */
static uint64_t integrate_power(struct kepler_part_state *st, uint64_t power_uw, uint64_t mono_ns)
{
	unsigned __int128 e;
	uint64_t dt, delta;

	if (!st->primed || mono_ns <= st->last_mono_ns) {
		st->primed = true;
		st->last_power_uw = power_uw;
		st->last_mono_ns = mono_ns;
		return 0;
	}
	dt = mono_ns - st->last_mono_ns;
	e = ((unsigned __int128)st->last_power_uw + power_uw) * dt / 2 + st->remainder;
	delta = (uint64_t)(e / UWNS_PER_UJ);
	st->remainder = (uint64_t)(e % UWNS_PER_UJ);
	st->last_power_uw = power_uw;
	st->last_mono_ns = mono_ns;
	return delta;
}

uint64_t kepler_meter_energy_from_watts(struct kepler_part_state *st, double watts, uint64_t dt_ns)
{
	/* W * ns / 1000 = uJ; long double keeps 64 bits of mantissa */
	long double e = (long double)watts * (long double)dt_ns / 1000.0L + st->carry_uj;
	long double whole;

	if (!(e > 0)) {
		st->carry_uj = 0;
		return 0;
	}
	whole = roundl(e);
	st->carry_uj = (double)(e - whole);
	return (uint64_t)whole;
}

double kepler_meter_sample_ratio(const struct kepler_meter_sample *s)
{
	double r = s->cpu_usage_ratio;

	if (!(r >= 0))
		return 0;
	return r > 1 ? 1 : r;
}

void kepler_meter_account_watts(struct kepler_meter *m, struct kepler_estimate_clock *clk,
				const double *watts, const struct kepler_meter_sample *s)
{
	uint64_t dt = clk->primed && s->mono_ns > clk->last_mono_ns ? s->mono_ns - clk->last_mono_ns : 0;

	for (unsigned i = 0; i < m->nzones; i++) {
		struct kepler_part_state *st = &m->states[i][0];

		m->zones[i].delta_uj = 0;
		kepler_meter_account(m, i, 0,
				     kepler_meter_energy_from_watts(st, watts[st->source_index], dt));
		m->zones[i].parts[0].event = clk->primed ? KEPLER_COUNTER_OK : KEPLER_COUNTER_PRIMED;
	}
	clk->primed = true;
	clk->last_mono_ns = s->mono_ns;
}

void kepler_meter_free_priv(struct kepler_meter *m)
{
	free(m->priv);
	m->priv = NULL;
}

void kepler_meter_account(struct kepler_meter *m, unsigned i, unsigned j, uint64_t delta_uj)
{
	struct kepler_meter_zone *z = &m->zones[i];

	z->parts[j].delta_uj = delta_uj;
	z->parts[j].total_uj += delta_uj;
	z->delta_uj += delta_uj;
	z->total_uj += delta_uj;
}

static int read_part(struct kepler_meter *m, unsigned i, unsigned j, uint64_t mono_ns,
		     struct kepler_error *err)
{
	struct kepler_part_state *st = &m->states[i][j];
	struct kepler_meter_part *part = &m->zones[i].parts[j];
	uint64_t v, delta = 0;
	int r;

	r = kepler_sysfs_read_held_u64(st->file, &st->held, &v, err);
	if (r == -EACCES && !strstr(err ? err->msg : "", "restart"))
		return kepler_error_set(err, r, "permission denied reading %s (%s)", st->file,
					st->kind == KEPLER_PART_ENERGY && m->source == KEPLER_METER_RAPL
						? "root-only since Linux 5.10"
						: "run kepler-collectd as root");
	if (r < 0)
		return r;
	if (st->kind == KEPLER_PART_POWER) {
		if (v > MAX_SENSOR_UW)
			return kepler_error_set(err, -EINVAL,
						"%s reads %llu uW (over 100 kW): not a plausible power",
						st->file, (unsigned long long)v);
		delta = integrate_power(st, v, mono_ns);
		part->event = KEPLER_COUNTER_OK;
	} else {
		if (st->counter.max_range_uj && v > st->counter.max_range_uj)
			return kepler_error_set(
				err, -EINVAL, "%s reads %llu, above its max_energy_range_uj %llu", st->file,
				(unsigned long long)v, (unsigned long long)st->counter.max_range_uj);
		part->event = kepler_counter_update(&st->counter, v, mono_ns, &delta);
		if (part->event == KEPLER_COUNTER_WRAPPED)
			m->zones[i].wraps++;
		else if (part->event == KEPLER_COUNTER_RESET)
			m->zones[i].resets++;
	}
	kepler_meter_account(m, i, j, delta);
	return 0;
}

int kepler_meter_read_files(struct kepler_meter *m, const struct kepler_meter_sample *s,
			    struct kepler_error *err)
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

struct kepler_meter_zone *kepler_meter_add_zone(struct kepler_meter *m, const char *name,
						enum kepler_source source, unsigned nparts,
						struct kepler_error *err)
{
	struct kepler_meter_zone *z;
	unsigned i = m->nzones;

	if (i >= KEPLER_MAX_ZONES) {
		kepler_error_set(err, -ENOSPC, "more than %d energy zones", KEPLER_MAX_ZONES);
		return NULL;
	}
	z = &m->zones[i];
	memset(z, 0, sizeof(*z));
	z->parts = calloc(nparts, sizeof(*z->parts));
	m->states[i] = calloc(nparts, sizeof(*m->states[i]));
	if (!z->parts || !m->states[i]) {
		free(z->parts);
		free(m->states[i]);
		m->states[i] = NULL;
		z->parts = NULL;
		kepler_error_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	snprintf(z->name, sizeof(z->name), "%s", name);
	z->source = source;
	z->nparts = nparts;
	m->nzones++;
	return z;
}

int kepler_meter_zone_finish(struct kepler_meter_zone *z, int index, struct kepler_error *err)
{
	char *path;

	if (z->nparts == 1 && z->parts[0].path) {
		path = strdup(z->parts[0].path);
		z->index = index;
	} else {
		if (asprintf(&path, "aggregated-%s", z->name) < 0)
			path = NULL;
		z->index = -1;
	}
	if (!path)
		return kepler_error_set(err, -ENOMEM, "out of memory");
	free(z->path);
	z->path = path;
	return 0;
}

static int zone_cmp(const void *a, const void *b)
{
	const struct kepler_meter_zone *x = a, *y = b;
	int rx = kepler_zone_rank(x->name), ry = kepler_zone_rank(y->name);

	if (rx != ry)
		return rx - ry;
	return strcmp(x->name, y->name);
}

void kepler_meter_sort_zones(struct kepler_meter *m)
{
	/* zones and their states move together: sort an index, then permute */
	struct kepler_meter_zone zones[KEPLER_MAX_ZONES];
	struct kepler_part_state *states[KEPLER_MAX_ZONES];

	for (unsigned i = 0; i < m->nzones; i++) {
		zones[i] = m->zones[i];
		/* stash the old index in wraps (zero at open) while sorting */
		zones[i].wraps = i;
	}
	qsort(zones, m->nzones, sizeof(zones[0]), zone_cmp);
	for (unsigned i = 0; i < m->nzones; i++) {
		states[i] = m->states[zones[i].wraps];
		zones[i].wraps = 0;
	}
	memcpy(m->zones, zones, m->nzones * sizeof(zones[0]));
	memcpy(m->states, states, m->nzones * sizeof(states[0]));
}

static void free_zones(struct kepler_meter *m)
{
	for (unsigned i = 0; i < m->nzones; i++) {
		struct kepler_meter_zone *z = &m->zones[i];

		for (unsigned j = 0; j < z->nparts; j++) {
			free(z->parts[j].path);
			if (m->states[i]) {
				free(m->states[i][j].file);
				kepler_sysfs_held_close(&m->states[i][j].held);
			}
		}
		free(z->parts);
		free(z->path);
		free(m->states[i]);
		m->states[i] = NULL;
	}
	m->nzones = 0;
}

static void meter_reset(struct kepler_meter *m)
{
	if (m->ops && m->ops->close)
		m->ops->close(m);
	free_zones(m);
	memset(m, 0, sizeof(*m));
}

typedef int (*open_fn)(struct kepler_meter *, const struct kepler_meter_params *, struct kepler_error *);

static int open_one(struct kepler_meter *m, enum kepler_meter_source src, const struct kepler_meter_params *p,
		    struct kepler_error *err)
{
	static const open_fn fns[] = {
		[KEPLER_METER_RAPL] = kepler_meter_rapl_open,
		[KEPLER_METER_RAPL_PERF] = kepler_meter_rapl_perf_open,
		[KEPLER_METER_HWMON] = kepler_meter_hwmon_open,
		[KEPLER_METER_MODEL] = kepler_meter_model_open,
		[KEPLER_METER_FAKE] = kepler_meter_fake_open,
		[KEPLER_METER_PASSTHROUGH] = kepler_meter_passthrough_open,
		[KEPLER_METER_REDFISH] = kepler_meter_redfish_open,
		[KEPLER_METER_IPMI] = kepler_meter_ipmi_open,
	};
	int r;

	memset(m, 0, sizeof(*m));
	m->source = src;
	r = fns[src](m, p, err);
	if (r < 0)
		meter_reset(m);
	else
		kepler_meter_sort_zones(m);
	return r;
}

/*
 * Beside RAPL, under auto: the whole node's meter (hwmon), whose zone
 * `platform` covers what RAPL does not (fans, disks, NICs, PSU losses).
 * Not there: recorded in @attempts, and RAPL alone as before.
 */
static void open_platform(struct kepler_meter *m, const struct kepler_meter_params *p,
			  struct kepler_meter_attempts *attempts)
{
	struct kepler_meter *pm = calloc(1, sizeof(*pm));
	struct kepler_error e = { 0 };

	if (!pm)
		return;
	if (open_one(pm, KEPLER_METER_HWMON, p, &e) == 0 && m->nzones + pm->nzones <= KEPLER_MAX_ZONES) {
		m->platform = pm;
		return;
	}
	free(pm);
	if (attempts && attempts->count < sizeof(attempts->tried) / sizeof(attempts->tried[0])) {
		attempts->tried[attempts->count].source = KEPLER_METER_HWMON;
		attempts->tried[attempts->count].err = e;
		attempts->count++;
	}
}

/*
 * platform.redfish.enabled or platform.ipmi.enabled: the BMC is the
 * platform meter, whatever measures the CPU.
 */
static int open_bmc(struct kepler_meter *m, const struct kepler_meter_params *p, struct kepler_error *err)
{
	struct kepler_meter *pm = calloc(1, sizeof(*pm));
	int r;

	if (!pm)
		return kepler_error_set(err, -ENOMEM, "out of memory");
	r = open_one(pm, p->ipmi ? KEPLER_METER_IPMI : KEPLER_METER_REDFISH, p, err);
	if (r < 0) {
		free(pm);
		return r;
	}
	m->platform = pm;
	return 0;
}

int kepler_meter_open(const struct kepler_meter_params *p, struct kepler_meter_attempts *attempts,
		      struct kepler_meter **ret_meter, struct kepler_error *err)
{
	static const enum kepler_meter_source auto_order[] = {
		KEPLER_METER_RAPL,
		KEPLER_METER_RAPL_PERF,
		KEPLER_METER_HWMON,
		KEPLER_METER_MODEL,
	};
	struct kepler_meter *m;
	bool bmc = p->redfish || p->ipmi;
	int r = -ENOENT;

	if (attempts)
		attempts->count = 0;
	if (p->redfish && p->ipmi)
		return kepler_error_set(err, -EINVAL,
					"platform.redfish and platform.ipmi are both enabled: the BMC is "
					"read one way (choose one)");
	m = calloc(1, sizeof(*m));
	if (!m)
		return kepler_error_set(err, -ENOMEM, "out of memory");
	if (p->source != KEPLER_METER_AUTO) {
		r = open_one(m, p->source, p, err);
		goto out;
	}
	for (unsigned i = 0; i < sizeof(auto_order) / sizeof(auto_order[0]); i++) {
		struct kepler_error e = { 0 };

		if (bmc && auto_order[i] == KEPLER_METER_HWMON)
			continue; /* the BMC is the platform meter */
		r = open_one(m, auto_order[i], p, &e);
		if (r == 0 &&
		    (auto_order[i] == KEPLER_METER_RAPL || auto_order[i] == KEPLER_METER_RAPL_PERF) && !bmc)
			open_platform(m, p, attempts);
		if (r == 0)
			goto out;
		if (attempts) {
			attempts->tried[attempts->count].source = auto_order[i];
			attempts->tried[attempts->count].err = e;
			attempts->count++;
		}
		if (err)
			*err = e;
	}
out:
	if (r == 0 && bmc && p->source != KEPLER_METER_HWMON) {
		r = open_bmc(m, p, err);
		if (r < 0)
			meter_reset(m);
	}
	if (r < 0) {
		free(m);
		return r;
	}
	*ret_meter = m;
	return 0;
}

void kepler_meter_params_from_config(const struct kepler_config *cfg, struct kepler_meter_params *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->source = (enum kepler_meter_source)cfg->collectd.meter_source;
	ret->sysfs = cfg->collectd.host_sysfs;
	ret->rapl_zones = &cfg->collectd.rapl_zones;
	ret->hwmon_chips = &cfg->collectd.hwmon_chips;
	ret->model_file = cfg->collectd.meter_model_file;
	ret->fake_zones = &cfg->collectd.dev_fake_meter_zones;
	ret->fake_watts = cfg->collectd.dev_fake_meter_watts;
	ret->passthrough_path = cfg->collectd.passthrough_path;
	ret->redfish = cfg->collectd.redfish_enabled;
	ret->redfish_config = cfg->collectd.redfish_config_file;
	ret->redfish_node = cfg->collectd.redfish_node_name;
	ret->redfish_poll_ns = cfg->collectd.redfish_poll_ns;
	ret->redfish_timeout_ns = cfg->collectd.redfish_timeout_ns;
	ret->ipmi = cfg->collectd.ipmi_enabled;
	ret->ipmi_config = cfg->collectd.ipmi_config_file;
	ret->ipmi_node = cfg->collectd.ipmi_node_name;
	ret->ipmi_poll_ns = cfg->collectd.ipmi_poll_ns;
	ret->ipmi_timeout_ns = cfg->collectd.ipmi_timeout_ns;
}

int kepler_meter_read(struct kepler_meter *m, const struct kepler_meter_sample *s, struct kepler_error *err)
{
	struct kepler_error perr = { 0 };
	int r = m->ops->read(m, s, err), pr = m->platform ? kepler_meter_read(m->platform, s, &perr) : 0;

	if (r == 0 && pr < 0) {
		if (err)
			*err = perr;
		r = pr;
	}
	return r;
}

bool kepler_meter_has_platform(const struct kepler_meter *m)
{
	return m->platform != NULL;
}

enum kepler_meter_source kepler_meter_source(const struct kepler_meter *m)
{
	return m->source;
}

unsigned kepler_meter_zone_count(const struct kepler_meter *m)
{
	return m->nzones + (m->platform ? m->platform->nzones : 0);
}

const struct kepler_meter_zone *kepler_meter_zone(const struct kepler_meter *m, unsigned i)
{
	if (i < m->nzones)
		return &m->zones[i];
	return m->platform ? kepler_meter_zone(m->platform, i - m->nzones) : NULL;
}

const char *kepler_meter_describe(struct kepler_meter *m)
{
	size_t o = 0, size = sizeof(m->describe);

	o += (size_t)snprintf(m->describe, size, "%s:", kepler_meter_source_name(m->source));
	for (unsigned i = 0; i < m->nzones && o < size; i++) {
		const struct kepler_meter_zone *z = &m->zones[i];

		o += (size_t)snprintf(m->describe + o, size - o, "%s %s", i ? "," : "", z->name);
		if (o < size && z->nparts > 1)
			o += (size_t)snprintf(m->describe + o, size - o, " (%u parts)", z->nparts);
		if (o < size)
			o += (size_t)snprintf(m->describe + o, size - o, " [%s]", z->path);
	}
	if (m->platform && o < size)
		snprintf(m->describe + o, size - o, "; and the platform %s",
			 kepler_meter_describe(m->platform));
	return m->describe;
}

void kepler_meter_close(struct kepler_meter *m)
{
	if (!m)
		return;
	kepler_meter_close(m->platform);
	meter_reset(m);
	free(m);
}
