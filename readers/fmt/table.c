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

size_t kepler_primary_zone(const struct kepler_snapshot *snap)
{
	static const char *const order[] = { "psys", "package", "core", "dram", "uncore" };

	for (size_t o = 0; o < sizeof(order) / sizeof(order[0]); o++)
		for (size_t z = 0; z < snap->nzones; z++)
			if (!strcmp(snap->zones[z].name, order[o]))
				return z;
	return 0;
}

int kepler_sort_from_name(const char *name, enum kepler_sort *ret)
{
	static const char *const names[] = { "watts", "energy", "cpu", "pid", "name" };

	for (int i = 0; i < 5; i++)
		if (!strcmp(name, names[i])) {
			*ret = (enum kepler_sort)i;
			return 0;
		}
	return -EINVAL;
}

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

struct row {
	const char *id, *name;
	uint32_t pid;
	const struct kepler_usage *u;
	size_t index; /* in the snapshot's array of its level */
};

struct sort_ctx {
	enum kepler_sort sort;
	size_t zone;
};

static int by_key(const void *x, const void *y, void *arg)
{
	const struct row *a = x, *b = y;
	const struct sort_ctx *c = arg;
	uint64_t ka = 0, kb = 0;

	switch (c->sort) {
	case KEPLER_SORT_WATTS:
		ka = a->u->zones[c->zone].delta_uj;
		kb = b->u->zones[c->zone].delta_uj;
		if (ka == kb) {
			ka = a->u->zones[c->zone].total_uj;
			kb = b->u->zones[c->zone].total_uj;
		}
		break;
	case KEPLER_SORT_ENERGY:
		ka = a->u->zones[c->zone].total_uj;
		kb = b->u->zones[c->zone].total_uj;
		break;
	case KEPLER_SORT_CPU:
		ka = a->u->cpu_time_delta_ns;
		kb = b->u->cpu_time_delta_ns;
		break;
	case KEPLER_SORT_PID:
		if (a->pid != b->pid)
			return a->pid < b->pid ? -1 : 1;
		return strcmp(a->id, b->id);
	case KEPLER_SORT_NAME: {
		int r = strcmp(a->name, b->name);

		return r ? r : (a->pid < b->pid ? -1 : a->pid > b->pid);
	}
	}
	if (ka != kb)
		return ka > kb ? -1 : 1; /* largest first */
	return a->pid != b->pid ? (a->pid < b->pid ? -1 : 1) : strcmp(a->id, b->id);
}

static void header(struct kepler_buf *out, const struct kepler_snapshot *s)
{
	time_t t = (time_t)(s->wall_ns / 1000000000ULL);
	struct tm tm;
	char when[64];

	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	kepler_buf_printf(out, "snapshot %llu  %s  interval %.2f s  CPU %.1f %%%s\n",
			  (unsigned long long)s->seq, when, (double)s->interval_ns / 1e9,
			  s->cpu_usage_ratio * 100.0,
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
		kepler_buf_printf(out, "%10.2f %10.2f %10.2f %14.3f  ", watts(zn->energy.delta_uj, s->interval_ns),
				  watts(zn->active.delta_uj, s->interval_ns),
				  watts(zn->idle.delta_uj, s->interval_ns), (double)zn->energy.total_uj / 1e6);
		cell(out, zn->path, 40);
		while (out->len && out->data[out->len - 1] == ' ')
			out->len--;
		kepler_buf_addc(out, '\n');
	}
}

enum level { L_PROC, L_CONTAINER, L_VM, L_POD };

static const char *const titles[] = { "PROCESSES", "CONTAINERS", "VMS", "PODS" };

/* the identity columns of a level: heading, then each row */
static void id_heading(struct kepler_buf *out, enum level lv)
{
	if (lv == L_PROC)
		kepler_buf_printf(out, "%8s %-16s %-9s %-10s %-12s ", "PID", "COMM", "TYPE", "STATE", "CONTAINER");
	else if (lv == L_CONTAINER)
		kepler_buf_printf(out, "%-12s %-16s %-10s %-10s %-12s ", "ID", "NAME", "RUNTIME", "STATE", "POD");
	else if (lv == L_VM)
		kepler_buf_printf(out, "%-12s %-16s %-10s %-10s ", "ID", "NAME", "HYPERVISOR", "STATE");
	else
		kepler_buf_printf(out, "%-12s %-16s %-16s %-10s ", "UID", "NAME", "NAMESPACE", "STATE");
}

static void id_cells(struct kepler_buf *out, const struct kepler_snapshot *s, enum level lv, const struct row *r,
		     size_t i)
{
	const char *state = kepler_state_name(r->u->state);

	if (lv == L_PROC) {
		const struct kepler_process *p = &s->processes[i];

		kepler_buf_printf(out, "%8u ", p->pid);
		cell(out, p->comm, 16);
		cell(out, kepler_process_type_name(p->type), 9);
		cell(out, state, 10);
		cell_id(out, p->container_id, 12);
	} else if (lv == L_CONTAINER) {
		cell_id(out, s->containers[i].id, 12);
		cell(out, s->containers[i].name, 16);
		cell(out, s->containers[i].runtime, 10);
		cell(out, state, 10);
		cell_id(out, s->containers[i].pod_id, 12);
	} else if (lv == L_VM) {
		cell_id(out, s->vms[i].id, 12);
		cell(out, s->vms[i].name, 16);
		cell(out, s->vms[i].hypervisor, 10);
		cell(out, state, 10);
	} else {
		cell_id(out, s->pods[i].id, 12);
		cell(out, s->pods[i].name, 16);
		cell(out, s->pods[i].ns, 16);
		cell(out, state, 10);
	}
}

static size_t level_rows(const struct kepler_snapshot *s, enum level lv, struct row *rows)
{
	size_t n = lv == L_PROC ? s->nprocesses : lv == L_CONTAINER ? s->ncontainers : lv == L_VM ? s->nvms : s->npods;

	for (size_t i = 0; i < n && rows; i++) {
		struct row *r = &rows[i];

		if (lv == L_PROC) {
			const struct kepler_process *p = &s->processes[i];

			*r = (struct row){ "", p->comm, p->pid, &p->usage, i };
		} else if (lv == L_CONTAINER) {
			const struct kepler_container *c = &s->containers[i];

			*r = (struct row){ c->id, c->name[0] ? c->name : c->id, 0, &c->usage, i };
		} else if (lv == L_VM) {
			*r = (struct row){ s->vms[i].id, s->vms[i].name, 0, &s->vms[i].usage, i };
		} else {
			const struct kepler_pod *p = &s->pods[i];

			*r = (struct row){ p->id, p->name[0] ? p->name : p->id, 0, &p->usage, i };
		}
	}
	return n;
}

static const char *const sort_names[] = { "watts", "energy", "cpu", "pid", "name" };

static int level_table(struct kepler_buf *out, const struct kepler_snapshot *s, enum level lv,
		       const struct kepler_table_options *o)
{
	size_t n = level_rows(s, lv, NULL), shown, pz = kepler_primary_zone(s);
	struct row *rows = calloc(n ? n : 1, sizeof(*rows));
	struct sort_ctx ctx = { o->sort, pz };

	if (!rows)
		return -ENOMEM;
	level_rows(s, lv, rows);
	qsort_r(rows, n, sizeof(*rows), by_key, &ctx);
	shown = o->limit && o->limit < n ? o->limit : n;
	kepler_buf_printf(out, "\n%s  %zu", titles[lv], n);
	if (shown < n)
		kepler_buf_printf(out, " (top %zu shown)", shown);
	kepler_buf_printf(out, ", by %s%s%s\n", sort_names[o->sort],
			  o->sort <= KEPLER_SORT_ENERGY && s->nzones ? " in " : "",
			  o->sort <= KEPLER_SORT_ENERGY && s->nzones ? s->zones[pz].name : "");
	id_heading(out, lv);
	kepler_buf_printf(out, "%6s", "CPU%");
	for (size_t z = 0; z < s->nzones; z++)
		kepler_buf_printf(out, " %9.9s", s->zones[z].name);
	kepler_buf_printf(out, " %12s\n", "ENERGY J");
	for (size_t k = 0; k < shown; k++) {
		const struct kepler_usage *u = rows[k].u;

		id_cells(out, s, lv, &rows[k], rows[k].index);
		kepler_buf_printf(out, "%6.1f", s->interval_ns ? (double)u->cpu_time_delta_ns * 100.0 / (double)s->interval_ns : 0.0);
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
	static const unsigned bits[] = { KEPLER_LEVEL_PROCESS, KEPLER_LEVEL_CONTAINER, KEPLER_LEVEL_VM,
					 KEPLER_LEVEL_POD };

	header(out, s);
	if (o->levels & KEPLER_LEVEL_NODE)
		node_table(out, s);
	for (int lv = L_PROC; lv <= L_POD; lv++)
		if ((o->levels & bits[lv]) && level_table(out, s, (enum level)lv, o) < 0 && !out->error)
			out->error = -ENOMEM;
	return out->error;
}
