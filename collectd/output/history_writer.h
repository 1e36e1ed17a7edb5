/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/output/history_writer.h: the collector's history (docs/history.md).
 * One ledger (kepler/history.h) of every identity's cumulative energy, CPU
 * time and CO2e, restored at start from the store's newest tier record and
 * the snapshots after it; at each store.tiers boundary its state as of the
 * last snapshot at or before the boundary is staged as a tier record, to be
 * written in the transaction of the snapshot that crosses the boundary; the
 * carbon intensity in force (carbon.intensity, or carbon.intensity-file,
 * re-read when it changes) is recorded with every snapshot.
 */
#ifndef KEPLER_COLLECTD_HISTORY_WRITER_H
#define KEPLER_COLLECTD_HISTORY_WRITER_H

#include "kepler/config.h"
#include "kepler/snapshot.h"
#include "kepler/store.h"

struct kepler_history_writer;

/*
 * Parse store.tiers and carbon.*, and restore the ledger from @store.
 * Errors, logged: -EINVAL (a bad tier or intensity, naming it), -ENOMEM.
 */
int kepler_history_writer_open(const struct kepler_config *cfg, struct kepler_store *store,
			       struct kepler_history_writer **ret);

/* Before committing @snap (not yet numbered): stage the tier records of the boundaries it crosses, and its intensity. */
void kepler_history_writer_stage(struct kepler_history_writer *w, struct kepler_store *store,
				 const struct kepler_snapshot *snap);

/* After @snap was committed (numbered): add it to the ledger. */
void kepler_history_writer_committed(struct kepler_history_writer *w, const struct kepler_snapshot *snap);

/* The intensity in force now, mg CO2e per kWh (0: none known). */
uint32_t kepler_history_writer_intensity(const struct kepler_history_writer *w);

void kepler_history_writer_close(struct kepler_history_writer *w);

/* Parse "PERIOD:KEEP" (1s and up; KEEP at least PERIOD). -EINVAL. */
int kepler_tier_parse(const char *s, uint32_t *ret_period_s, uint64_t *ret_keep_ns);

#endif
