// SPDX-License-Identifier: Apache-2.0
/*
 * The container, VM and pod families of the Prometheus exposition
 * (fmt_internal.h), with the container top-N cut (metrics.container.top).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt_internal.h"
#include "kepler/config.h"
#include "kepler/fmt.h"

struct group_family {
	const char *joules, *watts, *seconds; /* seconds: NULL when Kepler has none */
};

static const struct group_family group_families[KEPLER_KIND_COUNT] = {
	[KEPLER_KIND_CONTAINER] = { "kepler_container_cpu_joules_total", "kepler_container_cpu_watts",
				    "kepler_container_cpu_seconds_total" },
	[KEPLER_KIND_VM] = { "kepler_vm_cpu_joules_total", "kepler_vm_cpu_watts", NULL },
	[KEPLER_KIND_POD] = { "kepler_pod_cpu_joules_total", "kepler_pod_cpu_watts", NULL },
};

/*
 * The labels before zone, in alphabetical order, after '{' (Kepler's
 * names), into @o: with @part 1 those before state, 2 state, 3 those
 * after state, 0 all.
 */
static void group_labels_part(struct kepler_buf *o, const char *node, const struct kepler_workload *w,
			      int part)
{
	const char *state = kepler_state_name(w->usage->state);
	bool before = part == 0 || part == 1, at = part == 0 || part == 2, after = part == 0 || part == 3;

	if (w->kind == KEPLER_KIND_CONTAINER) {
		if (before) {
			prom_label(o, "container_id", w->id, true);
			prom_label(o, "container_name", w->name, false);
			prom_label(o, "node_name", node, false);
			prom_label(o, "pod_id", w->parent, false);
			prom_label(o, "runtime", w->detail, false);
		}
	} else if (w->kind == KEPLER_KIND_VM) {
		if (before) {
			prom_label(o, "hypervisor", w->detail, true);
			prom_label(o, "node_name", node, false);
		}
	} else if (before) {
		prom_label(o, "node_name", node, true);
		prom_label(o, "pod_id", w->id, false);
		prom_label(o, "pod_name", w->name, false);
		prom_label(o, "pod_namespace", w->detail, false);
	}
	if (at)
		prom_label(o, "state", state, false);
	if (after && w->kind == KEPLER_KIND_VM) {
		prom_label(o, "vm_id", w->id, false);
		prom_label(o, "vm_name", w->name, false);
	}
}

static void group_labels(struct prom *pr, const struct kepler_workload *w)
{
	group_labels_part(pr->out, pr->node, w, 0);
}

/*
 * The labels of each workload of one kind, rendered once for all its
 * families (a container's are in seven lines): at[2i]..at[2i+1] before
 * state, at[2i+1]..at[2i+2] after it; ,state="..." and ,zone="..." once.
 */
struct group_text {
	struct kepler_buf text;
	size_t *at;
	struct kepler_buf fixed;
	size_t state_at[KEPLER_STATE_COUNT + 1], zone_at[KEPLER_MAX_ZONES + 1];
};

static void group_text_free(struct group_text *g)
{
	kepler_buf_free(&g->text);
	kepler_buf_free(&g->fixed);
	free(g->at);
}

/* -ENOMEM */
static int group_text_render(struct prom *pr, enum kepler_kind k, struct group_text *g)
{
	const struct kepler_snapshot *s = pr->s;
	size_t n = kepler_workload_count(s, k);

	*g = (struct group_text){ .text = KEPLER_BUF_INIT, .fixed = KEPLER_BUF_INIT };
	if (!(g->at = malloc((2 * n + 1) * sizeof(*g->at))))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct kepler_workload w = kepler_workload_at(s, k, i);

		g->at[2 * i] = g->text.len;
		group_labels_part(&g->text, pr->node, &w, 1);
		g->at[2 * i + 1] = g->text.len;
		group_labels_part(&g->text, pr->node, &w, 3);
	}
	g->at[2 * n] = g->text.len;
	for (int st = 0; st < KEPLER_STATE_COUNT; st++) {
		g->state_at[st] = g->fixed.len;
		prom_label(&g->fixed, "state", kepler_state_name((enum kepler_state)st), false);
	}
	g->state_at[KEPLER_STATE_COUNT] = g->fixed.len;
	for (size_t z = 0; z < s->nzones; z++) {
		g->zone_at[z] = g->fixed.len;
		prom_label(&g->fixed, "zone", s->zones[z].name, false);
	}
	g->zone_at[s->nzones] = g->fixed.len;
	return g->text.error ? g->text.error : g->fixed.error;
}

/* Workload @i's line up to its value: NAME{labels} with zone @zone's label (or none: -1). */
static void group_line(struct prom *pr, const struct group_text *g, const char *name, size_t name_len,
		       size_t i, const struct kepler_workload *w, int zone)
{
	unsigned st = (unsigned)w->usage->state;

	kepler_buf_add(pr->out, name, name_len);
	kepler_buf_addc(pr->out, '{');
	kepler_buf_add(pr->out, g->text.data + g->at[2 * i], g->at[2 * i + 1] - g->at[2 * i]);
	if (st < KEPLER_STATE_COUNT)
		kepler_buf_add(pr->out, g->fixed.data + g->state_at[st],
			       g->state_at[st + 1] - g->state_at[st]);
	else
		group_labels_part(pr->out, pr->node, w, 2);
	kepler_buf_add(pr->out, g->text.data + g->at[2 * i + 1], g->at[2 * i + 2] - g->at[2 * i + 1]);
	if (zone >= 0)
		kepler_buf_add(pr->out, g->fixed.data + g->zone_at[zone],
			       g->zone_at[zone + 1] - g->zone_at[zone]);
	kepler_buf_add(pr->out, "} ", 2);
}

/* Sort key of the containers' top: more energy first, then the id. */
struct ctop_key {
	uint64_t total_uj;
	const char *id;
	size_t i;
};

static int by_energy_id(const void *x, const void *y)
{
	const struct ctop_key *a = x, *b = y;

	if (a->total_uj != b->total_uj)
		return a->total_uj > b->total_uj ? -1 : 1;
	return strcmp(a->id, b->id);
}

/* metrics.container.top N: per zone the N containers with the most energy. -1: out of memory. */
static int choose_container_top(struct prom *pr)
{
	const struct kepler_snapshot *s = pr->s;
	size_t n = s->ncontainers, nz = s->nzones ? s->nzones : 1;
	struct ctop_key *keys = malloc((n ? n : 1) * sizeof(*keys));

	pr->ctop = calloc(n * nz + 1, sizeof(bool));
	pr->cany = calloc(n + 1, sizeof(bool));
	if (!keys || !pr->ctop || !pr->cany) {
		free(keys);
		return -1;
	}
	for (size_t z = 0; z < s->nzones; z++) {
		for (size_t i = 0; i < n; i++)
			keys[i] = (struct ctop_key){ s->containers[i].usage.zones[z].total_uj,
						     s->containers[i].id, i };
		qsort(keys, n, sizeof(*keys), by_energy_id);
		for (size_t k = 0; k < n && k < pr->container_top; k++) {
			pr->ctop[keys[k].i * nz + z] = true;
			pr->cany[keys[k].i] = true;
		}
	}
	free(keys);
	return 0;
}

static bool group_shown(const struct prom *pr, enum kepler_kind k, size_t i, size_t z)
{
	return pr->zone_on[z] && (k != KEPLER_KIND_CONTAINER || !pr->ctop ||
				  pr->ctop[i * (pr->s->nzones ? pr->s->nzones : 1) + z]);
}

/* With a containers' top: per zone one "other" container whose watts are the rest's. */
static void other_container_watts(struct prom *pr, const char *name)
{
	const struct kepler_snapshot *s = pr->s;

	for (size_t z = 0; z < s->nzones; z++) {
		uint64_t rest = 0;

		if (!pr->zone_on[z])
			continue;
		for (size_t i = 0; i < s->ncontainers; i++)
			if (!group_shown(pr, KEPLER_KIND_CONTAINER, i, z))
				rest += s->containers[i].usage.zones[z].delta_uj;
		kepler_buf_adds(pr->out, name);
		kepler_buf_addc(pr->out, '{');
		prom_label(pr->out, "container_id", "", true);
		prom_label(pr->out, "container_name", "other", false);
		prom_label(pr->out, "node_name", pr->node, false);
		prom_label(pr->out, "pod_id", "", false);
		prom_label(pr->out, "runtime", "", false);
		prom_label(pr->out, "state", "running", false);
		prom_label(pr->out, "zone", s->zones[z].name, false);
		kepler_buf_add(pr->out, "} ", 2);
		prom_watts(&pr->w, rest, s->interval_ns);
		kepler_prom_end(&pr->w);
	}
}

/* A workload's energy in zone @z: the active part, or with @idle the idle part (an idle policy). */
static const struct kepler_energy *part_of(const struct kepler_usage *u, size_t z, bool idle)
{
	return idle ? &u->idle[z] : &u->zones[z];
}

/*
 * Kepler's family of kind @k (@idle false), or kepler-c's idle one beside it
 * (kepler_<kind>_cpu_idle_joules_total, _cpu_idle_watts) under an idle
 * policy: the idle energy the policy gave each workload, same labels.
 */
static void group_energy(struct prom *pr, const struct group_text *g, enum kepler_kind k, bool as_watts,
			 bool idle)
{
	const struct group_family *f = &group_families[k];
	const struct kepler_snapshot *s = pr->s;
	const char *kind = kepler_kind_name(k);
	char name[64];
	size_t name_len;

	if (idle && s->idle_policy == KEPLER_IDLE_NONE)
		return;
	if (idle)
		snprintf(name, sizeof(name),
			 as_watts ? "kepler_%s_cpu_idle_watts" : "kepler_%s_cpu_idle_joules_total", kind);
	else
		snprintf(name, sizeof(name), "%s", as_watts ? f->watts : f->joules);
	if (idle)
		kepler_prom_familyf(
			&pr->w, name, as_watts ? "gauge" : "counter",
			"Idle %s of cpu given to the %s by attribution.idle %s in %s" ESTIMATE_NOTE,
			as_watts ? "power" : "energy", kind, kepler_idle_policy_name(s->idle_policy),
			as_watts ? "watts" : "joules");
	else
		kepler_prom_familyf(&pr->w, name, as_watts ? "gauge" : "counter",
				    "%s consumption of cpu at %s level in %s" ESTIMATE_NOTE,
				    as_watts ? "Power" : "Energy", kind, as_watts ? "watts" : "joules");
	name_len = strlen(name);
	for (size_t i = 0; i < kepler_workload_count(s, k); i++) {
		struct kepler_workload w = kepler_workload_at(s, k, i);

		for (size_t z = 0; z < s->nzones && (!idle || w.usage->idle); z++) {
			if (!group_shown(pr, k, i, z))
				continue;
			group_line(pr, g, name, name_len, i, &w, (int)z);
			if (as_watts)
				prom_watts(&pr->w, part_of(w.usage, z, idle)->delta_uj, s->interval_ns);
			else
				prom_joules(&pr->w, part_of(w.usage, z, idle)->total_uj);
			kepler_prom_end(&pr->w);
		}
	}
	if (as_watts && !idle && k == KEPLER_KIND_CONTAINER && pr->ctop)
		other_container_watts(pr, name);
}

static void group_seconds(struct prom *pr, const struct group_text *g, enum kepler_kind k)
{
	const struct group_family *f = &group_families[k];
	const struct kepler_snapshot *s = pr->s;
	size_t name_len;

	if (!f->seconds)
		return;
	name_len = strlen(f->seconds);
	kepler_prom_familyf(&pr->w, f->seconds, "counter",
			    "Total user and system time of cpu at %s level in seconds", kepler_kind_name(k));
	for (size_t i = 0; i < kepler_workload_count(s, k); i++) {
		struct kepler_workload w = kepler_workload_at(s, k, i);

		if (k == KEPLER_KIND_CONTAINER && pr->cany && !pr->cany[i])
			continue;
		group_line(pr, g, f->seconds, name_len, i, &w, -1);
		prom_seconds(&pr->w, w.usage->cpu_time_ns);
		kepler_prom_end(&pr->w);
	}
}

/* A pod label's Prometheus name: "label_" and the key with every other character as '_'. */
static void label_name(const char *key, size_t klen, char *out, size_t size)
{
	size_t n = (size_t)snprintf(out, size, "label_");

	for (size_t i = 0; i < klen && n + 1 < size; i++) {
		char c = key[i];

		out[n++] =
			(c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ? c : '_';
	}
	out[n] = 0;
}

struct pod_label {
	char name[KEPLER_LABEL_KEY_MAX + 8];
	const char *value;
	size_t len;
};

static int by_label_name(const void *a, const void *b)
{
	return strcmp(((const struct pod_label *)a)->name, ((const struct pod_label *)b)->name);
}

/*
 * kepler_pod_info: one series per pod, value 1, with its owner and the
 * labels kube.pod-labels records (label_KEY, as kube-state-metrics names
 * them), so that a PromQL join adds them to any pod series without every
 * series carrying them. Two keys of one name (a.b and a_b) keep the first.
 */
static void pod_info(struct prom *pr)
{
	const struct kepler_snapshot *s = pr->s;

	kepler_prom_family(
		&pr->w, "kepler_pod_info", "gauge",
		"Pod owner (its controller: a ReplicaSet's Deployment, a Job's CronJob) and the pod labels "
		"kube.pod-labels records, value 1, for joins");
	for (size_t i = 0; i < s->npods; i++) {
		const struct kepler_pod *p = &s->pods[i];
		struct pod_label l[KEPLER_KUBE_POD_LABELS_MAX];
		size_t n = 0;

		for (const char *t = p->labels ? p->labels : ""; *t && n < KEPLER_KUBE_POD_LABELS_MAX;) {
			const char *end = strchr(t, ','), *eq;

			if (!end)
				end = t + strlen(t);
			if ((eq = memchr(t, '=', (size_t)(end - t)))) {
				label_name(t, (size_t)(eq - t), l[n].name, sizeof(l[n].name));
				l[n].value = eq + 1;
				l[n].len = (size_t)(end - eq - 1);
				n++;
			}
			t = *end ? end + 1 : end;
		}
		qsort(l, n, sizeof(*l), by_label_name);
		kepler_buf_adds(pr->out, "kepler_pod_info{");
		for (size_t k = 0; k < n; k++) {
			char v[KEPLER_LABEL_VALUE_MAX + 1];

			if (k && !strcmp(l[k].name, l[k - 1].name))
				continue;
			snprintf(v, sizeof(v), "%.*s", (int)l[k].len, l[k].value);
			prom_label(pr->out, l[k].name, v, k == 0);
		}
		prom_label(pr->out, "node_name", pr->node, n == 0);
		prom_label(pr->out, "owner_kind", p->owner_kind, false);
		prom_label(pr->out, "owner_name", p->owner_name, false);
		prom_label(pr->out, "pod_id", p->id, false);
		prom_label(pr->out, "pod_name", p->name, false);
		prom_label(pr->out, "pod_namespace", p->ns, false);
		kepler_buf_add(pr->out, "} ", 2);
		kepler_prom_u64(&pr->w, 1);
		kepler_prom_end(&pr->w);
	}
}

/* @ctx: the enum kepler_kind */
static void group_gpu_labels(struct prom *pr, size_t i, void *ctx)
{
	struct kepler_workload w = kepler_workload_at(pr->s, *(const enum kepler_kind *)ctx, i);

	group_labels(pr, &w);
}

void prom_workloads(struct prom *pr)
{
	struct kepler_buf *out = pr->out;

	if (pr->container_top && (pr->levels & KEPLER_LEVEL_CONTAINER) && choose_container_top(pr) < 0 &&
	    !out->error)
		out->error = -ENOMEM;
	for (int k = KEPLER_KIND_CONTAINER; k < KEPLER_KIND_COUNT && !out->error; k++) {
		enum kepler_kind kind = (enum kepler_kind)k;
		struct group_text g;
		int e;

		if (!(pr->levels & kepler_level_of(kind)))
			continue;
		if ((e = group_text_render(pr, kind, &g)) < 0) {
			group_text_free(&g);
			if (!out->error)
				out->error = e;
			break;
		}
		group_energy(pr, &g, kind, false, false);
		group_energy(pr, &g, kind, true, false);
		group_energy(pr, &g, kind, false, true);
		group_energy(pr, &g, kind, true, true);
		group_seconds(pr, &g, kind);
		group_text_free(&g);
		prom_gpu_workloads(pr, kind, group_gpu_labels, &kind, NULL);
		if (kind == KEPLER_KIND_POD)
			pod_info(pr);
	}
	free(pr->ctop);
	free(pr->cany);
	pr->ctop = NULL;
	pr->cany = NULL;
}
