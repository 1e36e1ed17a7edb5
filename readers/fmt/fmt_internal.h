/* SPDX-License-Identifier: Apache-2.0 */
/* readers/fmt/fmt_internal.h: helpers shared by the formatters. */
#ifndef KEPLER_FMT_INTERNAL_H
#define KEPLER_FMT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kepler/buf.h"
#include "kepler/fmt.h"
#include "kepler/snapshot.h"

/*
 * Length (1 to 4) of the valid UTF-8 sequence at @p (NUL-terminated), or
 * 0 when it is not one: a stray continuation byte, an overlong form, a
 * surrogate, a code point above U+10FFFF or a sequence cut short.
 */
size_t kepler_fmt_utf8_len(const unsigned char *p);

/* ---- the Prometheus formatter (prom.c, prom_gpu.c) ---- */

struct prom {
	const struct kepler_snapshot *s;
	struct kepler_prom_writer w;    /* the lines, and the samples for a second sink */
	struct kepler_buf *out;         /* w.out: where labels are written */
	const char *node;               /* node_name, raw */
	bool zone_on[KEPLER_MAX_ZONES]; /* CPU and node zones exported (never a device's) */
	bool device[KEPLER_MAX_ZONES];  /* a device zone (a GPU): its own families */
	unsigned levels;
	size_t process_top;   /* metrics.process.top; 0: every process */
	bool process_fold;    /* metrics.process.fold: folded processes as their folds */
	size_t container_top; /* metrics.container.top; 0: every container */
	bool *ctop;           /* [i * nzones + z]: container i is of zone z's top; NULL: all */
	bool *cany;           /* [i]: of some zone's top */
};

/* ,key="value" (first: no comma), the value escaped */
void prom_label(struct kepler_buf *out, const char *key, const char *value, bool first);
/* Values: microjoules as joules; a delta over an interval as watts (kepler_prom_end() after) */
void prom_joules(struct kepler_prom_writer *w, uint64_t uj);
void prom_watts(struct kepler_prom_writer *w, uint64_t delta_uj, uint64_t interval_ns);
/*
 * Appended to the HELP of every energy and power family: a zone whose
 * source is the power model carries estimates, and kepler_node_zone_source_info
 * says which zones do (join on zone; docs/metrics.md has the PromQL).
 */
#define ESTIMATE_NOTE                                              \
	" (a model estimate, not a measurement, for a zone where " \
	"kepler_node_zone_source_info has source=\"model\")"

/* Seconds from @ns, as Prometheus writes them. */
void prom_seconds(struct kepler_prom_writer *w, uint64_t ns);

/* prom_process.c: the process families (metrics.level process). -ENOMEM. */
int prom_processes(struct prom *pr);

/* prom_workload.c: the container, VM and pod families of the levels asked; errors in pr->out. */
void prom_workloads(struct prom *pr);

/*
 * prom_gpu.c: Kepler's GPU families. Node level: kepler_node_gpu_info and
 * kepler_node_gpu_{,active_,idle_}{joules_total,watts} per device, and the
 * unattributed remainder; workloads: kepler_{process,container,pod}_gpu_*
 * summed over the devices, for those with GPU energy.
 */
void prom_gpu_node(struct prom *pr);
/* @labels(pr, i, ctx) writes the labels of workload @i of kind @k after '{' (with state) */
void prom_gpu_workloads(struct prom *pr, enum kepler_kind k,
			void (*labels)(struct prom *pr, size_t i, void *ctx), void *ctx, const bool *skip);

#endif /* KEPLER_FMT_INTERNAL_H */
