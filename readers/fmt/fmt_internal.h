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

/*
 * The label text of a snapshot's processes, rendered once for all their
 * lines (prom_process.c): A = comm..pid, B = type, vm_id; and, with
 * stable_ids, kept to the next rendering (prom_memo.c) with what each
 * process's text was written from.
 */
struct prom_proc_text {
	struct kepler_buf text;
	size_t *a, *b; /* offsets: a[i]..b[i] is A, b[i]..a[i+1] is B */
	size_t n, cap; /* processes; room for cap + 1 */
	/* ,state="..." and ,zone="..." rendered once, not once a line; ,node_name="..." */
	struct kepler_buf fixed, node;
	size_t state_at[KEPLER_STATE_COUNT + 1], zone_at[KEPLER_MAX_ZONES + 1];
	/* with stable_ids */
	uint64_t *ver;  /* process i's text's version (0: none), the high bits of its samples' ids */
	uint32_t *pid;  /* what it was written from: pid, */
	uint32_t *type; /* type, */
	size_t *raw_at; /* and in raw, raw_at[i]..raw_at[i + 1]: comm, container_id, exe, vm_id, each NUL-ended */
	struct kepler_buf raw;
};

/* prom_memo.c: the text of the last two renderings; stable_ids */
struct kepler_prom_memo {
	struct prom_proc_text t[2];
	unsigned cur; /* t[cur]: the last rendering's (or the one under way) */
};

/* Room for @n processes in @t, emptied (its buffers kept). -ENOMEM. */
int prom_proc_text_begin(struct prom_proc_text *t, size_t n, bool stable_ids);
void prom_proc_text_free(struct prom_proc_text *t);
/* A new version (never 0, never given before in this program). */
uint64_t prom_memo_version(void);
/* Whether @prev's text was written with the node and fixed labels of @t's (else none of it is reused). */
bool prom_memo_same_context(const struct prom_proc_text *prev, const struct prom_proc_text *t);
/*
 * Where process @p's text lies in @prev (the last rendering's), written
 * from the same strings, pid and type, looked for from *@cursor on (a
 * snapshot's processes are in pid order, mostly): its index, or SIZE_MAX.
 */
size_t prom_memo_find(const struct prom_proc_text *prev, size_t *cursor, const struct kepler_process *p);
/* What process @i's text was written from, recorded in @t (stable_ids); @from: @prev's copy of it, or SIZE_MAX. */
void prom_memo_record(struct prom_proc_text *t, size_t i, const struct kepler_process *p,
		      const struct prom_proc_text *prev, size_t from);

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
