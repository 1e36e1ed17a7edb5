// SPDX-License-Identifier: Apache-2.0
/*
 * A snapshot as plain-text tables for people: the node's zones, then one
 * table per workload level, sorted and limited. No terminal codes; names
 * are made safe to print (control characters become '?', invalid UTF-8
 * U+FFFD) and cut to their column.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fmt_internal.h"
#include "kepler/fmt.h"

/* @s, printable, in a column of @width characters (left-aligned; cut, with '~' if @mark). */
static void cell_cut(struct kepler_buf *out, const char *s, int width, bool mark)
{
	const unsigned char *p = (const unsigned char *)(s && *s ? s : "-");
	int used = 0;

	while (*p && used < width) {
		size_t n = kepler_fmt_utf8_len(p);

		if (mark && used == width - 1 && p[n ? n : 1]) {
			kepler_buf_addc(out, '~'); /* more follows */
			used++;
			break;
		}
		if (n == 0) {
			kepler_buf_add(out, "\xEF\xBF\xBD", 3);
			p++;
		} else if (n == 1 && (*p < 0x20 || *p == 0x7f)) {
			kepler_buf_addc(out, '?');
			p++;
		} else {
			kepler_buf_add(out, p, n);
			p += n;
		}
		used++;
	}
	for (; used < width; used++)
		kepler_buf_addc(out, ' ');
	kepler_buf_addc(out, ' ');
}

static void cell(struct kepler_buf *out, const char *s, int width)
{
	cell_cut(out, s, width, true);
}

/* Identifiers are cut silently, as short container ids are. */
static void cell_id(struct kepler_buf *out, const char *s, int width)
{
	cell_cut(out, s, width, false);
}

static double watts(uint64_t delta_uj, uint64_t interval_ns)
{
	return interval_ns ? (double)delta_uj * 1000.0 / (double)interval_ns : 0.0;
}

static void header(struct kepler_buf *out, const struct kepler_snapshot *s)
{
	time_t t = (time_t)(s->wall_ns / 1000000000ULL);
	struct tm tm;
	char when[64];

	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	kepler_buf_printf(
		out, "snapshot %llu  %s  interval %.2f s  CPU %.1f %%%s\n", (unsigned long long)s->seq, when,
		(double)s->interval_ns / 1e9, s->cpu_usage_ratio * 100.0,
		(s->flags & KEPLER_SNAP_FIRST) ? "  (first after a collector start: no deltas yet)" : "");
}

static void node_table(struct kepler_buf *out, const struct kepler_snapshot *s)
{
	kepler_buf_printf(out, "\n%-10s %-7s %10s %10s %10s %14s  %s\n", "ZONE", "SOURCE", "W", "ACTIVE W",
			  "IDLE W", "ENERGY J", "PATH");
	for (size_t z = 0; z < s->nzones; z++) {
		const struct kepler_zone *zn = &s->zones[z];

		cell(out, zn->name, 10);
		cell(out, kepler_source_name(zn->source), 7);
		kepler_buf_printf(
			out, "%10.2f %10.2f %10.2f %14.3f  ", watts(zn->energy.delta_uj, s->interval_ns),
			watts(zn->active.delta_uj, s->interval_ns), watts(zn->idle.delta_uj, s->interval_ns),
			(double)zn->energy.total_uj / 1e6);
		cell(out, zn->path, 40);
		while (out->len && out->data[out->len - 1] == ' ')
			out->len--;
		kepler_buf_addc(out, '\n');
	}
}

static const char *const titles[] = { "PROCESSES", "CONTAINERS", "VMS", "PODS" };

/* the identity columns of a kind: heading, then each row */
static void id_heading(struct kepler_buf *out, enum kepler_kind k)
{
	if (k == KEPLER_KIND_PROCESS)
		kepler_buf_printf(out, "%8s %-16s %-9s %-10s %-12s ", "PID", "COMM", "TYPE", "STATE",
				  "CONTAINER");
	else if (k == KEPLER_KIND_CONTAINER)
		kepler_buf_printf(out, "%-12s %-16s %-10s %-10s %-12s ", "ID", "NAME", "RUNTIME", "STATE",
				  "POD");
	else if (k == KEPLER_KIND_VM)
		kepler_buf_printf(out, "%-12s %-16s %-10s %-10s ", "ID", "NAME", "HYPERVISOR", "STATE");
	else
		kepler_buf_printf(out, "%-12s %-16s %-16s %-10s ", "UID", "NAME", "NAMESPACE", "STATE");
}

static void id_cells(struct kepler_buf *out, const struct kepler_snapshot *s, const struct kepler_workload *w)
{
	const char *state = kepler_state_name(w->usage->state);

	if (w->kind == KEPLER_KIND_PROCESS) {
		kepler_buf_printf(out, "%8u ", w->pid);
		cell(out, w->title, 16);
		cell(out, kepler_process_type_name(s->processes[w->index].type), 9);
		cell(out, state, 10);
		cell_id(out, s->processes[w->index].container_id, 12);
		return;
	}
	cell_id(out, w->id, 12);
	cell(out, w->title, 16);
	cell(out, w->detail, w->kind == KEPLER_KIND_POD ? 16 : 10);
	cell(out, state, 10);
	if (w->kind == KEPLER_KIND_CONTAINER)
		cell_id(out, w->parent, 12);
}

static int kind_table(struct kepler_buf *out, const struct kepler_snapshot *s, enum kepler_kind kind,
		      const struct kepler_table_options *o)
{
	size_t n = kepler_workload_count(s, kind), shown, pz = kepler_primary_zone(s);
	struct kepler_workload *rows = calloc(n ? n : 1, sizeof(*rows));

	if (!rows)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		rows[i] = kepler_workload_at(s, kind, i);
	kepler_workload_sort(s, rows, n, o->sort);
	shown = o->limit && o->limit < n ? o->limit : n;
	kepler_buf_printf(out, "\n%s  %zu", titles[kind], n);
	if (shown < n)
		kepler_buf_printf(out, " (top %zu shown)", shown);
	kepler_buf_printf(out, ", by %s%s%s\n", kepler_sort_name(o->sort),
			  o->sort <= KEPLER_SORT_ENERGY && s->nzones ? " in " : "",
			  o->sort <= KEPLER_SORT_ENERGY && s->nzones ? s->zones[pz].name : "");
	id_heading(out, kind);
	kepler_buf_printf(out, "%6s", "CPU%");
	for (size_t z = 0; z < s->nzones; z++)
		kepler_buf_printf(out, " %9.9s", s->zones[z].name);
	kepler_buf_printf(out, " %12s\n", "ENERGY J");
	for (size_t k = 0; k < shown; k++) {
		const struct kepler_usage *u = rows[k].usage;

		id_cells(out, s, &rows[k]);
		kepler_buf_printf(
			out, "%6.1f",
			s->interval_ns ? (double)u->cpu_time_delta_ns * 100.0 / (double)s->interval_ns : 0.0);
		for (size_t z = 0; z < s->nzones; z++)
			kepler_buf_printf(out, " %9.3f", watts(u->zones[z].delta_uj, s->interval_ns));
		kepler_buf_printf(out, " %12.3f\n", s->nzones ? (double)u->zones[pz].total_uj / 1e6 : 0.0);
	}
	free(rows);
	return 0;
}

int kepler_fmt_table(const struct kepler_snapshot *s, const struct kepler_table_options *o,
		     struct kepler_buf *out)
{
	header(out, s);
	if (o->levels & KEPLER_LEVEL_NODE)
		node_table(out, s);
	for (int k = 0; k < KEPLER_KIND_COUNT; k++)
		if ((o->levels & kepler_level_of((enum kepler_kind)k)) &&
		    kind_table(out, s, (enum kepler_kind)k, o) < 0 && !out->error)
			out->error = -ENOMEM;
	return out->error;
}
