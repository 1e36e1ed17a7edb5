/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/attribution/policies.h: the collector's glue to the attribution policies
 * (docs/attribution.md). attribution.active-split baseline: each meter
 * zone's idle baseline per interval, configured (attribution.idle-watts)
 * or learnt (baseline.h) from the store's series and each interval since.
 * attribution.idle size: each process's unit (its container, else its
 * cgroup) and the units' sizes (workloads/cpu_size.h), CPU requests from
 * Kubernetes first when kube names are on.
 */
#ifndef KEPLER_COLLECTD_POLICIES_H
#define KEPLER_COLLECTD_POLICIES_H

#include <stdint.h>

#include "baseline.h"
#include "kepler/config.h"
#include "kepler/store.h"
#include "kube.h"
#include "ledger.h"
#include "meter.h"

struct kepler_policies;

/*
 * Read attribution.* of @cfg and say where idle energy goes. The learner
 * starts from @store's series; @kube (may be NULL) gives CPU requests
 * under attribution.idle size, and must outlive the policies. Errors,
 * logged: -EINVAL (a bad attribution.idle-watts), -ENOMEM, and the cgroup
 * sizes' (kepler_cpu_sizes_open()).
 */
int kepler_policies_open(const struct kepler_config *cfg, struct kepler_store *store,
			 struct kepler_kube *kube, struct kepler_policies **ret);

/*
 * This interval's idle baseline of each zone of @meter, just read
 * (@interval_ns 0 on the first interval: nothing learnt from it); all zero
 * unless the active split is baseline. Valid until the next call.
 */
const struct kepler_baseline *kepler_policies_baseline(struct kepler_policies *p,
						       const struct kepler_meter *meter, uint64_t interval_ns,
						       double usage);

/* True when processes have units (attribution.idle size). */
bool kepler_policies_sized(const struct kepler_policies *p);

/* Before a round of kepler_policies_unit(): a new interval at @now_ns. */
void kepler_policies_begin(struct kepler_policies *p, uint64_t now_ns);

/* Set @proc's unit from its container or @cgroup (attribution.idle size). -ENOMEM. */
int kepler_policies_unit(struct kepler_policies *p, struct kepler_ledger_proc *proc, const char *cgroup);

/* The units and their sizes into @in (nothing unless attribution.idle size). */
void kepler_policies_input(struct kepler_policies *p, struct kepler_ledger_input *in);

void kepler_policies_close(struct kepler_policies *p);

#endif /* KEPLER_COLLECTD_POLICIES_H */
