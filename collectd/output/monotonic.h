/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/output/monotonic.h: the invariant that no cumulative counter
 * of a same identity ever goes down, checked on the snapshots the ledger
 * builds (the collector does it in debug builds, and aborts when it breaks).
 *
 * Node zones, processes (pid, start time) and their CPU time are compared
 * with the previous snapshot; containers, VMs and pods with the last time
 * their id was seen, however long ago (a container forgotten and started
 * again under its id must continue its totals).
 */
#ifndef KEPLER_COLLECTD_MONOTONIC_H
#define KEPLER_COLLECTD_MONOTONIC_H

#include <stddef.h>

#include "kepler/snapshot.h"

struct kepler_monotonic;

int kepler_monotonic_new(struct kepler_monotonic **ret);

/*
 * Compare @snap with what came before and remember it. Returns the number
 * of counters that went down (the first described in @why), or -ENOMEM
 * (nothing remembered from @snap then).
 */
long kepler_monotonic_check(struct kepler_monotonic *m, const struct kepler_snapshot *snap, char *why,
			    size_t size);

void kepler_monotonic_free(struct kepler_monotonic *m);

#endif /* KEPLER_COLLECTD_MONOTONIC_H */
