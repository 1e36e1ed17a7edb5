/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/collector.h: the collector's parts opened in order, one
 * interval's work, closed. The parts each own their state: zones.h (the
 * meter, the GPUs, platform-other), the informer, handover.h (the store and
 * its backlog), namer.h (Kubernetes names), policies.h (idle baseline and
 * sizes) and the ledger. The loop and the process's concerns (signals, the
 * privilege drop's timing) are in main.c.
 */
#ifndef KEPLER_COLLECTD_COLLECTOR_H
#define KEPLER_COLLECTD_COLLECTOR_H

#include <stdbool.h>
#include <stdint.h>

#include "kepler/config.h"
#include "kepler/error.h"

struct kepler_collector;

/* What one interval did, for the logs. */
struct kepler_tick_report {
	uint64_t seq;     /* 0 when the store refused the snapshot (held: see kepler_backlog) */
	unsigned held;    /* intervals held for the store (0 when it took this one) */
	uint64_t took_ns; /* CPU-side duration of the tick (monotonic) */
	size_t nprocesses, ncontainers, nvms, npods;
	uint32_t skipped, lost;
	uint64_t cpus_not_asked; /* eBPF: CPUs taken as idle without an IPI, since start */
	/* eBPF, since start: pieces cut at changes of identity, made entries, late, lost (informer.h) */
	uint64_t pieces, pieces_late, pieces_lost;
	int meter_error; /* 0, or the negative errno of a failed zone read */
	char meter_msg[512];
};

/*
 * Open the store, the meter and the informer of @cfg, and resume the
 * totals of the newest snapshot when it comes from the same boot. Logs
 * what it chose (this is a main's helper, so it may). Errors are logged
 * and returned.
 */
int kepler_collector_open(const struct kepler_config *cfg, struct kepler_collector **ret);

/* One interval: refresh, read, attribute, commit. @mono_ns is now. */
int kepler_collector_tick(struct kepler_collector *c, struct kepler_tick_report *ret,
			  struct kepler_error *err);

/* "informer ebpf; zones package (rapl), core (rapl)", valid until close. */
const char *kepler_collector_describe(struct kepler_collector *c);

void kepler_collector_close(struct kepler_collector *c);

/* Give up privileges after open (privileges.h), with @cfg's collector.user and store. */
int kepler_collector_drop_privileges(struct kepler_collector *c, const struct kepler_config *cfg,
				     struct kepler_error *err);

#endif /* KEPLER_COLLECTD_COLLECTOR_H */
