/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/attribution/baseline.h: each zone's idle power, learned online
 * from the node's own history (attribution.active-split: baseline).
 *
 * Every interval adds one sample per zone: the zone's mean power and the
 * node's CPU usage ratio. Over a sliding window of the newest samples, a
 * least-squares line power = idle + slope x usage is fitted; its intercept
 * is the idle baseline when the fit is trustworthy: slope and intercept not
 * negative, and the intercept's standard error at most 2.5 % of it (or
 * 0.25 W). A trusted fit is kept until a newer trusted fit replaces it, so
 * hours at one steady load do not forget it. Before the first trusted fit
 * the baseline is the lowest power in the window (an upper bound of idle,
 * give or take the meter's noise: no zone draws less than its idle power).
 */
#ifndef KEPLER_COLLECTD_BASELINE_H
#define KEPLER_COLLECTD_BASELINE_H

#include <stdint.h>

#include "kepler/error.h"
#include "kepler/snapshot.h"

/* Fewest samples before a fit is tried. */
#define KEPLER_BASELINE_MIN_FIT 8
/* A fit needs load variation: the window's CPU usage spans at least this much (of all CPUs). */
#define KEPLER_BASELINE_MIN_SPREAD 0.2

struct kepler_baseline_learner;

/* A learner keeping the newest @window samples per zone (at least KEPLER_BASELINE_MIN_FIT). */
int kepler_baseline_learner_new(unsigned window, struct kepler_baseline_learner **ret,
				struct kepler_error *err);

/*
 * One interval of zone @zone: @delta_uj over @interval_ns at node CPU
 * usage @usage (0..1). Intervals without energy or length are ignored
 * (a meter that failed must not teach that idle is 0 W). -ENOMEM, or
 * -ENOSPC past KEPLER_MAX_ZONES zones; the learner is unchanged then.
 */
int kepler_baseline_learner_add(struct kepler_baseline_learner *l, const char *zone, double usage,
				uint64_t delta_uj, uint64_t interval_ns);

/* The baseline of zone @zone now: method NONE when it has no sample yet. */
void kepler_baseline_learner_get(struct kepler_baseline_learner *l, const char *zone,
				 struct kepler_baseline *ret);

void kepler_baseline_learner_free(struct kepler_baseline_learner *l);

#endif /* KEPLER_COLLECTD_BASELINE_H */
