/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/output/handover.h: the collector's side of the store. It owns the
 * writer (kepler/store.h), writes the node's meta and CPUs at open, resumes
 * the ledger's totals from the newest snapshot of the same boot, and hands
 * each interval's snapshot over: committed, or held in the backlog
 * (backlog.h) while the store refuses commits in a way the collector
 * outlives (a full disk, files made unwritable), to be merged into the
 * first snapshot the store takes again. Debug builds check there that no
 * cumulative counter goes down (monotonic.h).
 */
#ifndef KEPLER_COLLECTD_HANDOVER_H
#define KEPLER_COLLECTD_HANDOVER_H

#include "kepler/config.h"
#include "kepler/error.h"
#include "kepler/snapshot.h"
#include "kepler/store.h"
#include "ledger.h"

struct kepler_handover;

/*
 * Open the store as store.* of @cfg says and write the node's meta (node.h)
 * and CPUs (read through host.procfs; a failure there is a warning: readers
 * then export no kepler_node_cpu_info). Errors, logged: the store's
 * (kepler_store_open_writer(), kepler_store_set_meta(),
 * kepler_store_set_cpus()), -ENOMEM.
 */
int kepler_handover_open(const struct kepler_config *cfg, struct kepler_handover **ret);

/* The store, for the baseline's history and the privilege drop (valid until close). */
struct kepler_store *kepler_handover_store(const struct kepler_handover *h);

/*
 * Continue @ledger's totals from the store's newest snapshot when it comes
 * from this boot (same boot ID as the meta written at open). Its running
 * processes still alive in @procfs (the host's: same pid and start time)
 * stay in the snapshots until the informer reports them. Logs what it did;
 * a failure only means totals start from 0.
 */
void kepler_handover_resume(struct kepler_handover *h, struct kepler_ledger *ledger, const char *procfs);

/*
 * Hand @snap (the ledger's) over: merged with the intervals held so far,
 * checked (debug builds: abort when a counter went down), committed or
 * held. *@ret_snap: the snapshot handed over (@snap, or the merge, owned
 * by the handover until the next call). 0: stored; 1: held; < 0: an error
 * the collector cannot outlive (-EUCLEAN, -EPROTO, -EPROTONOSUPPORT,
 * -EINVAL, -EBADF from kepler_store_commit(); the message in @err).
 */
int kepler_handover_commit(struct kepler_handover *h, struct kepler_snapshot *snap,
			   struct kepler_snapshot **ret_snap, struct kepler_error *err);

/*
 * After a snapshot was stored: write @ledger's memory of forgotten
 * identities (ledger.h) into the store's meta "collector.memory" when it
 * changed, so that a restarted collector continues their counters when they
 * come back; kepler_handover_resume() reads it back.
 */
void kepler_handover_remember(struct kepler_handover *h, struct kepler_ledger *ledger);

/* Intervals held for the store (0 when it took the last one). */
unsigned kepler_handover_held(const struct kepler_handover *h);

void kepler_handover_close(struct kepler_handover *h);

#endif /* KEPLER_COLLECTD_HANDOVER_H */
