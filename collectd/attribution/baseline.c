// SPDX-License-Identifier: Apache-2.0
/*
 * The idle baseline learner (see baseline.h): a ring of (usage, watts)
 * samples per zone, refitted when a sample arrives. A window of a few
 * hundred samples costs a few microseconds per interval.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baseline.h"

struct zone_fit {
	char name[64];                  /* "" when unused */
	double *usage, *watts;          /* rings of window entries */
	unsigned n, head;               /* samples held, next slot */
	struct kepler_baseline trusted; /* the newest trusted fit, method NONE if none yet */
	struct kepler_baseline now;     /* what get() returns */
};

struct kepler_baseline_learner {
	unsigned window;
	struct zone_fit zones[KEPLER_MAX_ZONES];
};

int kepler_baseline_learner_new(unsigned window, struct kepler_baseline_learner **ret,
				struct kepler_error *err)
{
	struct kepler_baseline_learner *l = calloc(1, sizeof(*l));

	if (!l)
		return kepler_error_set(err, -ENOMEM, "out of memory");
	l->window = window < KEPLER_BASELINE_MIN_FIT ? KEPLER_BASELINE_MIN_FIT : window;
	*ret = l;
	return 0;
}

static struct zone_fit *find(struct kepler_baseline_learner *l, const char *zone)
{
	for (int z = 0; z < KEPLER_MAX_ZONES && l->zones[z].name[0]; z++)
		if (!strcmp(l->zones[z].name, zone))
			return &l->zones[z];
	return NULL;
}

static int add_zone(struct kepler_baseline_learner *l, const char *zone, struct zone_fit **ret)
{
	struct zone_fit *f = NULL;

	for (int z = 0; z < KEPLER_MAX_ZONES && !f; z++)
		if (!l->zones[z].name[0])
			f = &l->zones[z];
	if (!f)
		return -ENOSPC;
	f->usage = calloc(l->window, sizeof(double));
	f->watts = calloc(l->window, sizeof(double));
	if (!f->usage || !f->watts) {
		free(f->usage);
		free(f->watts);
		f->usage = f->watts = NULL;
		return -ENOMEM;
	}
	snprintf(f->name, sizeof(f->name), "%s", zone[0] ? zone : "?");
	*ret = f;
	return 0;
}

static uint64_t to_uw(double watts)
{
	return watts <= 0 ? 0 : (uint64_t)llround(watts * 1e6);
}

/* Least squares over the window; true if the fit is trusted (into @ret). */
static bool fit(const struct zone_fit *f, struct kepler_baseline *ret)
{
	double mu = 0, mw = 0, suu = 0, suw = 0, sww = 0, slope, idle, rss, se, r2, lo = 1, hi = 0;
	unsigned n = f->n;

	if (n < KEPLER_BASELINE_MIN_FIT)
		return false;
	for (unsigned i = 0; i < n; i++) {
		mu += f->usage[i];
		mw += f->watts[i];
		lo = fmin(lo, f->usage[i]);
		hi = fmax(hi, f->usage[i]);
	}
	if (hi - lo < KEPLER_BASELINE_MIN_SPREAD)
		return false; /* no load variation: the intercept would be a far extrapolation */
	mu /= n;
	mw /= n;
	for (unsigned i = 0; i < n; i++) {
		double du = f->usage[i] - mu, dw = f->watts[i] - mw;

		suu += du * du;
		suw += du * dw;
		sww += dw * dw;
	}
	if (suu < 1e-9)
		return false; /* one usage only: no line through it */
	slope = suw / suu;
	idle = mw - slope * mu;
	rss = sww - slope * suw;
	if (rss < 0)
		rss = 0;
	se = sqrt(rss / (n - 2) * (1.0 / n + mu * mu / suu));
	r2 = sww > 0 ? 1 - rss / sww : 1;
	if (slope < 0 || idle < 0 || se > fmax(0.025 * idle, 0.25))
		return false;
	*ret = (struct kepler_baseline){
		.idle_uw = to_uw(idle),
		.method = KEPLER_BASELINE_FITTED,
		.quality_ppm = (uint32_t)llround(fmin(fmax(r2, 0), 1) * 1e6),
		.samples = n,
	};
	return true;
}

/*
 * The newest trusted fit, kept until a newer one; until there is one,
 * UNFITTED: the zone is split by the usage ratio. The lowest power seen is
 * not taken for the idle power: on a node busy since start it is the
 * power at that load (37-39.5 W where the idle is 12 W).
 */
static void refit(struct zone_fit *f)
{
	if (fit(f, &f->trusted) || f->trusted.method == KEPLER_BASELINE_FITTED)
		f->now = f->trusted;
	else
		f->now = (struct kepler_baseline){ .method = KEPLER_BASELINE_UNFITTED, .samples = f->n };
}

int kepler_baseline_learner_add(struct kepler_baseline_learner *l, const char *zone, double usage,
				uint64_t delta_uj, uint64_t interval_ns)
{
	struct zone_fit *f = find(l, zone);
	int r;

	if (delta_uj == 0 || interval_ns == 0 || !(usage >= 0 && usage <= 1))
		return 0;
	if (!f) {
		r = add_zone(l, zone, &f);
		if (r < 0)
			return r;
	}
	f->usage[f->head] = usage;
	f->watts[f->head] = (double)delta_uj * 1e3 / (double)interval_ns; /* uJ/ns x 1e3 = W */
	f->head = (f->head + 1) % l->window;
	if (f->n < l->window)
		f->n++;
	refit(f);
	return 0;
}

void kepler_baseline_learner_get(struct kepler_baseline_learner *l, const char *zone,
				 struct kepler_baseline *ret)
{
	struct zone_fit *f = find(l, zone);

	*ret = f ? f->now : (struct kepler_baseline){ 0 };
}

void kepler_baseline_learner_free(struct kepler_baseline_learner *l)
{
	if (!l)
		return;
	for (int z = 0; z < KEPLER_MAX_ZONES; z++) {
		free(l->zones[z].usage);
		free(l->zones[z].watts);
	}
	free(l);
}
