// SPDX-License-Identifier: Apache-2.0
/*
 * The attribution policies' glue (policies.h).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_size.h"
#include "kepler/clock.h"
#include "kepler/log.h"
#include "policies.h"

struct kepler_policies {
	/* attribution.active-split: baseline */
	bool baseline_split;
	struct idle_watts {
		char zone[64];
		uint64_t uw;
	} idle[KEPLER_MAX_ZONES]; /* attribution.idle-watts */
	unsigned nidle;
	struct kepler_baseline_learner *learner;
	struct kepler_baseline baseline[KEPLER_MAX_ZONES]; /* this interval's, by meter zone */
	/* attribution.idle size */
	struct kepler_cpu_sizes *sizes;
	struct kepler_kube *kube;
	uint64_t sizes_unreadable_said;
};

/* One attribution.idle-watts item, ZONE=WATTS, into p->idle. */
static int parse_idle_watt(struct kepler_policies *p, const char *item)
{
	const char *eq = strchr(item, '=');
	char *end;
	double w;

	if (!eq || eq == item || (size_t)(eq - item) >= sizeof(p->idle[0].zone)) {
		kepler_err("attribution.idle-watts: '%s' is not ZONE=WATTS (e.g. package=12.5)", item);
		return -EINVAL;
	}
	errno = 0;
	w = strtod(eq + 1, &end);
	if (errno || end == eq + 1 || *end || !(w >= 0 && w <= 1e6)) {
		kepler_err("attribution.idle-watts: '%s': watts must be a number from 0 to 1000000", item);
		return -EINVAL;
	}
	if (p->nidle == KEPLER_MAX_ZONES) {
		kepler_err("attribution.idle-watts: more than %d zones", KEPLER_MAX_ZONES);
		return -EINVAL;
	}
	snprintf(p->idle[p->nidle].zone, sizeof(p->idle[0].zone), "%.*s", (int)(eq - item), item);
	for (unsigned k = 0; k < p->nidle; k++)
		if (!strcmp(p->idle[k].zone, p->idle[p->nidle].zone)) {
			kepler_err("attribution.idle-watts: zone '%s' given twice", p->idle[k].zone);
			return -EINVAL;
		}
	p->idle[p->nidle++].uw = (uint64_t)llround(w * 1e6);
	return 0;
}

/* The configured idle power of zone @name, or NULL. */
static const struct idle_watts *configured_idle(const struct kepler_policies *p, const char *name)
{
	for (unsigned k = 0; k < p->nidle; k++)
		if (!strcmp(p->idle[k].zone, name))
			return &p->idle[k];
	return NULL;
}

/*
 * The learner starts from the node's own history: the series records of
 * the last window of intervals (power and CPU usage per zone), so that a
 * restart does not forget the fit.
 */
static void seed_baseline(struct kepler_policies *p, const struct kepler_config *cfg,
			  struct kepler_store *store)
{
	uint64_t window = (uint64_t)cfg->collectd.attribution_baseline_window, span, now = kepler_wall_ns();
	struct kepler_series_record *recs = NULL;
	struct kepler_error err = { 0 };
	size_t n = 0, from, used = 0;

	span = window * cfg->collectd.monitor_interval_ns * 2;
	if (kepler_store_series(store, now > span ? now - span : 0, UINT64_MAX, &recs, &n, &err) < 0) {
		kepler_warn("cannot read the series to learn the idle baseline: %s", err.msg);
		return;
	}
	from = n > window ? n - window : 0;
	for (size_t i = from; i < n; i++) {
		const struct kepler_series_record *r = &recs[i];

		if (r->flags & KEPLER_SNAP_FIRST)
			continue;
		for (uint32_t z = 0; z < r->nzones; z++)
			kepler_baseline_learner_add(p->learner, r->zones[z].name, r->cpu_usage_ratio,
						    r->zones[z].energy_delta_uj, r->interval_ns);
		used++;
	}
	free(recs);
	if (used)
		kepler_info("idle baseline: learning from %zu intervals of the store's series", used);
}

static int open_baseline(struct kepler_policies *p, const struct kepler_config *cfg,
			 struct kepler_store *store)
{
	struct kepler_error err = { 0 };
	int r = 0;

	p->baseline_split = cfg->collectd.attribution_active_split == KEPLER_SPLIT_BASELINE;
	for (size_t i = 0; r == 0 && i < cfg->collectd.attribution_idle_watts.count; i++)
		r = parse_idle_watt(p, cfg->collectd.attribution_idle_watts.items[i]);
	if (r < 0 || !p->baseline_split)
		return r;
	r = kepler_baseline_learner_new((unsigned)cfg->collectd.attribution_baseline_window, &p->learner,
					&err);
	if (r < 0) {
		kepler_err("%s", err.msg);
		return r;
	}
	seed_baseline(p, cfg, store);
	return 0;
}

/* attribution.idle: say where idle energy goes; under size, find the cgroups' weights. */
static int open_sizes(struct kepler_policies *p, const struct kepler_config *cfg)
{
	struct kepler_error err = { 0 };
	int r;

	if (cfg->collectd.attribution_idle == KEPLER_IDLE_NONE) {
		kepler_info("idle energy stays at the node (attribution.idle none)");
		return 0;
	}
	if (cfg->collectd.attribution_idle == KEPLER_IDLE_CPU) {
		kepler_info("idle energy goes to workloads by their CPU time (attribution.idle cpu)");
		return 0;
	}
	r = kepler_cpu_sizes_open(cfg->collectd.host_sysfs, &p->sizes, &err);
	if (r < 0) {
		kepler_err("attribution.idle size: %s", err.msg);
		return r;
	}
	kepler_info("idle energy goes to workloads by their size (attribution.idle size): %s%s",
		    kepler_cpu_sizes_describe(p->sizes),
		    p->kube ? "; CPU requests from Kubernetes first" : "");
	return 0;
}

int kepler_policies_open(const struct kepler_config *cfg, struct kepler_store *store,
			 struct kepler_kube *kube, struct kepler_policies **ret)
{
	struct kepler_policies *p = calloc(1, sizeof(*p));
	int r;

	if (!p)
		return -ENOMEM;
	p->kube = kube;
	r = open_baseline(p, cfg, store);
	if (r == 0)
		r = open_sizes(p, cfg);
	if (r < 0) {
		kepler_policies_close(p);
		return r;
	}
	*ret = p;
	return 0;
}

/*
 * Each zone's idle baseline for this interval (baseline split only): the
 * configured power, or what the learner makes of the history including
 * this interval.
 */
const struct kepler_baseline *kepler_policies_baseline(struct kepler_policies *p,
						       const struct kepler_meter *meter, uint64_t interval_ns,
						       double usage)
{
	for (unsigned z = 0; z < kepler_meter_zone_count(meter); z++) {
		const struct kepler_meter_zone *mz = kepler_meter_zone(meter, z);
		const struct idle_watts *fixed = configured_idle(p, mz->name);

		p->baseline[z] = (struct kepler_baseline){ 0 };
		if (!p->baseline_split)
			continue;
		if (fixed) {
			p->baseline[z] = (struct kepler_baseline){ .idle_uw = fixed->uw,
								   .method = KEPLER_BASELINE_CONFIGURED };
			continue;
		}
		if (interval_ns &&
		    kepler_baseline_learner_add(p->learner, mz->name, usage, mz->delta_uj, interval_ns) < 0)
			kepler_warn("idle baseline: cannot learn zone %s (out of memory or too many zones)",
				    mz->name);
		kepler_baseline_learner_get(p->learner, mz->name, &p->baseline[z]);
	}
	return p->baseline;
}

bool kepler_policies_sized(const struct kepler_policies *p)
{
	return p->sizes != NULL;
}

void kepler_policies_begin(struct kepler_policies *p, uint64_t now_ns)
{
	if (p->sizes)
		kepler_cpu_sizes_begin(p->sizes, now_ns);
}

int kepler_policies_unit(struct kepler_policies *p, struct kepler_ledger_proc *proc, const char *cgroup)
{
	uint32_t request = 0;

	if (p->kube && proc->container_id[0]) {
		const struct kepler_kube_pod *pod = NULL;
		const struct kepler_kube_container *kc =
			kepler_kube_container(p->kube, proc->container_id, proc->pod_uid, &pod);

		if (kc)
			request = kc->cpu_request_mcpu;
	}
	return kepler_cpu_sizes_unit(p->sizes, proc->container_id, cgroup, request, &proc->unit);
}

void kepler_policies_input(struct kepler_policies *p, struct kepler_ledger_input *in)
{
	uint64_t unreadable;

	if (!p->sizes)
		return;
	in->units = kepler_cpu_sizes_units(p->sizes, &in->nunits);
	unreadable = kepler_cpu_sizes_unreadable(p->sizes);
	if (unreadable > p->sizes_unreadable_said) {
		kepler_debug("attribution.idle size: %llu cgroup weights unreadable so far (1024 shares "
			     "used for them)",
			     (unsigned long long)unreadable);
		p->sizes_unreadable_said = unreadable;
	}
}

void kepler_policies_close(struct kepler_policies *p)
{
	if (!p)
		return;
	kepler_cpu_sizes_close(p->sizes);
	kepler_baseline_learner_free(p->learner);
	free(p);
}
