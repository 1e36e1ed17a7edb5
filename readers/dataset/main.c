// SPDX-License-Identifier: Apache-2.0
/*
 * kepler-dataset: training data out of the store, as CSV with a header or
 * JSON lines (columns: docs/power-models.md). Node rows come from the
 * series (one per interval), process and container rows from the retained
 * snapshots. Rows whose energy is a model estimate are left out unless
 * --include-estimates, so that a model is never trained on its own output;
 * so are first intervals (no deltas).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kepler/config.h"
#include "kepler/fmt.h"
#include "kepler/log.h"
#include "kepler/store.h"

#define SEC 1000000000ULL
#define EXIT_USAGE 2

enum level { LEVEL_NODE, LEVEL_PROCESS, LEVEL_CONTAINER };

/* One row as (name, value) cells, written as CSV or JSON. */
struct writer {
	bool json;
	struct kepler_buf *b;
	size_t col;
	bool header_done;
	struct kepler_buf header;
};

static void cell_name(struct writer *w, const char *name)
{
	if (w->json) {
		kepler_buf_addc(w->b, w->col ? ',' : '{');
		kepler_fmt_json_string(w->b, name);
		kepler_buf_addc(w->b, ':');
	} else {
		if (w->col)
			kepler_buf_addc(w->b, ',');
		if (!w->header_done) {
			if (w->col)
				kepler_buf_addc(&w->header, ',');
			kepler_buf_adds(&w->header, name);
		}
	}
	w->col++;
}

/* CSV: quoted when needed (RFC 4180); JSON: a string. Invalid UTF-8 becomes U+FFFD. */
static void cell_str(struct writer *w, const char *name, const char *s)
{
	cell_name(w, name);
	if (w->json)
		kepler_fmt_json_string(w->b, s);
	else
		kepler_fmt_csv_field(w->b, s);
}

static void cell_u64(struct writer *w, const char *name, uint64_t v)
{
	cell_name(w, name);
	kepler_buf_u64(w->b, v);
}

static void cell_num(struct writer *w, const char *name, double v)
{
	cell_name(w, name);
	kepler_buf_printf(w->b, "%.9g", v);
}

static void cell_null(struct writer *w, const char *name)
{
	cell_name(w, name);
	if (w->json)
		kepler_buf_add(w->b, "null", 4);
}

static void cell_counter(struct writer *w, const char *name, uint64_t v)
{
	if (v == KEPLER_COUNTER_UNAVAILABLE)
		cell_null(w, name);
	else
		cell_u64(w, name, v);
}

static void row_end(struct writer *w)
{
	if (w->json)
		kepler_buf_addc(w->b, '}');
	kepler_buf_addc(w->b, '\n');
	if (!w->header_done && !w->json)
		kepler_buf_addc(&w->header, '\n');
	w->header_done = true;
	w->col = 0;
}

static void timestamp(struct writer *w, uint64_t wall_ns)
{
	time_t t = (time_t)(wall_ns / SEC);
	struct tm tm;
	char buf[64], full[80];

	gmtime_r(&t, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(full, sizeof(full), "%s.%03lluZ", buf, (unsigned long long)(wall_ns % SEC / 1000000));
	cell_str(w, "timestamp", full);
}

/* The zones of the range, in the order first seen. */
struct zones {
	char name[KEPLER_MAX_ZONES * 4][24];
	size_t n;
};

static void add_zone(struct zones *z, const char *name)
{
	for (size_t i = 0; i < z->n; i++)
		if (!strcmp(z->name[i], name))
			return;
	if (z->n < sizeof(z->name) / sizeof(z->name[0]))
		snprintf(z->name[z->n++], sizeof(z->name[0]), "%s", name);
}

/* Per zone of the range: source, joules and watts of the interval (empty when absent). */
static void zone_cells(struct writer *w, const struct zones *zs, const char *const *names,
		       const enum kepler_source *sources, const uint64_t *delta_uj, size_t n,
		       uint64_t interval_ns)
{
	char col[64];

	for (size_t i = 0; i < zs->n; i++) {
		size_t k = 0;

		while (k < n && strcmp(names[k], zs->name[i]))
			k++;
		snprintf(col, sizeof(col), "%s_source", zs->name[i]);
		if (k < n)
			cell_str(w, col, kepler_source_name(sources[k]));
		else
			cell_null(w, col);
		snprintf(col, sizeof(col), "%s_joules", zs->name[i]);
		if (k < n)
			cell_num(w, col, (double)delta_uj[k] / 1e6);
		else
			cell_null(w, col);
		snprintf(col, sizeof(col), "%s_watts", zs->name[i]);
		if (k < n)
			cell_num(w, col, interval_ns ? (double)delta_uj[k] * 1e3 / (double)interval_ns : 0.0);
		else
			cell_null(w, col);
	}
}

struct job {
	const struct kepler_config *cfg;
	struct kepler_store *store;
	struct kepler_store_meta meta;
	enum level level;
	enum kepler_kind kind; /* of the workload rows */
	uint64_t since, until; /* wall ns; until 0 = no bound */
	struct zones zones;
	struct writer w;
	size_t rows, estimates;
};

static bool has_estimate(const enum kepler_source *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] == KEPLER_SOURCE_MODEL)
			return true;
	return false;
}

/*
 * The CPU count of a record: the one the collector counted and the model
 * source uses (recorded since format 1.1); for older records, total CPU
 * time over the interval, rounded (jitters on a busy machine).
 */
static double node_cpus(const struct kepler_series_record *r)
{
	if (r->cpu_count)
		return r->cpu_count;
	if (!r->interval_ns)
		return 0;
	return (double)(uint64_t)((double)r->node_cpu_total_delta_ns / (double)r->interval_ns + 0.5);
}

static void node_row(struct job *j, const struct kepler_series_record *r)
{
	struct writer *w = &j->w;
	const char *names[KEPLER_MAX_ZONES];
	enum kepler_source src[KEPLER_MAX_ZONES];
	uint64_t delta[KEPLER_MAX_ZONES];
	double cpus = node_cpus(r);

	for (uint32_t z = 0; z < r->nzones && z < KEPLER_MAX_ZONES; z++) {
		names[z] = r->zones[z].name;
		src[z] = (enum kepler_source)r->zones[z].source;
		delta[z] = r->zones[z].energy_delta_uj;
	}
	timestamp(w, r->wall_ns);
	cell_u64(w, "wall_ns", r->wall_ns);
	cell_u64(w, "seq", r->seq);
	cell_u64(w, "interval_ns", r->interval_ns);
	cell_str(w, "node", kepler_store_meta_node(&j->meta));
	cell_str(w, "cpu_model", j->meta.cpu_model);
	cell_u64(w, "cpu_busy_delta_ns", r->node_cpu_busy_delta_ns);
	cell_u64(w, "cpu_total_delta_ns", r->node_cpu_total_delta_ns);
	cell_num(w, "cpu_usage_ratio", r->cpu_usage_ratio);
	cell_num(w, "cpu_count", cpus);
	cell_num(w, "cpu_busy", r->cpu_usage_ratio * cpus);
	cell_counter(w, "cycles", r->cycles);
	cell_counter(w, "instructions", r->instructions);
	cell_counter(w, "cache_misses", r->cache_misses);
	zone_cells(w, &j->zones, names, src, delta, r->nzones, r->interval_ns);
	row_end(w);
}

static int node_rows(struct job *j, struct kepler_error *err)
{
	struct kepler_series_record *recs = NULL;
	size_t n = 0;
	int r = kepler_store_series(j->store, j->since, j->until, &recs, &n, err);

	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		for (uint32_t z = 0; z < recs[i].nzones; z++)
			add_zone(&j->zones, recs[i].zones[z].name);
	for (size_t i = 0; i < n; i++) {
		enum kepler_source src[KEPLER_MAX_ZONES];

		for (uint32_t z = 0; z < recs[i].nzones && z < KEPLER_MAX_ZONES; z++)
			src[z] = (enum kepler_source)recs[i].zones[z].source;
		if (!recs[i].interval_ns || (recs[i].flags & KEPLER_SNAP_FIRST))
			continue;
		if (!j->cfg->dataset.dataset_include_estimates && has_estimate(src, recs[i].nzones)) {
			j->estimates++;
			continue;
		}
		node_row(j, &recs[i]);
		j->rows++;
	}
	free(recs);
	return 0;
}

/* The identity and usage cells of one workload row. */
static void workload_row(struct job *j, const struct kepler_snapshot *s, const struct kepler_workload *wl)
{
	const struct kepler_usage *u = wl->usage;
	const struct kepler_process *p = wl->kind == KEPLER_KIND_PROCESS ? &s->processes[wl->index] : NULL;
	struct writer *w = &j->w;
	const char *names[KEPLER_MAX_ZONES];
	enum kepler_source src[KEPLER_MAX_ZONES];
	uint64_t delta[KEPLER_MAX_ZONES];

	for (size_t z = 0; z < s->nzones; z++) {
		names[z] = s->zones[z].name;
		src[z] = s->zones[z].source;
		delta[z] = u->zones[z].delta_uj;
	}
	timestamp(w, s->wall_ns);
	cell_u64(w, "wall_ns", s->wall_ns);
	cell_u64(w, "seq", s->seq);
	cell_u64(w, "interval_ns", s->interval_ns);
	cell_str(w, "node", kepler_store_meta_node(&j->meta));
	if (p) {
		cell_u64(w, "pid", p->pid);
		cell_u64(w, "start_time_ns", p->start_time_ns);
		cell_str(w, "comm", p->comm);
		cell_str(w, "type", kepler_process_type_name(p->type));
		cell_str(w, "container_id", p->container_id);
	} else {
		cell_str(w, "container_id", wl->id);
		cell_str(w, "container_name", wl->name);
		cell_str(w, "runtime", wl->detail);
		cell_str(w, "pod_id", wl->parent);
	}
	cell_str(w, "state", kepler_state_name(u->state));
	cell_u64(w, "cpu_time_delta_ns", u->cpu_time_delta_ns);
	cell_num(w, "cpu_share",
		 s->node_cpu_busy_delta_ns ? (double)u->cpu_time_delta_ns / (double)s->node_cpu_busy_delta_ns
					   : 0.0);
	cell_num(w, "node_cpu_usage_ratio", s->cpu_usage_ratio);
	if (p) {
		cell_counter(w, "cycles", p->cycles);
		cell_counter(w, "instructions", p->instructions);
		cell_counter(w, "cache_misses", p->cache_misses);
	}
	zone_cells(w, &j->zones, names, src, delta, s->nzones, s->interval_ns);
	row_end(w);
}

static int snapshot_rows(struct job *j, struct kepler_error *err)
{
	uint64_t *seqs = NULL, from = 0, to = 0;
	struct kepler_series_record *recs = NULL;
	size_t n = 0;
	int r;

	/* every zone of the range first, so that every row has the same columns */
	if (kepler_store_series(j->store, j->since, j->until, &recs, &n, err) == 0)
		for (size_t i = 0; i < n; i++)
			for (uint32_t z = 0; z < recs[i].nzones; z++)
				add_zone(&j->zones, recs[i].zones[z].name);
	free(recs);
	n = 0;
	if (j->since && kepler_store_seq_at(j->store, j->since, &from, err) < 0)
		from = 0;
	if (j->until && kepler_store_seq_at(j->store, j->until, &to, err) < 0)
		return 0; /* nothing before @until */
	r = kepler_store_list(j->store, from, to, &seqs, &n, err);
	for (size_t i = 0; r == 0 && i < n; i++) {
		struct kepler_snapshot *s;

		if (kepler_store_read(j->store, seqs[i], &s, err) < 0)
			continue; /* pruned meanwhile */
		if (s->wall_ns < j->since || (j->until && s->wall_ns > j->until) || !s->interval_ns) {
			kepler_snapshot_free(s);
			continue;
		}
		for (size_t z = 0; z < s->nzones; z++)
			add_zone(&j->zones, s->zones[z].name);
		if (!j->cfg->dataset.dataset_include_estimates) {
			bool est = false;

			for (size_t z = 0; z < s->nzones; z++)
				est |= s->zones[z].source == KEPLER_SOURCE_MODEL;
			if (est) {
				j->estimates++;
				kepler_snapshot_free(s);
				continue;
			}
		}
		for (size_t k = 0; k < kepler_workload_count(s, j->kind); k++, j->rows++) {
			struct kepler_workload wl = kepler_workload_at(s, j->kind, k);

			workload_row(j, s, &wl);
		}
		kepler_snapshot_free(s);
	}
	free(seqs);
	return r;
}

/* The header of an empty CSV: the columns a row would have. */
static void empty_header(struct job *j)
{
	static const char *const node_cols =
		"timestamp,wall_ns,seq,interval_ns,node,cpu_model,cpu_busy_delta_ns,cpu_total_delta_ns,"
		"cpu_usage_ratio,cpu_count,cpu_busy,cycles,instructions,cache_misses";
	static const char *const proc_cols =
		"timestamp,wall_ns,seq,interval_ns,node,pid,start_time_ns,comm,type,container_id,state,"
		"cpu_time_delta_ns,cpu_share,node_cpu_usage_ratio,cycles,instructions,cache_misses";
	static const char *const ctr_cols =
		"timestamp,wall_ns,seq,interval_ns,node,container_id,container_name,runtime,pod_id,state,"
		"cpu_time_delta_ns,cpu_share,node_cpu_usage_ratio";

	kepler_buf_adds(&j->w.header, j->level == LEVEL_NODE      ? node_cols
				      : j->level == LEVEL_PROCESS ? proc_cols
								  : ctr_cols);
	for (size_t i = 0; i < j->zones.n; i++)
		kepler_buf_printf(&j->w.header, ",%s_source,%s_joules,%s_watts", j->zones.name[i],
				  j->zones.name[i], j->zones.name[i]);
	kepler_buf_addc(&j->w.header, '\n');
}

static int parse_args(const struct kepler_config *cfg, struct job *j)
{
	struct timespec ts;
	uint64_t now;

	clock_gettime(CLOCK_REALTIME, &ts);
	now = (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec;
	if (!strcmp(cfg->dataset.dataset_level, "node"))
		j->level = LEVEL_NODE;
	else if (!strcmp(cfg->dataset.dataset_level, "process"))
		j->level = LEVEL_PROCESS, j->kind = KEPLER_KIND_PROCESS;
	else if (!strcmp(cfg->dataset.dataset_level, "container"))
		j->level = LEVEL_CONTAINER, j->kind = KEPLER_KIND_CONTAINER;
	else {
		kepler_err("invalid --level '%s': node, process or container", cfg->dataset.dataset_level);
		return -EINVAL;
	}
	if ((cfg->dataset.dataset_since[0] &&
	     kepler_parse_time_flag("since", cfg->dataset.dataset_since, now, &j->since) < 0) ||
	    (cfg->dataset.dataset_until[0] &&
	     kepler_parse_time_flag("until", cfg->dataset.dataset_until, now, &j->until) < 0))
		return -EINVAL;
	if (j->until && j->since > j->until) {
		kepler_err("--since %s is after --until %s: an empty range", cfg->dataset.dataset_since,
			   cfg->dataset.dataset_until);
		return -EINVAL;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct kepler_config cfg;
	struct kepler_error err = { 0 };
	struct kepler_buf body = KEPLER_BUF_INIT;
	struct job j = { 0 };
	FILE *out = stdout;
	int rc = EXIT_USAGE;

	kepler_config_parse_or_exit(&cfg, &kepler_program_dataset, argc, argv);
	kepler_log_setup(kepler_program_dataset.name, cfg.log_level, cfg.log_format);
	j.cfg = &cfg;
	j.w.b = &body;
	j.w.json = cfg.dataset.dataset_format == KEPLER_DATASET_JSONL;
	if (parse_args(&cfg, &j) < 0)
		goto out;
	if (kepler_store_open_reader(cfg.store_path, &j.store, &err) < 0) {
		kepler_err("%s", err.msg);
		goto out;
	}
	kepler_store_get_meta(j.store, &j.meta, &err);
	if ((j.level == LEVEL_NODE ? node_rows(&j, &err) : snapshot_rows(&j, &err)) < 0) {
		kepler_err("%s", err.msg);
		goto out;
	}
	if (!j.w.header_done && !j.w.json)
		empty_header(&j);
	if (body.error || j.w.header.error) {
		kepler_err("out of memory");
		rc = 1;
		goto out;
	}
	rc = 1;
	if (cfg.dataset.dataset_output[0] && !(out = fopen(cfg.dataset.dataset_output, "w"))) {
		kepler_err("cannot write %s: %s", cfg.dataset.dataset_output, strerror(errno));
		out = stdout;
		goto out;
	}
	if ((!j.w.json && fwrite(j.w.header.data, 1, j.w.header.len, out) != j.w.header.len) ||
	    fwrite(body.data ? body.data : "", 1, body.len, out) != body.len || fflush(out) != 0) {
		kepler_err("cannot write the dataset: %s", strerror(errno));
		goto out;
	}
	kepler_info("%zu rows", j.rows);
	if (j.estimates)
		kepler_info(
			"left out %zu intervals whose energy is a model estimate (--include-estimates keeps them)",
			j.estimates);
	rc = 0;
out:
	if (out != stdout)
		fclose(out);
	kepler_buf_free(&body);
	kepler_buf_free(&j.w.header);
	kepler_store_close(j.store);
	kepler_config_done(&cfg);
	return rc;
}
