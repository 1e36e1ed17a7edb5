// SPDX-License-Identifier: Apache-2.0
/*
 * The process families of the Prometheus exposition (fmt_internal.h):
 * Kepler's labels, duplicates told apart by pid, short processes as their
 * folds (metrics.process.fold), the top-N cut (metrics.process.top) with
 * the rest summed so that totals stay exact.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt_internal.h"
#include "kepler/fmt.h"

/* Label text of each process, rendered once: A = comm..pid, B = type, vm_id. */
struct proc_labels {
	struct kepler_buf text;
	size_t *a, *b; /* offsets: a[i]..b[i] is A, b[i]..a[i+1] is B */
	bool *dup_energy, *dup_seconds;
	bool *folded;  /* metrics.process.fold: shown through its fold */
	bool *top;     /* metrics.process.top: [i * nzones + z], one of zone z's top; NULL: all */
	bool *any_top; /* [i]: of the top of some zone */
	/* ,state="..." and ,zone="..." rendered once, not once a line */
	struct kepler_buf fixed;
	size_t state_at[KEPLER_STATE_COUNT + 1], zone_at[KEPLER_MAX_ZONES + 1];
};

static void render_fixed_labels(struct prom *pr, struct proc_labels *pl)
{
	for (int st = 0; st < KEPLER_STATE_COUNT; st++) {
		pl->state_at[st] = pl->fixed.len;
		prom_label(&pl->fixed, "state", kepler_state_name((enum kepler_state)st), false);
	}
	pl->state_at[KEPLER_STATE_COUNT] = pl->fixed.len;
	for (size_t z = 0; z < pr->s->nzones; z++) {
		pl->zone_at[z] = pl->fixed.len;
		prom_label(&pl->fixed, "zone", pr->s->zones[z].name, false);
	}
	pl->zone_at[pr->s->nzones] = pl->fixed.len;
}

/* Whether process @i has GPU energy (its GPU families show it, whatever the top and the folds). */
static bool uses_gpu(const struct prom *pr, size_t i)
{
	const struct kepler_process *p = &pr->s->processes[i];

	for (size_t z = 0; z < pr->s->nzones; z++)
		if (pr->device[z] && p->usage.zones[z].total_uj)
			return true;
	return false;
}

/* Whether a series of process @i is written: of the top (or no top) and not folded, or of a GPU family. */
static bool needs_labels(const struct prom *pr, const struct proc_labels *pl, size_t i)
{
	return ((!pl->any_top || pl->any_top[i]) && !pl->folded[i]) || uses_gpu(pr, i);
}

/* NAME="VALUE" after @lit (the literal ,NAME=" or NAME="): prom_label()'s bytes without a strlen of the name. */
#define PROC_LABEL(out, lit, value)                            \
	do {                                                   \
		kepler_buf_add((out), (lit), sizeof(lit) - 1); \
		kepler_fmt_prom_label_value((out), (value));   \
		kepler_buf_addc((out), '"');                   \
	} while (0)

/*
 * The labels of the processes written (with a top of 100 among 10,000:
 * those 100 and no more): prom_label()'s bytes, the node's label escaped
 * once for them all and the pid written as the integer it is (this runs
 * for every process of every scrape and push).
 */
static void render_proc_labels(struct prom *pr, struct proc_labels *pl)
{
	const struct kepler_snapshot *s = pr->s;
	struct kepler_buf node = KEPLER_BUF_INIT;

	prom_label(&node, "node_name", pr->node, false);
	if (node.error)
		pl->text.error = node.error;
	for (size_t i = 0; i < s->nprocesses && !node.error; i++) {
		const struct kepler_process *p = &s->processes[i];

		pl->a[i] = pl->text.len;
		if (!needs_labels(pr, pl, i)) {
			pl->b[i] = pl->text.len;
			continue;
		}
		PROC_LABEL(&pl->text, "comm=\"", p->comm);
		PROC_LABEL(&pl->text, ",container_id=\"", p->container_id);
		PROC_LABEL(&pl->text, ",exe=\"", p->exe);
		kepler_buf_add(&pl->text, node.data, node.len);
		kepler_buf_add(&pl->text, ",pid=\"", 6);
		kepler_buf_u64(&pl->text, p->pid);
		kepler_buf_addc(&pl->text, '"');
		pl->b[i] = pl->text.len;
		PROC_LABEL(&pl->text, ",type=\"", kepler_process_type_name(p->type));
		PROC_LABEL(&pl->text, ",vm_id=\"", p->vm_id);
	}
	pl->a[s->nprocesses] = pl->text.len;
	kepler_buf_free(&node);
}
#undef PROC_LABEL

/*
 * pid, then running first, then the most CPU time first (a process's
 * pieces, cut at each change of identity, and its own record are its
 * cumulative at different times: of those with one label set the latest
 * is kept, so its series never goes down), then newest first
 */
static int by_pid(const void *x, const void *y, void *ctx)
{
	const struct kepler_process *procs = ctx;
	const struct kepler_process *a = &procs[*(const size_t *)x];
	const struct kepler_process *b = &procs[*(const size_t *)y];

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->usage.state != b->usage.state)
		return a->usage.state == KEPLER_STATE_RUNNING ? -1 : 1;
	if (a->usage.cpu_time_ns != b->usage.cpu_time_ns)
		return a->usage.cpu_time_ns > b->usage.cpu_time_ns ? -1 : 1;
	if (a->start_time_ns != b->start_time_ns)
		return a->start_time_ns > b->start_time_ns ? -1 : 1;
	return 0;
}

static bool same_labels(const struct kepler_process *a, const struct kepler_process *b)
{
	return a->type == b->type && !strcmp(a->comm, b->comm) && !strcmp(a->exe, b->exe) &&
	       !strcmp(a->container_id, b->container_id) && !strcmp(a->vm_id, b->vm_id);
}

/*
 * A reused pid within the terminated TTL, or a process's pieces, could
 * give two records the same label set; keep the first of each in by_pid()'s
 * order.
 */
static int find_duplicates(const struct kepler_snapshot *s, struct proc_labels *pl)
{
	size_t n = s->nprocesses, *order = malloc((n ? n : 1) * sizeof(*order));
	bool sorted = true;

	if (!order)
		return -1;
	for (size_t i = 0; i < n; i++) {
		order[i] = i;
		sorted = sorted && (i == 0 || by_pid(&order[i - 1], &order[i], (void *)s->processes) <= 0);
	}
	if (!sorted) /* (a snapshot's processes are mostly in pid order already) */
		qsort_r(order, n, sizeof(*order), by_pid, (void *)s->processes);
	for (size_t r = 0; r < n;) {
		size_t end = r + 1;

		while (end < n && s->processes[order[end]].pid == s->processes[order[r]].pid)
			end++;
		for (size_t i = r + 1; i < end; i++)
			for (size_t j = r; j < i; j++) {
				const struct kepler_process *a = &s->processes[order[i]];
				const struct kepler_process *b = &s->processes[order[j]];

				if (!same_labels(a, b))
					continue;
				pl->dup_seconds[order[i]] = true;
				if (a->usage.state == b->usage.state)
					pl->dup_energy[order[i]] = true;
			}
		r = end;
	}
	free(order);
	return 0;
}

/*
 * NAME{labels} of process @i: with its state or not, with zone @zone's
 * label or none (-1). NAME{ is a literal, its length known (proc_line()).
 */
static void proc_line_n(struct prom *pr, const struct proc_labels *pl, size_t i, const char *name_brace,
			size_t len, bool with_state, int zone)
{
	const struct kepler_process *p = &pr->s->processes[i];

	kepler_buf_add(pr->out, name_brace, len);
	kepler_buf_add(pr->out, pl->text.data + pl->a[i], pl->b[i] - pl->a[i]);
	if (with_state && (unsigned)p->usage.state < KEPLER_STATE_COUNT)
		kepler_buf_add(pr->out, pl->fixed.data + pl->state_at[p->usage.state],
			       pl->state_at[p->usage.state + 1] - pl->state_at[p->usage.state]);
	else if (with_state)
		prom_label(pr->out, "state", kepler_state_name(p->usage.state), false);
	kepler_buf_add(pr->out, pl->text.data + pl->b[i], pl->a[i + 1] - pl->b[i]);
	if (zone >= 0)
		kepler_buf_add(pr->out, pl->fixed.data + pl->zone_at[zone],
			       pl->zone_at[zone + 1] - pl->zone_at[zone]);
	kepler_buf_add(pr->out, "} ", 2);
}
#define proc_line(pr, pl, i, name, with_state, zone) \
	proc_line_n((pr), (pl), (i), name "{", sizeof(name "{") - 1, (with_state), (zone))

/* Sort key of the top: more energy in the zone first, then the lower pid. */
struct top_key {
	uint64_t total_uj;
	uint32_t pid;
	size_t i;
};

static int by_energy(const void *x, const void *y)
{
	const struct top_key *a = x, *b = y;

	if (a->total_uj != b->total_uj)
		return a->total_uj > b->total_uj ? -1 : 1;
	return (a->pid > b->pid) - (a->pid < b->pid);
}

/*
 * metrics.process.top N: per zone, the N processes with the most energy
 * (cumulative, so membership changes slowly: a process joins when its
 * total passes the N-th's). -1 for out of memory.
 */
static int choose_top(struct prom *pr, struct proc_labels *pl)
{
	const struct kepler_snapshot *s = pr->s;
	size_t n = s->nprocesses, nz = s->nzones ? s->nzones : 1;
	struct top_key *keys = malloc((n ? n : 1) * sizeof(*keys));

	pl->top = calloc(n * nz + 1, sizeof(bool));
	pl->any_top = calloc(n + 1, sizeof(bool));
	if (!keys || !pl->top || !pl->any_top) {
		free(keys);
		return -1;
	}
	for (size_t z = 0; z < s->nzones; z++) {
		size_t m = 0;

		for (size_t i = 0; i < n; i++)
			if (!pl->dup_energy[i] && !pl->folded[i])
				keys[m++] = (struct top_key){ s->processes[i].usage.zones[z].total_uj,
							      s->processes[i].pid, i };
		qsort(keys, m, sizeof(*keys), by_energy);
		for (size_t k = 0; k < m && k < pr->process_top; k++) {
			pl->top[keys[k].i * nz + z] = true;
			pl->any_top[keys[k].i] = true;
		}
	}
	free(keys);
	return 0;
}

static bool shown(const struct prom *pr, const struct proc_labels *pl, size_t i, size_t z)
{
	return pr->zone_on[z] && !pl->dup_energy[i] && !pl->folded[i] &&
	       (!pl->top || pl->top[i * (pr->s->nzones ? pr->s->nzones : 1) + z]);
}

/*
 * With a top: per zone one series for every process outside it, carrying
 * the sum of their power, so that per zone the exported process watts still
 * add up to the node's active watts exactly (in microjoules; each printed
 * value is truncated to the picowatt). Only a gauge: a counter of "the
 * rest" would go down whenever a process joins the top.
 */
static void other_watts(struct prom *pr, const struct proc_labels *pl)
{
	const struct kepler_snapshot *s = pr->s;

	for (size_t z = 0; z < s->nzones; z++) {
		uint64_t rest = 0;

		if (!pr->zone_on[z])
			continue;
		for (size_t i = 0; i < s->nprocesses; i++)
			if (!shown(pr, pl, i, z) && !pl->folded[i])
				rest += s->processes[i].usage.zones[z].delta_uj;
		kepler_buf_adds(pr->out, "kepler_process_cpu_watts{");
		prom_label(pr->out, "comm", "other", true);
		prom_label(pr->out, "container_id", "", false);
		prom_label(pr->out, "exe", "", false);
		prom_label(pr->out, "node_name", pr->node, false);
		prom_label(pr->out, "pid", "", false);
		prom_label(pr->out, "state", "running", false);
		prom_label(pr->out, "type", "other", false);
		prom_label(pr->out, "vm_id", "", false);
		prom_label(pr->out, "zone", s->zones[z].name, false);
		kepler_buf_add(pr->out, "} ", 2);
		prom_watts(&pr->w, rest, s->interval_ns);
		kepler_prom_end(&pr->w);
	}
}

/*
 * A fold's labels, in the order of a process's: comm, exe and pid empty,
 * type "folded", state "terminated" (what its processes are).
 */
static void fold_line(struct prom *pr, const struct kepler_fold *f, const char *name, bool with_state,
		      const char *zone)
{
	kepler_buf_adds(pr->out, name);
	kepler_buf_addc(pr->out, '{');
	prom_label(pr->out, "comm", "", true);
	prom_label(pr->out, "container_id", f->container_id, false);
	prom_label(pr->out, "exe", "", false);
	prom_label(pr->out, "node_name", pr->node, false);
	prom_label(pr->out, "pid", "", false);
	if (with_state)
		prom_label(pr->out, "state", "terminated", false);
	prom_label(pr->out, "type", "folded", false);
	prom_label(pr->out, "vm_id", f->vm_id, false);
	if (zone)
		prom_label(pr->out, "zone", zone, false);
	kepler_buf_add(pr->out, "} ", 2);
}

/* kind 0: joules, 1: watts, 2: idle joules, 3: idle watts; each fold's series per exported zone */
static void fold_lines(struct prom *pr, const char *name, int kind)
{
	const struct kepler_snapshot *s = pr->s;

	for (size_t i = 0; pr->process_fold && i < s->nfolds; i++) {
		const struct kepler_fold *f = &s->folds[i];
		const struct kepler_energy *e = kind >= 2 ? f->usage.idle : f->usage.zones;

		for (size_t z = 0; e && z < s->nzones; z++) {
			if (!pr->zone_on[z])
				continue;
			fold_line(pr, f, name, true, s->zones[z].name);
			if (kind % 2)
				prom_watts(&pr->w, e[z].delta_uj, s->interval_ns);
			else
				prom_joules(&pr->w, e[z].total_uj);
			kepler_prom_end(&pr->w);
		}
	}
}

/* A process's labels for its GPU families: the CPU families' without zone. @ctx: the proc_labels */
static void proc_gpu_labels(struct prom *pr, size_t i, void *ctx)
{
	const struct proc_labels *pl = ctx;

	kepler_buf_add(pr->out, pl->text.data + pl->a[i], pl->b[i] - pl->a[i]);
	prom_label(pr->out, "state", kepler_state_name(pr->s->processes[i].usage.state), false);
	kepler_buf_add(pr->out, pl->text.data + pl->b[i], pl->a[i + 1] - pl->b[i]);
}

/* Under an idle policy: the idle energy given to each process (kepler-c's, beside Kepler's). */
static void process_idle_families(struct prom *pr, struct proc_labels *pl)
{
	const struct kepler_snapshot *s = pr->s;

	if (s->idle_policy == KEPLER_IDLE_NONE)
		return;
	kepler_prom_familyf(
		&pr->w, "kepler_process_cpu_idle_joules_total", "counter",
		"Idle energy of cpu given to the process by attribution.idle %s in joules" ESTIMATE_NOTE,
		kepler_idle_policy_name(s->idle_policy));
	for (size_t i = 0; i < s->nprocesses; i++)
		for (size_t z = 0; z < s->nzones && s->processes[i].usage.idle; z++) {
			if (!shown(pr, pl, i, z))
				continue;
			proc_line(pr, pl, i, "kepler_process_cpu_idle_joules_total", true, (int)z);
			prom_joules(&pr->w, s->processes[i].usage.idle[z].total_uj);
			kepler_prom_end(&pr->w);
		}
	fold_lines(pr, "kepler_process_cpu_idle_joules_total", 2);
	kepler_prom_familyf(
		&pr->w, "kepler_process_cpu_idle_watts", "gauge",
		"Idle power of cpu given to the process by attribution.idle %s in watts" ESTIMATE_NOTE,
		kepler_idle_policy_name(s->idle_policy));
	for (size_t i = 0; i < s->nprocesses; i++)
		for (size_t z = 0; z < s->nzones && s->processes[i].usage.idle; z++) {
			if (!shown(pr, pl, i, z))
				continue;
			proc_line(pr, pl, i, "kepler_process_cpu_idle_watts", true, (int)z);
			prom_watts(&pr->w, s->processes[i].usage.idle[z].delta_uj, s->interval_ns);
			kepler_prom_end(&pr->w);
		}
	fold_lines(pr, "kepler_process_cpu_idle_watts", 3);
}

static void process_families(struct prom *pr, struct proc_labels *pl)
{
	const struct kepler_snapshot *s = pr->s;

	kepler_prom_family(&pr->w, "kepler_process_cpu_joules_total", "counter",
			   "Energy consumption of cpu at process level in joules" ESTIMATE_NOTE);
	for (size_t i = 0; i < s->nprocesses; i++)
		for (size_t z = 0; z < s->nzones && !pl->dup_energy[i]; z++) {
			if (!shown(pr, pl, i, z))
				continue;
			proc_line(pr, pl, i, "kepler_process_cpu_joules_total", true, (int)z);
			prom_joules(&pr->w, s->processes[i].usage.zones[z].total_uj);
			kepler_prom_end(&pr->w);
		}
	fold_lines(pr, "kepler_process_cpu_joules_total", 0);
	kepler_prom_family(&pr->w, "kepler_process_cpu_watts", "gauge",
			   "Power consumption of cpu at process level in watts" ESTIMATE_NOTE);
	for (size_t i = 0; i < s->nprocesses; i++)
		for (size_t z = 0; z < s->nzones && !pl->dup_energy[i]; z++) {
			if (!shown(pr, pl, i, z))
				continue;
			proc_line(pr, pl, i, "kepler_process_cpu_watts", true, (int)z);
			prom_watts(&pr->w, s->processes[i].usage.zones[z].delta_uj, s->interval_ns);
			kepler_prom_end(&pr->w);
		}
	fold_lines(pr, "kepler_process_cpu_watts", 1);
	if (pl->top)
		other_watts(pr, pl);
	process_idle_families(pr, pl);
	prom_gpu_workloads(pr, KEPLER_KIND_PROCESS, proc_gpu_labels, pl, pl->dup_energy);
	kepler_prom_family(&pr->w, "kepler_process_cpu_seconds_total", "counter",
			   "Total user and system time of cpu at process level in seconds");
	for (size_t i = 0; i < s->nprocesses; i++) {
		if (pl->dup_seconds[i] || pl->folded[i] || (pl->any_top && !pl->any_top[i]))
			continue;
		proc_line(pr, pl, i, "kepler_process_cpu_seconds_total", false, -1);
		prom_seconds(&pr->w, s->processes[i].usage.cpu_time_ns);
		kepler_prom_end(&pr->w);
	}
	for (size_t i = 0; pr->process_fold && i < s->nfolds; i++) {
		fold_line(pr, &s->folds[i], "kepler_process_cpu_seconds_total", false, NULL);
		prom_seconds(&pr->w, s->folds[i].usage.cpu_time_ns);
		kepler_prom_end(&pr->w);
	}
}

int prom_processes(struct prom *pr)
{
	size_t n = pr->s->nprocesses;
	struct proc_labels pl = { .text = KEPLER_BUF_INIT, .fixed = KEPLER_BUF_INIT };
	int r = -1;

	pl.a = malloc((n + 1) * sizeof(size_t));
	pl.b = malloc((n + 1) * sizeof(size_t));
	pl.dup_energy = calloc(n + 1, sizeof(bool));
	pl.dup_seconds = calloc(n + 1, sizeof(bool));
	pl.folded = calloc(n + 1, sizeof(bool));
	if (!pl.a || !pl.b || !pl.dup_energy || !pl.dup_seconds || !pl.folded)
		goto out;
	for (size_t i = 0; pr->process_fold && i < n; i++)
		pl.folded[i] = pr->s->processes[i].flags & KEPLER_PROCESS_FOLDED;
	if (find_duplicates(pr->s, &pl) < 0)
		goto out;
	if (pr->process_top && choose_top(pr, &pl) < 0)
		goto out;
	render_proc_labels(pr, &pl);
	render_fixed_labels(pr, &pl);
	if (pl.text.error || pl.fixed.error)
		goto out;
	process_families(pr, &pl);
	r = 0;
out:
	kepler_buf_free(&pl.text);
	kepler_buf_free(&pl.fixed);
	free(pl.a);
	free(pl.b);
	free(pl.dup_energy);
	free(pl.dup_seconds);
	free(pl.folded);
	free(pl.top);
	free(pl.any_top);
	return r;
}
