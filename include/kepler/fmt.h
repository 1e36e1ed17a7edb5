/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kepler/fmt.h: formatters shared by the readers. Pure functions: a
 * snapshot in, text appended to a struct kepler_buf out; no sockets, no
 * terminals, no store.
 */
#ifndef KEPLER_FMT_H
#define KEPLER_FMT_H

#include <stdbool.h>
#include <stddef.h>

#include "kepler/buf.h"
#include "kepler/config.h"
#include "kepler/cpuinfo.h"
#include "kepler/error.h"
#include "kepler/snapshot.h"

/* Workload levels, as bits (Kepler's metricsLevel). */
enum kepler_level {
	KEPLER_LEVEL_NODE = 1u << 0,
	KEPLER_LEVEL_PROCESS = 1u << 1,
	KEPLER_LEVEL_CONTAINER = 1u << 2,
	KEPLER_LEVEL_VM = 1u << 3,
	KEPLER_LEVEL_POD = 1u << 4,
	KEPLER_LEVEL_ALL = 0x1f, /* the workload levels above */
	/*
	 * kepler-c's chargeback levels (metrics.level; kepler-exporter and
	 * kepler-push): energy and CO2e counters per namespace and per pod
	 * owner, from the store's history ledger (readers/common/co2e_families.h)
	 */
	KEPLER_LEVEL_NAMESPACE = 1u << 5,
	KEPLER_LEVEL_OWNER = 1u << 6,
};

/* The level bit of workload kind @k. */
static inline unsigned kepler_level_of(enum kepler_kind k)
{
	return 1u << ((unsigned)k + 1);
}

/* The bits of a list of level names (node, process, container, vm, pod, namespace, owner). */
unsigned kepler_levels_from_list(const struct kepler_strlist *names);

struct kepler_prom_options {
	unsigned levels;                    /* enum kepler_level bits */
	const struct kepler_strlist *zones; /* zone names to export (case-insensitive); NULL or empty: all */
	const char *node_name;              /* the node_name label; NULL: "" */
	const struct kepler_cpuinfo *cpus;  /* kepler_node_cpu_info series; NULL: none */
	/*
	 * metrics.process.top: per zone only the N processes with the most
	 * energy, and one series comm="other" per zone whose watts are the
	 * rest's (so the zone's process watts still add up to the node's
	 * active watts); 0: every process.
	 */
	size_t process_top;
	/*
	 * metrics.process.fold: processes flagged KEPLER_PROCESS_FOLDED are
	 * left out, and each of the snapshot's folds is one series
	 * type="folded" (comm, exe, pid empty) with its totals; false: every
	 * process its own series.
	 */
	bool process_fold;
	/* metrics.container.top: the same for containers ("other": container_name="other") */
	size_t container_top;
};

/*
 * The Prometheus text exposition (format 0.0.4) of @snap: Kepler's metric
 * families for the chosen levels and zones, the energy source of each
 * zone, the snapshot's seq, time and interval, and kepler_build_info.
 * Joules are exact decimals of the integer microjoules; watts are each
 * interval's delta over its length (0 for the first snapshot and for
 * carried-forward terminated entries). Label values are escaped and
 * invalid UTF-8 is replaced by U+FFFD; a process whose label set would
 * repeat another's (a reused pid within the terminated TTL) is exported
 * once, the running or newest one. Returns 0 or -ENOMEM.
 */
int kepler_fmt_prom(const struct kepler_snapshot *snap, const struct kepler_prom_options *opts,
		    struct kepler_buf *out);

/* Only kepler_build_info (for an exporter that has no snapshot yet). */
void kepler_fmt_prom_build_info(struct kepler_buf *out);

/*
 * kepler_node_cpu_info: 1 per logical CPU, labelled core_id, model_name,
 * physical_id, processor, vendor_id (Kepler's; no node_name). Nothing when
 * @cpus is NULL or empty.
 */
void kepler_fmt_prom_cpu_info(struct kepler_buf *out, const struct kepler_cpuinfo *cpus);

/* The per-scrape family: how old the snapshot is, in seconds. */
void kepler_fmt_prom_age(struct kepler_buf *out, const char *node_name, double age_seconds);

/* A process's own figures, as every Prometheus exporter exports them (process_*). */
struct kepler_process_stats {
	double cpu_seconds;   /* user + system */
	uint64_t rss_bytes;   /* resident set */
	uint64_t vsize_bytes; /* virtual memory */
	uint64_t open_fds, max_fds;
	double start_time_seconds; /* since the epoch */
};

/* The process_* families of @st (the standard names of the Prometheus client libraries). */
void kepler_fmt_prom_process(struct kepler_buf *out, const struct kepler_process_stats *st);

/* Append @s as a Prometheus label value (escaped, valid UTF-8), without quotes. */
void kepler_fmt_prom_label_value(struct kepler_buf *out, const char *s);

/*
 * One snapshot as one JSON object on one line (no newline), the schema of
 * docs/stdout.md: seq, timestamp, interval_ns, node (zones,
 * cpu_usage_ratio) and the arrays processes, containers, vms, pods for
 * the chosen @levels (enum kepler_level bits; node when NODE is set).
 * Strings are escaped; invalid UTF-8 becomes U+FFFD. Returns 0 or -ENOMEM.
 */
int kepler_fmt_json(const struct kepler_snapshot *snap, unsigned levels, struct kepler_buf *out);

/*
 * Append @s as a CSV field (RFC 4180): quoted, with quotes doubled, when it
 * holds a comma, quote or line break; invalid UTF-8 becomes U+FFFD.
 */
void kepler_fmt_csv_field(struct kepler_buf *out, const char *s);

/* Append @s as a JSON string, with its quotes. */
void kepler_fmt_json_string(struct kepler_buf *out, const char *s);

struct kepler_table_options {
	unsigned levels; /* enum kepler_level bits */
	enum kepler_sort sort;
	size_t limit; /* rows per table; 0: all */
};

/*
 * The snapshot as plain-text tables (no terminal codes): a header line,
 * the node's zones, then one table per chosen workload level, sorted and
 * limited. Returns 0 or -ENOMEM.
 */
int kepler_fmt_table(const struct kepler_snapshot *snap, const struct kepler_table_options *opts,
		     struct kepler_buf *out);

#endif /* KEPLER_FMT_H */
