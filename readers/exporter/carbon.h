/* SPDX-License-Identifier: Apache-2.0 */
/*
 * readers/exporter/carbon.h: the CO2e counter families, beside the joules
 * ones, while the collector records a carbon intensity (carbon.intensity or
 * carbon.intensity-file). Their counters are the store's history ledger
 * (kepler/history.h): the newest tier record and every snapshot after it,
 * each at the intensity recorded with it, so that they are the exact sums
 * kepler-report gives, and survive restarts of the collector and of the
 * exporter. Families (grams, to the mg):
 *   kepler_node_co2e_grams_total{node_name,zone}
 *   kepler_pod_co2e_grams_total{node_name,pod_id,pod_name,pod_namespace,zone}
 *   kepler_container_co2e_grams_total{node_name,container_id,container_name,pod_id,zone}
 *   kepler_vm_co2e_grams_total{node_name,vm_id,vm_name,zone}
 *   kepler_carbon_intensity_grams_per_kwh{node_name} (the newest snapshot's)
 */
#ifndef KEPLER_EXPORTER_CARBON_H
#define KEPLER_EXPORTER_CARBON_H

#include "kepler/buf.h"
#include "kepler/snapshot.h"
#include "kepler/store.h"

struct kepler_exporter_carbon;

/* A follower with no ledger yet (built at the first snapshot with an intensity); NULL when memory is short. */
struct kepler_exporter_carbon *kepler_exporter_carbon_new(void);
void kepler_exporter_carbon_free(struct kepler_exporter_carbon *c);

/*
 * Bring the ledger to @snap (the snapshot being rendered) and append the
 * families to @out; nothing while @snap has no intensity recorded.
 */
void kepler_exporter_carbon_render(struct kepler_exporter_carbon *c, struct kepler_store *store,
				   const struct kepler_snapshot *snap, const char *node_name,
				   struct kepler_buf *out);

#endif
