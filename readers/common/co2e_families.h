/* SPDX-License-Identifier: Apache-2.0 */
/*
 * readers/common/co2e_families.h: the CO2e counter families, beside the joules
 * ones, while the collector records a carbon intensity (carbon.intensity or
 * carbon.intensity-file). Their counters are the store's history ledger
 * (kepler/history.h): the newest tier record and every snapshot after it,
 * each at the intensity recorded with it, so that they are the exact sums
 * kepler-report gives, and survive restarts of the collector and of the
 * exporter. kepler-exporter serves them, kepler-push sends them: the same
 * text, so the same values. Families (grams, to the µg):
 *   kepler_node_co2e_grams_total{node_name,zone}
 *   kepler_pod_co2e_grams_total{node_name,pod_id,pod_name,pod_namespace,zone}
 *   kepler_container_co2e_grams_total{node_name,container_id,container_name,pod_id,zone}
 *   kepler_vm_co2e_grams_total{node_name,vm_id,vm_name,zone}
 *   kepler_carbon_intensity_grams_per_kwh{node_name} (the newest snapshot's)
 * each of a workload level in metrics.level; and for the chargeback levels
 * (KEPLER_LEVEL_NAMESPACE, _OWNER), with or without an intensity, the
 * joules (active and idle) and CO2e of each namespace's and each pod
 * owner's pods, summed from the same ledger:
 *   kepler_namespace_cpu_joules_total{node_name,pod_namespace,zone}
 *   kepler_namespace_co2e_grams_total{node_name,pod_namespace,zone}
 *   kepler_owner_cpu_joules_total{node_name,owner_kind,owner_name,pod_namespace,zone}
 *   kepler_owner_co2e_grams_total{node_name,owner_kind,owner_name,pod_namespace,zone}
 */
#ifndef KEPLER_READERS_CO2E_FAMILIES_H
#define KEPLER_READERS_CO2E_FAMILIES_H

#include "kepler/buf.h"
#include "kepler/fmt.h"
#include "kepler/snapshot.h"
#include "kepler/store.h"

struct kepler_co2e_families;

/* A follower with no ledger yet (built at the first snapshot with an intensity); NULL when memory is short. */
struct kepler_co2e_families *kepler_co2e_families_new(void);
void kepler_co2e_families_free(struct kepler_co2e_families *c);
/* Forget the ledger: the store was closed (the next may be another store, its seqs anew). */
void kepler_co2e_families_reset(struct kepler_co2e_families *c);

/*
 * Bring the ledger to @snap (the snapshot being rendered) and append the
 * families of @levels (enum kepler_level) to @out: the CO2e ones while
 * @snap has an intensity recorded, the chargeback joules always. With
 * @samples, each sample is also added there (kepler_fmt_prom_samples()).
 */
void kepler_co2e_families_render(struct kepler_co2e_families *c, struct kepler_store *store,
				 const struct kepler_snapshot *snap, const char *node_name, unsigned levels,
				 struct kepler_buf *out, struct kepler_prom_samples *samples);

#endif
