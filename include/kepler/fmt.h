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
#include <stdint.h>

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
 * One sample of an exposition, as a second sink beside the text
 * (kepler-push builds its remote-write and OTLP requests from these, not
 * from the text read back): its series' key is its line up to the value
 * (text[key_at, key_at + key_len), not NUL-terminated; the series'
 * identity, the same in both sinks), its name the key's first name_len
 * bytes, its value the double strtod() gives for the value written.
 */
struct kepler_prom_sample {
	size_t key_at, key_len, name_len;
	double value;
	bool counter; /* of a family whose # TYPE is counter */
	/*
	 * With stable_ids (below): 0, or a number naming this key: two samples
	 * with one non-zero id, in one rendering or two, have the same key,
	 * byte for byte, for the life of the program (ids are never reused).
	 */
	uint64_t id;
	/*
	 * With stable_ids and keys_only: the key was not written to the text
	 * (key_at means nothing; key_len is its length all the same), it is
	 * of the process labels the renderer keeps: kepler_prom_sample_key()
	 * writes it, until the next rendering into the same samples.
	 */
	bool kept;
	uint32_t proc; /* (kept: the process's place in them) */
};

struct kepler_prom_memo; /* the renderer's, between renderings (stable_ids) */

struct kepler_prom_samples {
	struct kepler_prom_sample *v;
	size_t n, cap;
	/*
	 * Keys and values are all the caller reads (kepler-push): a value
	 * whose double is known without its decimal (an exact decimal below
	 * 10^15, almost all) is not written, the text then being no
	 * exposition but the keys' holder.
	 */
	bool keys_only;
	/*
	 * With flush: each time the text, or the samples (kept keys are not
	 * in the text), hold flush_at bytes or more at the end of a line,
	 * the samples so far are handed to flush (their keys
	 * offsets into the text it is given), and text and samples begin
	 * again, empty: a caller that takes samples as they come (kepler-push)
	 * holds neither whole (14 MB of keys at 10,000 processes) and reads
	 * each key while it is still in cache. What is left at the end is the
	 * caller's, as without. A negative errno from flush ends the
	 * rendering with that error.
	 */
	int (*flush)(void *ctx, const char *text, const struct kepler_prom_samples *s);
	void *flush_ctx;
	size_t flush_at;
	/*
	 * The renderer keeps each process's label text from one rendering to
	 * the next (in memo), reused only for a process whose strings, pid
	 * and type are those it was written from (compared in full: names can
	 * be hostile, so never a hash), and gives each process sample an id
	 * (kepler_prom_sample.id): a caller that keeps series from one
	 * snapshot to the next (kepler-push) knows a key it has seen by its id,
	 * without reading it. With keys_only, those keys are not written
	 * (kept): the text holds the other keys alone.
	 */
	bool stable_ids;
	struct kepler_prom_memo *memo;
};

void kepler_prom_samples_free(struct kepler_prom_samples *s);

/*
 * Sample @x's key (of @s, the text it was handed with being @text)
 * appended to @out: from the text, or, kept, from the renderer's labels.
 * An @x that is not of @s's last rendering: out->error -EINVAL.
 */
void kepler_prom_sample_key(const struct kepler_prom_samples *s, const char *text,
			    const struct kepler_prom_sample *x, struct kepler_buf *out);

/*
 * Writes an exposition line by line: families, then samples (NAME{labels}
 * written by the caller with kepler_buf_* and kepler_fmt_prom_label_value(),
 * then one value, then kepler_prom_end()). With @samples, each sample is
 * also recorded there as it is ended: one iteration, two sinks. Out of
 * memory: out->error.
 */
struct kepler_prom_writer {
	struct kepler_buf *out;
	struct kepler_prom_samples *samples; /* NULL: the text alone */
	size_t line_at;                      /* where the line being written began */
	size_t value_at;                     /* where its value began */
	double value;
	bool counter; /* the family being written is a counter */
	/* the sample being written: its id, and whether its key is kept, not written (stable_ids) */
	uint64_t id;
	bool kept;
	uint32_t proc;
	size_t kept_key_len, kept_name_len;
};

/* A writer appending to @out, recording samples in @samples (NULL: none). */
static inline struct kepler_prom_writer kepler_prom_writer(struct kepler_buf *out,
							   struct kepler_prom_samples *samples)
{
	return (struct kepler_prom_writer){ .out = out, .samples = samples, .line_at = out->len };
}

/* # HELP and # TYPE lines (@help's format: printf's). */
void kepler_prom_family(struct kepler_prom_writer *w, const char *name, const char *type, const char *help);
__attribute__((format(printf, 4, 5))) void kepler_prom_familyf(struct kepler_prom_writer *w, const char *name,
							       const char *type, const char *help, ...);
/* A sample's value: @v / 10^@digits as an exact decimal (trailing zeros dropped); an integer. */
void kepler_prom_fixed(struct kepler_prom_writer *w, unsigned __int128 v, unsigned digits);
void kepler_prom_u64(struct kepler_prom_writer *w, uint64_t v);
/* A value as printf() writes it (a float of fixed precision). */
__attribute__((format(printf, 2, 3))) void kepler_prom_printf(struct kepler_prom_writer *w, const char *fmt,
							      ...);
/* The sample's newline; with samples, the sample recorded. */
void kepler_prom_end(struct kepler_prom_writer *w);

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

/*
 * kepler_fmt_prom(), the samples also recorded in @samples (replacing what
 * it held; keys are offsets into @out, which they follow).
 */
int kepler_fmt_prom_samples(const struct kepler_snapshot *snap, const struct kepler_prom_options *opts,
			    struct kepler_buf *out, struct kepler_prom_samples *samples);

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
