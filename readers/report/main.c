// SPDX-License-Identifier: Apache-2.0
/*
 * kepler-report: energy and CO2e over a window, per node, namespace, pod,
 * container, VM or process group, from the store's history
 * (docs/history.md). At each end of the window the history ledger
 * (kepler/history.h) is rebuilt from the newest tier record at or before
 * it, then refined by the raw snapshots after that record up to the end
 * while the ring holds them; each row is the difference of the two ledgers'
 * cumulative counters, exact to the µJ and the mg.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kepler/buf.h"
#include "kepler/config.h"
#include "kepler/fmt.h"
#include "kepler/history.h"
#include "kepler/log.h"
#include "kepler/store.h"
#include "report.h"

#define SEC 1000000000ULL
#define EXIT_NO_HISTORY 1
#define EXIT_USAGE 2

static void describe(struct end *e)
{
	if (e->snapshots || !e->period_s)
		snprintf(e->resolution, sizeof(e->resolution), "snapshot");
	else
		kepler_format_duration((uint64_t)e->period_s * SEC, e->resolution, sizeof(e->resolution));
}

/* The ledger at @t (kepler_store_history_at()); -ENODATA when the store cannot say. */
static int ledger_at(struct job *j, uint64_t t, struct end *e, bool ring, struct kepler_error *err)
{
	struct kepler_history_at at = { .from_ring = ring };
	int r;

	kepler_history_free(e->h);
	e->h = NULL;
	r = kepler_store_history_at(j->store, t, &e->h, &at, err);
	if (r < 0)
		return r;
	e->at_ns = at.at_ns;
	e->period_s = at.period_s;
	e->snapshots = at.snapshots;
	e->missed = at.missed;
	e->from_ring = at.from_ring;
	snprintf(e->damaged, sizeof(e->damaged), "%s", at.damaged);
	describe(e);
	return 0;
}

/*
 * Both ends, on the same base: the collector's (tier records, or the
 * store's first snapshot), else, where neither reaches the start, the
 * ring's oldest snapshot for both. A start earlier than anything the store
 * holds moves to the oldest that does (said).
 */
static int ledgers(struct job *j, struct kepler_error *err)
{
	uint64_t boundary = 0;
	size_t len;
	void *blob;
	int r = ledger_at(j, j->since, &j->a, false, err);

	if (r < 0)
		return r;
	if (j->a.from_ring && j->a.at_ns > j->since) {
		/* the ring begins after --since: the oldest record after it, if any, reaches further */
		for (size_t i = 0; i < j->nperiods; i++) /* finest first */
			if (kepler_store_tier_record(j->store, j->periods[i], j->since, false, &blob, &len,
						     &boundary, err) == 0) {
				free(blob);
				break;
			}
		if (boundary && boundary < j->a.at_ns && (r = ledger_at(j, boundary, &j->a, false, err)) < 0)
			return r;
		kepler_warn("the store's history begins after --since: the window starts at %s",
			    j->a.from_ring ? "its oldest snapshot" : "its oldest record");
	}
	if ((r = ledger_at(j, j->until, &j->b, j->a.from_ring, err)) < 0)
		return r;
	if (j->b.from_ring && !j->a.from_ring) {
		/* the end's record is damaged: the start from the ring too, which must reach it */
		if ((r = ledger_at(j, j->since, &j->a, true, err)) < 0)
			return r;
		if (j->a.at_ns > j->since)
			return kepler_error_set(err, -EUCLEAN,
						"%s, and the raw snapshots do not reach --since",
						j->b.damaged);
	}
	if (*j->a.damaged)
		kepler_warn("%s: this report comes from the raw snapshots, which cover the window",
			    j->a.damaged);
	if (*j->b.damaged && strcmp(j->a.damaged, j->b.damaged))
		kepler_warn("%s: this report comes from the raw snapshots, which cover the window",
			    j->b.damaged);
	return 0;
}

/* ---- rows ---- */

static bool wanted(const struct job *j, const struct kepler_history_row *r)
{
	return r->kind == j->kind;
}

/* The window's figures of @r (a row of the end's ledger); false when it has none in the window. */
static bool row_of(struct job *j, const struct kepler_history_row *r, struct row *out)
{
	const struct kepler_history_row *s = kepler_history_find(j->a.h, r);
	const char *const *za;
	size_t nza = kepler_history_zones(j->a.h, &za);

	memset(out, 0, sizeof(*out));
	out->r = r;
	if (!s && r->last_ns <= j->a.at_ns)
		return false; /* ended before the window: the start's record left it out */
	for (size_t z = 0; z < j->nzones; z++) {
		size_t sz = SIZE_MAX;

		for (size_t y = 0; s && y < nza; y++)
			if (!strcmp(za[y], j->zones[z]))
				sz = y;
		struct kepler_history_span w = kepler_history_window(sz != SIZE_MAX ? s : NULL, sz, r, z);

		out->energy_uj[z] = w.energy_uj;
		out->co2e_mg[z] = w.co2e_mg;
		out->co2e_rem[z] = w.co2e_rem;
		if (w.co2e_mg || w.co2e_rem)
			j->co2e_known = true;
	}
	out->cpu_time_ns =
		s && s->cpu_time_ns <= r->cpu_time_ns ? r->cpu_time_ns - s->cpu_time_ns : r->cpu_time_ns;
	return true;
}

static size_t primary(const struct job *j)
{
	return kepler_primary_zone_of(j->zones, j->nzones);
}

static const struct job *sort_job;

static int by_energy(const void *pa, const void *pb)
{
	const struct row *a = pa, *b = pb;
	size_t z = primary(sort_job);

	if (a->energy_uj[z] != b->energy_uj[z])
		return a->energy_uj[z] > b->energy_uj[z] ? -1 : 1;
	return strcmp(a->r->name, b->r->name) ? strcmp(a->r->name, b->r->name) : strcmp(a->r->id, b->r->id);
}

static const struct row *rem_rows;
static size_t rem_zone;

static int by_remainder(const void *pa, const void *pb)
{
	size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
	uint64_t ra = rem_rows[a].co2e_rem[rem_zone], rb = rem_rows[b].co2e_rem[rem_zone];

	if (ra != rb)
		return ra > rb ? -1 : 1;
	return a < b ? -1 : a > b; /* ties: the order shown */
}

/*
 * The rows' whole mg of CO2e add up to the whole mg of their exact sum:
 * each row's CO2e is floored, and the mg those floors leave out (fewer than
 * the rows) go one each to the rows with the largest remainders (largest
 * remainder apportionment; docs/history.md). Energy is exact already.
 */
static int apportion(struct job *j)
{
	size_t *idx = calloc(j->nrows ? j->nrows : 1, sizeof(*idx));

	if (!idx)
		return -ENOMEM;
	for (size_t z = 0; z < j->nzones; z++) {
		unsigned __int128 sum = 0;
		size_t extra;

		for (size_t i = 0; i < j->nrows; i++) {
			sum += j->rows[i].co2e_rem[z];
			idx[i] = i;
		}
		extra = (size_t)(sum / KEPLER_UJ_PER_KWH);
		rem_rows = j->rows, rem_zone = z;
		qsort(idx, j->nrows, sizeof(*idx), by_remainder);
		for (size_t i = 0; i < extra && i < j->nrows; i++)
			j->rows[idx[i]].co2e_mg[z]++;
	}
	free(idx);
	return 0;
}

static int collect_rows(struct job *j)
{
	size_t n = kepler_history_count(j->b.h);

	j->nzones = kepler_history_zones(j->b.h, &j->zones);
	j->rows = calloc(n ? n : 1, sizeof(*j->rows));
	if (!j->rows)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct kepler_history_row *r = kepler_history_row(j->b.h, i);

		if (wanted(j, r) && row_of(j, r, &j->rows[j->nrows]))
			j->nrows++;
	}
	if (j->by >= REPORT_BY_OWNER && report_group_rows(j) < 0)
		return -ENOMEM;
	sort_job = j;
	qsort(j->rows, j->nrows, sizeof(*j->rows), by_energy);
	return apportion(j);
}

/* ---- output ---- */

/* The identity fields of a row of kind @k, named as the snapshot JSON names them. */
struct field {
	const char *name;
	const char *(*get)(const struct kepler_history_row *r, const struct job *j);
};

static const char *f_node(const struct kepler_history_row *r, const struct job *j)
{
	(void)r;
	return kepler_store_meta_node(&j->meta);
}
#define GETTER(fn, member)                                                             \
	static const char *fn(const struct kepler_history_row *r, const struct job *j) \
	{                                                                              \
		(void)j;                                                               \
		return r->member;                                                      \
	}
GETTER(f_id, id)
GETTER(f_name, name)
GETTER(f_ns, ns)
GETTER(f_pod, pod_id)
GETTER(f_runtime, runtime)
GETTER(f_exe, exe)
GETTER(f_cid, container_id)
GETTER(f_vid, vm_id)
GETTER(f_okind, owner_kind)
GETTER(f_oname, owner_name)
GETTER(f_labels, labels)
#undef GETTER

static const char *f_label_key(const struct kepler_history_row *r, const struct job *j)
{
	(void)r;
	return j->label;
}

static const struct field fields[REPORT_BY_COUNT][5] = {
	[KEPLER_HISTORY_NODE] = { { "node_name", f_node } },
	[KEPLER_HISTORY_NAMESPACE] = { { "pod_namespace", f_name } },
	[KEPLER_HISTORY_POD] = { { "pod_id", f_id }, { "pod_name", f_name }, { "pod_namespace", f_ns } },
	[KEPLER_HISTORY_CONTAINER] = { { "container_id", f_id },
				       { "container_name", f_name },
				       { "runtime", f_runtime },
				       { "pod_id", f_pod },
				       { "pod_namespace", f_ns } },
	[KEPLER_HISTORY_VM] = { { "vm_id", f_id }, { "vm_name", f_name }, { "hypervisor", f_runtime } },
	[KEPLER_HISTORY_PROCESS] = { { "comm", f_name },
				     { "exe", f_exe },
				     { "container_id", f_cid },
				     { "vm_id", f_vid } },
	[REPORT_BY_OWNER] = { { "pod_namespace", f_ns },
			      { "owner_kind", f_okind },
			      { "owner_name", f_oname } },
	[REPORT_BY_LABEL] = { { "label_key", f_label_key }, { "label_value", f_labels } },
};

/* What --by said, as JSON and the table name it. */
static const char *by_name(const struct job *j)
{
	return j->by == REPORT_BY_OWNER   ? "owner"
	       : j->by == REPORT_BY_LABEL ? "label"
					  : kepler_history_kind_name((enum kepler_history_kind)j->by);
}

static void rfc3339(uint64_t ns, char *buf, size_t size)
{
	time_t t = (time_t)(ns / SEC);
	struct tm tm;
	size_t n;

	gmtime_r(&t, &tm);
	n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, size - n, ".%03uZ", (unsigned)(ns % SEC / 1000000));
}

static const char *resolution(const struct job *j)
{
	/* the coarser end's */
	if (strcmp(j->a.resolution, "snapshot"))
		return j->a.resolution;
	return j->b.resolution;
}

static void out_json(struct job *j, struct kepler_buf *o)
{
	char s[40], u[40];

	rfc3339(j->a.at_ns, s, sizeof(s));
	rfc3339(j->b.at_ns, u, sizeof(u));
	kepler_buf_printf(o, "{\"since\":\"%s\",\"until\":\"%s\",\"since_ns\":%llu,\"until_ns\":%llu,", s, u,
			  (unsigned long long)j->a.at_ns, (unsigned long long)j->b.at_ns);
	kepler_buf_printf(o, "\"resolution\":\"%s\",\"since_resolution\":\"%s\",\"until_resolution\":\"%s\",",
			  resolution(j), j->a.resolution, j->b.resolution);
	kepler_buf_printf(o, "\"by\":\"%s\",\"rows\":[", by_name(j));
	for (size_t i = 0; i < j->nrows; i++) {
		const struct row *r = &j->rows[i];

		kepler_buf_adds(o, i ? ",{" : "{");
		for (size_t f = 0; f < 5 && fields[j->by][f].name; f++) {
			kepler_fmt_json_string(o, fields[j->by][f].name);
			kepler_buf_addc(o, ':');
			kepler_fmt_json_string(o, fields[j->by][f].get(r->r, j));
			kepler_buf_addc(o, ',');
		}
		kepler_buf_printf(o, "\"cpu_time_ns\":%llu,\"zones\":[", (unsigned long long)r->cpu_time_ns);
		for (size_t z = 0; z < j->nzones; z++) {
			kepler_buf_adds(o, z ? ",{\"name\":" : "{\"name\":");
			kepler_fmt_json_string(o, j->zones[z]);
			kepler_buf_printf(o, ",\"energy_uj\":%llu", (unsigned long long)r->energy_uj[z]);
			if (j->co2e_known)
				kepler_buf_printf(o, ",\"co2e_mg\":%llu", (unsigned long long)r->co2e_mg[z]);
			kepler_buf_addc(o, '}');
		}
		kepler_buf_adds(o, "]}");
	}
	kepler_buf_adds(o, "]}\n");
}

static void out_csv(struct job *j, struct kepler_buf *o)
{
	char s[40], u[40];

	rfc3339(j->a.at_ns, s, sizeof(s));
	rfc3339(j->b.at_ns, u, sizeof(u));
	kepler_buf_adds(o, "since,until,resolution,");
	for (size_t f = 0; f < 5 && fields[j->by][f].name; f++)
		kepler_buf_printf(o, "%s,", fields[j->by][f].name);
	kepler_buf_adds(o, "cpu_time_ns,zone,energy_uj,co2e_mg\n");
	for (size_t i = 0; i < j->nrows; i++)
		for (size_t z = 0; z < j->nzones; z++) {
			const struct row *r = &j->rows[i];

			kepler_buf_printf(o, "%s,%s,%s,", s, u, resolution(j));
			for (size_t f = 0; f < 5 && fields[j->by][f].name; f++) {
				kepler_fmt_csv_field(o, fields[j->by][f].get(r->r, j));
				kepler_buf_addc(o, ',');
			}
			kepler_buf_printf(o, "%llu,", (unsigned long long)r->cpu_time_ns);
			kepler_fmt_csv_field(o, j->zones[z]);
			kepler_buf_printf(o, ",%llu,", (unsigned long long)r->energy_uj[z]);
			if (j->co2e_known)
				kepler_buf_printf(o, "%llu", (unsigned long long)r->co2e_mg[z]);
			kepler_buf_addc(o, '\n');
		}
}

/* @s for a terminal: control characters as '?', at most @w bytes. */
static void cell(struct kepler_buf *o, const char *s, int w)
{
	int n = 0;

	for (; *s && n < w; s++, n++)
		kepler_buf_addc(o, (unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s);
	for (; n < w; n++)
		kepler_buf_addc(o, ' ');
	kepler_buf_addc(o, ' ');
}

static const char *title(const struct job *j, const struct kepler_history_row *r)
{
	if (j->by == REPORT_BY_OWNER)
		return *r->ns ? r->ns : "-";
	if (j->by == REPORT_BY_LABEL)
		return r->labels;
	switch (j->kind) {
	case KEPLER_HISTORY_NODE: return kepler_store_meta_node(&j->meta);
	case KEPLER_HISTORY_POD: return *r->ns ? r->ns : "-";
	case KEPLER_HISTORY_CONTAINER: return *r->name ? r->name : r->id;
	default: return *r->name ? r->name : r->id;
	}
}

static void table_line(struct job *j, struct kepler_buf *o, const char *t, const char *d, const uint64_t *uj,
		       const uint64_t *mg)
{
	size_t p = primary(j);

	cell(o, t, 24);
	cell(o, d, 28);
	for (size_t z = 0; z < j->nzones; z++)
		kepler_buf_printf(o, "%12.6f ", (double)uj[z] / 3.6e12);
	if (j->co2e_known)
		kepler_buf_printf(o, "%12.6f", (double)mg[p] / 1e6);
	kepler_buf_addc(o, '\n');
}

static void out_table(struct job *j, struct kepler_buf *o)
{
	char s[40], u[40];
	size_t top = j->cfg->report.report_top > 0 ? (size_t)j->cfg->report.report_top : j->nrows;
	uint64_t rest_uj[KEPLER_MAX_ZONES] = { 0 }, rest_mg[KEPLER_MAX_ZONES] = { 0 };
	static const char *const detail[REPORT_BY_COUNT] = { "",           "",    "POD",   "POD",
							     "HYPERVISOR", "EXE", "OWNER", "" };
	static const char *const head[REPORT_BY_COUNT] = { "NAME", "NAME", "NAMESPACE", "NAME",
							   "NAME", "NAME", "NAMESPACE", "VALUE" };

	rfc3339(j->a.at_ns, s, sizeof(s));
	rfc3339(j->b.at_ns, u, sizeof(u));
	kepler_buf_printf(o, "%s: %s to %s (%.2f h), resolution %s; by %s, %zu rows\n",
			  kepler_store_meta_node(&j->meta), s, u, (double)(j->b.at_ns - j->a.at_ns) / 3.6e12,
			  resolution(j), by_name(j), j->nrows);
	if (j->by == REPORT_BY_LABEL)
		kepler_buf_printf(o, "label %s\n", j->label);
	cell(o, head[j->by], 24);
	cell(o, detail[j->by], 28);
	for (size_t z = 0; z < j->nzones; z++) {
		char h[40];

		snprintf(h, sizeof(h), "%.8s kWh", j->zones[z]);
		kepler_buf_printf(o, "%12s ", h);
	}
	if (j->co2e_known)
		kepler_buf_printf(o, "%12s", "kg CO2e");
	kepler_buf_addc(o, '\n');
	for (size_t i = 0; i < j->nrows; i++) {
		const struct row *r = &j->rows[i];
		char owner[KEPLER_LABEL_VALUE_MAX + 260];
		const char *d = j->by == REPORT_BY_OWNER              ? owner
				: j->by == REPORT_BY_LABEL            ? ""
				: j->kind == KEPLER_HISTORY_POD       ? r->r->name
				: j->kind == KEPLER_HISTORY_CONTAINER ? r->r->pod_id
				: j->kind == KEPLER_HISTORY_VM        ? r->r->runtime
				: j->kind == KEPLER_HISTORY_PROCESS   ? r->r->exe
								      : "";

		if (j->by == REPORT_BY_OWNER)
			snprintf(owner, sizeof(owner), "%s%s%s",
				 *r->r->owner_kind ? r->r->owner_kind : "(none)",
				 *r->r->owner_kind ? "/" : "", r->r->owner_name);
		if (i < top) {
			table_line(j, o, title(j, r->r), d, r->energy_uj, r->co2e_mg);
			continue;
		}
		for (size_t z = 0; z < j->nzones; z++)
			rest_uj[z] += r->energy_uj[z], rest_mg[z] += r->co2e_mg[z];
	}
	if (j->nrows > top) {
		char what[48];

		snprintf(what, sizeof(what), "(%zu more)", j->nrows - top);
		table_line(j, o, what, "", rest_uj, rest_mg);
	}
}

static int parse_args(const struct kepler_config *cfg, struct job *j)
{
	struct timespec ts;
	uint64_t now;

	clock_gettime(CLOCK_REALTIME, &ts);
	now = (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec;
	const char *by = cfg->report.report_by;
	enum kepler_history_kind k = KEPLER_HISTORY_NAMESPACE;

	if (!strcmp(by, "owner") || !strncmp(by, "label:", 6)) { /* pods' rows, grouped */
		j->by = by[0] == 'o' ? REPORT_BY_OWNER : REPORT_BY_LABEL;
		j->label = by + 6;
		j->kind = KEPLER_HISTORY_POD;
	} else { /* kepler_check_report_by() let only a kind or auto through */
		if (strcmp(by, "auto"))
			kepler_history_kind_from_name(by, &k);
		j->kind = k;
		j->by = (unsigned)k;
	}
	if (kepler_parse_time_flag("since", cfg->report.report_since, now, &j->since) < 0 ||
	    kepler_parse_time_flag("until", cfg->report.report_until, now, &j->until) < 0)
		return -EINVAL;
	if (j->since >= j->until) {
		kepler_err("--since %s is not before --until %s", cfg->report.report_since,
			   cfg->report.report_until);
		return -EINVAL;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct kepler_config cfg;
	struct kepler_error err = { 0 };
	struct kepler_buf out = KEPLER_BUF_INIT;
	struct job j = { 0 };
	int rc = EXIT_USAGE, r;

	kepler_config_parse_or_exit(&cfg, &kepler_program_report, argc, argv);
	kepler_log_setup(kepler_program_report.name, cfg.log_level, cfg.log_format);
	j.cfg = &cfg;
	if (parse_args(&cfg, &j) < 0)
		goto out;
	if (kepler_store_open_reader(cfg.store_path, &j.store, &err) < 0) {
		kepler_err("%s", err.msg);
		goto out;
	}
	kepler_store_get_meta(j.store, &j.meta, &err);
	if (kepler_store_tier_periods(j.store, j.periods, MAX_PERIODS, &j.nperiods, &err) < 0) {
		kepler_err("%s", err.msg);
		goto out;
	}
	r = ledgers(&j, &err);
	if (r < 0) {
		kepler_err("%s", err.msg);
		rc = r == -ENODATA || r == -EUCLEAN ? EXIT_NO_HISTORY : EXIT_USAGE;
		goto out;
	}
	if (!kepler_history_count(j.b.h)) { /* no record and no snapshot at or before --until */
		kepler_err("the store holds nothing for the window: it has nothing at or before --until %s",
			   cfg.report.report_until);
		rc = EXIT_NO_HISTORY;
		goto out;
	}
	if (j.b.at_ns <= j.a.at_ns) {
		kepler_err("the store holds nothing newer than the window's start (%s)",
			   cfg.report.report_since);
		rc = EXIT_NO_HISTORY;
		goto out;
	}
	if (j.a.missed || j.b.missed)
		kepler_warn(
			"a tier record used was written after the collector was down across its boundary: "
			"energy of the time it was down is not measured");
	if (collect_rows(&j) < 0) {
		kepler_err("out of memory");
		goto out;
	}
	if (!j.nrows && !strcmp(cfg.report.report_by, "auto")) {
		/* no pods in the window (a host without Kubernetes): the processes, rather than no rows */
		kepler_info(
			"no namespace in the window (no pods): one row per process group (--by sets the kind)");
		free(j.rows);
		j.rows = NULL;
		j.kind = KEPLER_HISTORY_PROCESS;
		j.by = (unsigned)j.kind;
		if (collect_rows(&j) < 0) {
			kepler_err("out of memory");
			goto out;
		}
	}
	if (j.by == REPORT_BY_LABEL && j.nrows == 1 && !strcmp(j.rows[0].r->labels, REPORT_NO_LABEL))
		kepler_warn("no pod in the window has label %s recorded: the collector records the labels "
			    "kube.pod-labels names",
			    j.label);
	if (cfg.report.report_format == KEPLER_REPORT_JSON)
		out_json(&j, &out);
	else if (cfg.report.report_format == KEPLER_REPORT_CSV)
		out_csv(&j, &out);
	else
		out_table(&j, &out);
	rc = 1;
	if (out.error)
		kepler_err("out of memory");
	else if (fwrite(out.data ? out.data : "", 1, out.len, stdout) != out.len || fflush(stdout))
		kepler_err("cannot write the report: %s", strerror(errno));
	else
		rc = 0;
out:
	kepler_buf_free(&out);
	free(j.rows);
	report_groups_free(&j);
	kepler_history_free(j.a.h);
	kepler_history_free(j.b.h);
	kepler_store_close(j.store);
	kepler_config_done(&cfg);
	return rc;
}
