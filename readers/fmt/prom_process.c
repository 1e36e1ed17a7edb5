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

/* The process families, by number (a sample id's family: kepler_prom_sample_key() writes its name). */
enum proc_family { PF_JOULES, PF_WATTS, PF_IDLE_JOULES, PF_IDLE_WATTS, PF_SECONDS, PF_COUNT };

#define PF(name)                       \
	{                              \
		name, sizeof(name) - 1 \
	}
static const struct {
	const char *name;
	size_t len;
} proc_family[PF_COUNT] = {
	[PF_JOULES] = PF("kepler_process_cpu_joules_total"),
	[PF_WATTS] = PF("kepler_process_cpu_watts"),
	[PF_IDLE_JOULES] = PF("kepler_process_cpu_idle_joules_total"),
	[PF_IDLE_WATTS] = PF("kepler_process_cpu_idle_watts"),
	[PF_SECONDS] = PF("kepler_process_cpu_seconds_total"),
};
#undef PF

/*
 * A process sample's id (stable_ids): its text's version, then its
 * family, state (+ 1; 0: none) and zone (+ 1; 0: none), which its key is
 * written from
 */
#define ID_ZONE_BITS 6
#define ID_STATE_BITS 6
#define ID_FAMILY_BITS 4
#define ID_LOW_BITS (ID_ZONE_BITS + ID_STATE_BITS + ID_FAMILY_BITS)
_Static_assert(KEPLER_MAX_ZONES + 1 < (1 << ID_ZONE_BITS), "a zone in its bits");
_Static_assert(KEPLER_STATE_COUNT + 1 < (1 << ID_STATE_BITS), "a state in its bits");
_Static_assert(PF_COUNT <= (1 << ID_FAMILY_BITS), "a family in its bits");

/* The processes' label text (t: its own, or the memo's with stable_ids) and who is shown. */
struct proc_labels {
	struct prom_proc_text *t;
	struct prom_proc_text own;
	bool *dup_energy, *dup_seconds;
	bool *folded;  /* metrics.process.fold: shown through its fold */
	bool *top;     /* metrics.process.top: [i * nzones + z], one of zone z's top; NULL: all */
	bool *any_top; /* [i]: of the top of some zone */
	bool keep;     /* stable ids: t is kept, and its versions given */
	bool kept;     /* and keys_only: the keys of the lines with an id are not written */
};

static void render_fixed_labels(struct prom *pr, struct prom_proc_text *t)
{
	for (int st = 0; st < KEPLER_STATE_COUNT; st++) {
		t->state_at[st] = t->fixed.len;
		prom_label(&t->fixed, "state", kepler_state_name((enum kepler_state)st), false);
	}
	t->state_at[KEPLER_STATE_COUNT] = t->fixed.len;
	for (size_t z = 0; z < pr->s->nzones; z++) {
		t->zone_at[z] = t->fixed.len;
		prom_label(&t->fixed, "zone", pr->s->zones[z].name, false);
	}
	t->zone_at[pr->s->nzones] = t->fixed.len;
	prom_label(&t->node, "node_name", pr->node, false);
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

/* Process @p's A and B (kepler_fmt_prom_label_value() for each value) onto @t's text, a[i] and b[i] set. */
static void render_one(struct prom_proc_text *t, size_t i, const struct kepler_process *p)
{
	PROC_LABEL(&t->text, "comm=\"", p->comm);
	PROC_LABEL(&t->text, ",container_id=\"", p->container_id);
	PROC_LABEL(&t->text, ",exe=\"", p->exe);
	kepler_buf_add(&t->text, t->node.data, t->node.len);
	kepler_buf_add(&t->text, ",pid=\"", 6);
	kepler_buf_u64(&t->text, p->pid);
	kepler_buf_addc(&t->text, '"');
	t->b[i] = t->text.len;
	PROC_LABEL(&t->text, ",type=\"", kepler_process_type_name(p->type));
	PROC_LABEL(&t->text, ",vm_id=\"", p->vm_id);
}
#undef PROC_LABEL

/*
 * The labels of the processes written (with a top of 100 among 10,000:
 * those 100 and no more): prom_label()'s bytes, the node's label escaped
 * once for them all and the pid written as the integer it is (this runs
 * for every process of every scrape and push). With stable ids, a
 * process's text of the last rendering (@prev, NULL: none) is copied when
 * written from the same strings, its version kept; else a new version.
 */
static void render_proc_labels(struct prom *pr, struct proc_labels *pl, const struct prom_proc_text *prev)
{
	const struct kepler_snapshot *s = pr->s;
	struct prom_proc_text *t = pl->t;
	size_t cursor = 0;

	for (size_t i = 0; i < s->nprocesses; i++) {
		const struct kepler_process *p = &s->processes[i];
		size_t from = SIZE_MAX;

		t->a[i] = t->text.len;
		if (!needs_labels(pr, pl, i)) {
			t->b[i] = t->text.len;
			if (pl->keep) {
				t->ver[i] = 0;
				t->pid[i] = p->pid;
				t->type[i] = (uint32_t)p->type;
				t->raw_at[i + 1] = t->raw.len;
			}
			continue;
		}
		if (prev && (from = prom_memo_find(prev, &cursor, p)) != SIZE_MAX) {
			kepler_buf_add(&t->text, prev->text.data + prev->a[from],
				       prev->a[from + 1] - prev->a[from]);
			t->b[i] = t->a[i] + (prev->b[from] - prev->a[from]);
			t->ver[i] = prev->ver[from];
		} else {
			render_one(t, i, p);
			if (pl->keep)
				t->ver[i] = prom_memo_version();
		}
		if (pl->keep)
			prom_memo_record(t, i, p, prev, from);
	}
	t->a[s->nprocesses] = t->text.len;
	t->n = s->nprocesses;
}

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
 * NAME{labels} of process @i in family @f: with its state or not, with
 * zone @zone's label or none (-1). With a version, the sample's id given;
 * kept (stable ids and keys only), its key not written.
 */
static void proc_line(struct prom *pr, const struct proc_labels *pl, size_t i, enum proc_family f,
		      bool with_state, int zone)
{
	const struct kepler_process *p = &pr->s->processes[i];
	const struct prom_proc_text *t = pl->t;
	unsigned st = with_state ? (unsigned)p->usage.state : 0;
	bool known = !with_state || (unsigned)p->usage.state < KEPLER_STATE_COUNT;
	size_t state_len = with_state && known ? t->state_at[st + 1] - t->state_at[st] : 0;
	size_t zone_len = zone >= 0 ? t->zone_at[zone + 1] - t->zone_at[zone] : 0;

	if (pl->keep && known && t->ver[i]) {
		pr->w.id = t->ver[i] << ID_LOW_BITS | (uint64_t)f << (ID_ZONE_BITS + ID_STATE_BITS) |
			   (uint64_t)(with_state ? st + 1 : 0) << ID_ZONE_BITS | (uint64_t)(zone + 1);
		if (pl->kept) {
			pr->w.kept = true;
			pr->w.proc = (uint32_t)i;
			pr->w.kept_name_len = proc_family[f].len;
			pr->w.kept_key_len =
				proc_family[f].len + 1 + (t->a[i + 1] - t->a[i]) + state_len + zone_len + 1;
			return;
		}
	}
	kepler_buf_add(pr->out, proc_family[f].name, proc_family[f].len);
	kepler_buf_addc(pr->out, '{');
	kepler_buf_add(pr->out, t->text.data + t->a[i], t->b[i] - t->a[i]);
	if (with_state && known)
		kepler_buf_add(pr->out, t->fixed.data + t->state_at[st], state_len);
	else if (with_state)
		prom_label(pr->out, "state", kepler_state_name(p->usage.state), false);
	kepler_buf_add(pr->out, t->text.data + t->b[i], t->a[i + 1] - t->b[i]);
	if (zone >= 0)
		kepler_buf_add(pr->out, t->fixed.data + t->zone_at[zone], zone_len);
	kepler_buf_add(pr->out, "} ", 2);
}

void kepler_prom_sample_key(const struct kepler_prom_samples *s, const char *text,
			    const struct kepler_prom_sample *x, struct kepler_buf *out)
{
	const struct prom_proc_text *t;
	unsigned f, st, zone;
	size_t i = x->proc;

	if (!x->kept) {
		kepler_buf_add(out, text + x->key_at, x->key_len);
		return;
	}
	f = (unsigned)(x->id >> (ID_ZONE_BITS + ID_STATE_BITS)) & ((1u << ID_FAMILY_BITS) - 1);
	st = (unsigned)(x->id >> ID_ZONE_BITS) & ((1u << ID_STATE_BITS) - 1);
	zone = (unsigned)x->id & ((1u << ID_ZONE_BITS) - 1);
	t = s->memo ? &s->memo->t[s->memo->cur] : NULL;
	if (!t || i >= t->n || !t->ver || t->ver[i] != x->id >> ID_LOW_BITS || f >= PF_COUNT ||
	    st > KEPLER_STATE_COUNT || zone > KEPLER_MAX_ZONES || (zone && !t->zone_at[zone])) {
		out->error = -EINVAL;
		return;
	}
	kepler_buf_add(out, proc_family[f].name, proc_family[f].len);
	kepler_buf_addc(out, '{');
	kepler_buf_add(out, t->text.data + t->a[i], t->b[i] - t->a[i]);
	if (st)
		kepler_buf_add(out, t->fixed.data + t->state_at[st - 1],
			       t->state_at[st] - t->state_at[st - 1]);
	kepler_buf_add(out, t->text.data + t->b[i], t->a[i + 1] - t->b[i]);
	if (zone)
		kepler_buf_add(out, t->fixed.data + t->zone_at[zone - 1],
			       t->zone_at[zone] - t->zone_at[zone - 1]);
	kepler_buf_addc(out, '}');
}

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

	const struct prom_proc_text *t = pl->t;

	kepler_buf_add(pr->out, t->text.data + t->a[i], t->b[i] - t->a[i]);
	prom_label(pr->out, "state", kepler_state_name(pr->s->processes[i].usage.state), false);
	kepler_buf_add(pr->out, t->text.data + t->b[i], t->a[i + 1] - t->b[i]);
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
			proc_line(pr, pl, i, PF_IDLE_JOULES, true, (int)z);
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
			proc_line(pr, pl, i, PF_IDLE_WATTS, true, (int)z);
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
			proc_line(pr, pl, i, PF_JOULES, true, (int)z);
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
			proc_line(pr, pl, i, PF_WATTS, true, (int)z);
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
		proc_line(pr, pl, i, PF_SECONDS, false, -1);
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
	struct kepler_prom_samples *samples = pr->w.samples;
	struct proc_labels pl = { .t = &pl.own };
	const struct prom_proc_text *prev = NULL;
	int r = -1;

	if (samples && samples->stable_ids) {
		if (!samples->memo && !(samples->memo = calloc(1, sizeof(*samples->memo))))
			return -1;
		prev = &samples->memo->t[samples->memo->cur];
		samples->memo->cur ^= 1;
		pl.t = &samples->memo->t[samples->memo->cur];
		pl.keep = true;
		pl.kept = samples->keys_only;
	}
	pl.dup_energy = calloc(n + 1, sizeof(bool));
	pl.dup_seconds = calloc(n + 1, sizeof(bool));
	pl.folded = calloc(n + 1, sizeof(bool));
	if (prom_proc_text_begin(pl.t, n, pl.keep) < 0 || !pl.dup_energy || !pl.dup_seconds || !pl.folded)
		goto out;
	for (size_t i = 0; pr->process_fold && i < n; i++)
		pl.folded[i] = pr->s->processes[i].flags & KEPLER_PROCESS_FOLDED;
	if (find_duplicates(pr->s, &pl) < 0)
		goto out;
	if (pr->process_top && choose_top(pr, &pl) < 0)
		goto out;
	render_fixed_labels(pr, pl.t);
	if (pl.t->fixed.error || pl.t->node.error)
		goto out;
	render_proc_labels(pr, &pl, prev && prom_memo_same_context(prev, pl.t) ? prev : NULL);
	if (pl.t->text.error || pl.t->raw.error)
		goto out;
	process_families(pr, &pl);
	r = 0;
out:
	if (r < 0 && pl.keep)
		pl.t->n = 0; /* (nothing of it reused, or written by kepler_prom_sample_key()) */
	prom_proc_text_free(&pl.own);
	free(pl.dup_energy);
	free(pl.dup_seconds);
	free(pl.folded);
	free(pl.top);
	free(pl.any_top);
	return r;
}
