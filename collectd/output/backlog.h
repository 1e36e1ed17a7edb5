/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/output/backlog.h: the intervals the store could not take
 * (a full disk, an I/O error), held until it can.
 *
 * The collector goes on measuring while the store refuses commits. Each
 * interval's snapshot is merged with what the backlog holds: the deltas of
 * every workload and of the node's zones added up, the totals the newest
 * (the ledger's totals are cumulative already), the interval and the CPU
 * time summed. Workloads the newest snapshot no longer has (ended and
 * dropped by the carry rules, or idle) keep their place with their last
 * totals, so that every delta of the gap lands in one snapshot and, per
 * zone, the sums still hold exactly:
 *   sum(process deltas) == node active delta,  and so on up the levels.
 * When the store takes that snapshot, its deltas cover the whole gap:
 * no energy lost, none invented.
 *
 * At most max_workloads entries are held beyond the newest snapshot's own;
 * past that, the oldest-ended ones are dropped and counted in the merged
 * snapshot's lost_entries (their energy stays in the node's and their
 * container's figures, not in the process rows).
 */
#ifndef KEPLER_COLLECTD_BACKLOG_H
#define KEPLER_COLLECTD_BACKLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kepler/error.h"
#include "kepler/snapshot.h"

struct kepler_backlog;

int kepler_backlog_new(size_t max_workloads, struct kepler_backlog **ret, struct kepler_error *err);

/* Intervals held (0: the store took everything so far). */
unsigned kepler_backlog_intervals(const struct kepler_backlog *b);

/*
 * The snapshot to commit for @snap: @snap itself when nothing is held, else
 * @snap merged with what is held, owned by the backlog and valid until the
 * next call (it points into @snap's strings and the backlog's). @now_wall_ns
 * sets unstored_ns (since the first refused commit). -ENOMEM (nothing
 * changed: the caller may try again with the next interval).
 */
int kepler_backlog_merge(struct kepler_backlog *b, const struct kepler_snapshot *snap,
			 struct kepler_snapshot **ret, struct kepler_error *err);

/*
 * The store refused @merged (what kepler_backlog_merge() returned):
 * hold it, copied, in place of what was held. @refused_wall_ns is when.
 * -ENOMEM (then what was held before stays, and this interval's deltas are
 * lost to the workloads; the node's totals still carry them).
 */
int kepler_backlog_hold(struct kepler_backlog *b, const struct kepler_snapshot *merged,
			uint64_t refused_wall_ns, struct kepler_error *err);

/* The store took the merged snapshot: hold nothing. */
void kepler_backlog_clear(struct kepler_backlog *b);

void kepler_backlog_free(struct kepler_backlog *b);

#endif /* KEPLER_COLLECTD_BACKLOG_H */
