// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co2e_families.h"
#include "kepler/fmt.h"
#include "kepler/history.h"
#include "kepler/log.h"

struct kepler_co2e_families {
	struct kepler_history *h;
	bool said; /* the ledger's trouble, logged once */
};

struct kepler_co2e_families *kepler_co2e_families_new(void)
{
	return calloc(1, sizeof(struct kepler_co2e_families));
}

void kepler_co2e_families_reset(struct kepler_co2e_families *c)
{
	if (!c)
		return;
	kepler_history_free(c->h);
	c->h = NULL;
	c->said = false;
}

void kepler_co2e_families_free(struct kepler_co2e_families *c)
{
	if (!c)
		return;
	kepler_history_free(c->h);
	free(c);
}

/* The ledger at @snap, or -1 (said once). */
static int follow(struct kepler_co2e_families *c, struct kepler_store *store,
		  const struct kepler_snapshot *snap)
{
	struct kepler_error err = { 0 };

	if (kepler_store_history_follow(store, &c->h, snap->seq, snap->wall_ns, &err) == 0)
		return 0;
	if (!c->said)
		kepler_warn("the CO2e, namespace and owner families are not exported: %s", err.msg);
	c->said = true;
	return -1;
}

static void grams(struct kepler_prom_writer *w, uint64_t mg)
{
	kepler_prom_printf(w, "%llu.%03llu", (unsigned long long)(mg / 1000),
			   (unsigned long long)(mg % 1000));
	kepler_prom_end(w);
}

/*
 * A counter's CO2e in grams to the µg: kepler_history_window() from nothing
 * to @r's zone @z (the one rule of every reader of the ledger), its whole mg
 * and the µg of its exact remainder, rounded down once. The difference of
 * two such counters is the exact CO2e between them to within 1 µg, which
 * kepler-report shows to the mg (docs/history.md).
 */
static void co2e_grams(struct kepler_prom_writer *w, const struct kepler_history_row *r, size_t z)
{
	struct kepler_history_span s = kepler_history_window(NULL, 0, r, z);
	uint64_t ug = (uint64_t)((unsigned __int128)s.co2e_rem * 1000 / KEPLER_UJ_PER_KWH);

	kepler_prom_printf(w, "%llu.%03llu%03llu", (unsigned long long)(s.co2e_mg / 1000),
			   (unsigned long long)(s.co2e_mg % 1000), (unsigned long long)ug);
	kepler_prom_end(w);
}

static void label(struct kepler_buf *o, const char *name, const char *v, bool first)
{
	kepler_buf_printf(o, "%s%s=\"", first ? "" : ",", name);
	kepler_fmt_prom_label_value(o, v);
	kepler_buf_addc(o, '"');
}

static void family(struct kepler_co2e_families *c, struct kepler_prom_writer *w, enum kepler_history_kind k,
		   const char *name, const char *help, const char *node)
{
	struct kepler_buf *o = w->out;
	const char *const *zones;
	size_t nz = kepler_history_zones(c->h, &zones);

	kepler_prom_family(w, name, "counter", help);
	for (size_t i = 0; i < kepler_history_count(c->h); i++) {
		const struct kepler_history_row *r = kepler_history_row(c->h, i);

		if (r->kind != k)
			continue;
		for (size_t z = 0; z < nz; z++) {
			kepler_buf_printf(o, "%s{", name);
			label(o, "node_name", node, true);
			switch (k) {
			case KEPLER_HISTORY_POD:
				label(o, "pod_id", r->id, false);
				label(o, "pod_name", r->name, false);
				label(o, "pod_namespace", r->ns, false);
				break;
			case KEPLER_HISTORY_CONTAINER:
				label(o, "container_id", r->id, false);
				label(o, "container_name", r->name, false);
				label(o, "pod_id", r->pod_id, false);
				break;
			case KEPLER_HISTORY_VM:
				label(o, "vm_id", r->id, false);
				label(o, "vm_name", r->name, false);
				break;
			default: break;
			}
			label(o, "zone", zones[z], false);
			kepler_buf_adds(o, "} ");
			co2e_grams(w, r, z);
		}
	}
}

/* ---- chargeback: namespaces and owners ---- */

/* One owner's counters: the sums of its pods' ledger rows (CO2e exact: whole mg and remainder). */
struct owner {
	const struct kepler_history_row *like; /* a pod of it: namespace, owner kind and name */
	struct kepler_history_row sum;         /* energy_uj, co2e_mg, co2e_rem per zone */
};

static bool same_owner(const struct kepler_history_row *a, const struct kepler_history_row *b)
{
	return !strcmp(a->ns, b->ns) && !strcmp(a->owner_kind, b->owner_kind) &&
	       !strcmp(a->owner_name, b->owner_name);
}

/* The owners of the ledger's pods in *@ret (free each sum's energy_uj, then the array); -ENOMEM. */
static int owners(const struct kepler_history *h, size_t nz, struct owner **ret, size_t *ret_n)
{
	size_t n = 0, cap = 0;
	struct owner *o = NULL;

	for (size_t i = 0; i < kepler_history_count(h); i++) {
		const struct kepler_history_row *r = kepler_history_row(h, i);
		size_t k;

		if (r->kind != KEPLER_HISTORY_POD)
			continue;
		for (k = 0; k < n && !same_owner(o[k].like, r); k++) /* a node's few hundred pods */
			;
		if (k == n) {
			uint64_t *v;

			if (n == cap) {
				struct owner *m = realloc(o, (cap = cap ? 2 * cap : 16) * sizeof(*o));

				if (!m)
					goto nomem;
				o = m;
			}
			if (!(v = calloc(3 * (nz ? nz : 1), sizeof(*v))))
				goto nomem;
			o[n++] = (struct owner){
				.like = r,
				.sum = { .energy_uj = v, .co2e_mg = v + nz, .co2e_rem = v + 2 * nz }
			};
		}
		for (size_t z = 0; z < nz; z++) {
			struct kepler_history_row *s = &o[k].sum;

			s->energy_uj[z] += r->energy_uj[z];
			s->co2e_mg[z] += r->co2e_mg[z];
			s->co2e_rem[z] += r->co2e_rem[z]; /* each below KEPLER_UJ_PER_KWH */
			if (s->co2e_rem[z] >= KEPLER_UJ_PER_KWH) {
				s->co2e_rem[z] -= KEPLER_UJ_PER_KWH;
				s->co2e_mg[z]++;
			}
		}
	}
	*ret = o;
	*ret_n = n;
	return 0;
nomem:
	for (size_t k = 0; k < n; k++)
		free(o[k].sum.energy_uj);
	free(o);
	return -ENOMEM;
}

/* A namespace's or an owner's labels after node_name. */
static void group_labels(struct kepler_buf *o, const struct kepler_history_row *like, bool owner)
{
	if (owner) {
		label(o, "owner_kind", like->owner_kind, false);
		label(o, "owner_name", like->owner_name, false);
		label(o, "pod_namespace", like->ns, false);
	} else {
		label(o, "pod_namespace", like->name, false);
	}
}

/* @co2e: grams, else joules. Rows: the namespaces' of the ledger, or @own's owners. */
static void chargeback(struct kepler_co2e_families *c, struct kepler_prom_writer *w, bool owner, bool co2e,
		       const struct owner *own, size_t nown, const char *node)
{
	struct kepler_buf *o = w->out;
	const char *const *zones;
	size_t nz = kepler_history_zones(c->h, &zones);
	const char *what = owner ? "owner" : "namespace";
	size_t n = owner ? nown : kepler_history_count(c->h);

	char name[64];

	snprintf(name, sizeof(name), co2e ? "kepler_%s_co2e_grams_total" : "kepler_%s_cpu_joules_total",
		 what);
	if (co2e)
		kepler_prom_familyf(
			w, name, "counter",
			"CO2e of the energy of each %s's pods (the sum of their kepler_pod_co2e_grams_total).",
			what);
	else
		kepler_prom_familyf(
			w, name, "counter",
			"Energy of each %s's pods in joules, active and idle (the sum of their "
			"kepler_pod_cpu_joules_total and kepler_pod_cpu_idle_joules_total), from the "
			"store's history.",
			what);
	for (size_t i = 0; i < n; i++) {
		const struct kepler_history_row *r = owner ? &own[i].sum : kepler_history_row(c->h, i);
		const struct kepler_history_row *like = owner ? own[i].like : r;

		if (!owner && r->kind != KEPLER_HISTORY_NAMESPACE)
			continue;
		for (size_t z = 0; z < nz; z++) {
			kepler_buf_adds(o, name);
			kepler_buf_addc(o, '{');
			label(o, "node_name", node, true);
			group_labels(o, like, owner);
			label(o, "zone", zones[z], false);
			kepler_buf_adds(o, "} ");
			if (co2e) {
				co2e_grams(w, r, z);
			} else {
				kepler_prom_fixed(w, r->energy_uj[z], 6);
				kepler_prom_end(w);
			}
		}
	}
}

static void chargeback_families(struct kepler_co2e_families *c, struct kepler_prom_writer *out,
				unsigned levels, bool co2e, const char *node)
{
	const char *const *zones;
	size_t nz = kepler_history_zones(c->h, &zones), nown = 0;
	struct owner *own = NULL;

	if (levels & KEPLER_LEVEL_NAMESPACE) {
		chargeback(c, out, false, false, NULL, 0, node);
		if (co2e)
			chargeback(c, out, false, true, NULL, 0, node);
	}
	if (!(levels & KEPLER_LEVEL_OWNER))
		return;
	if (owners(c->h, nz, &own, &nown) < 0) {
		out->out->error = -ENOMEM;
		return;
	}
	chargeback(c, out, true, false, own, nown, node);
	if (co2e)
		chargeback(c, out, true, true, own, nown, node);
	for (size_t k = 0; k < nown; k++)
		free(own[k].sum.energy_uj);
	free(own);
}

void kepler_co2e_families_render(struct kepler_co2e_families *c, struct kepler_store *store,
				 const struct kepler_snapshot *snap, const char *node_name, unsigned levels,
				 struct kepler_buf *out, struct kepler_prom_samples *samples)
{
	struct kepler_prom_writer w = kepler_prom_writer(out, samples);
	struct kepler_error err = { 0 };
	uint32_t mg = 0;

	if (kepler_store_intensity(store, snap->seq, &mg, &err) < 0)
		mg = 0;
	if (!mg && !(levels & (KEPLER_LEVEL_NAMESPACE | KEPLER_LEVEL_OWNER)))
		return;
	if (follow(c, store, snap) < 0)
		return;
	c->said = false;
	chargeback_families(c, &w, levels, mg != 0, node_name);
	if (!mg)
		return;
	kepler_prom_family(&w, "kepler_carbon_intensity_grams_per_kwh", "gauge",
			   "The grid's carbon intensity in force at the snapshot (carbon.intensity or "
			   "carbon.intensity-file).");
	kepler_buf_adds(out, "kepler_carbon_intensity_grams_per_kwh{");
	label(out, "node_name", node_name, true);
	kepler_buf_adds(out, "} ");
	grams(&w, mg);
	if (levels & KEPLER_LEVEL_NODE)
		family(c, &w, KEPLER_HISTORY_NODE, "kepler_node_co2e_grams_total",
		       "CO2e of the node's energy in each zone: each interval's energy times the intensity then.",
		       node_name);
	if (levels & KEPLER_LEVEL_POD)
		family(c, &w, KEPLER_HISTORY_POD, "kepler_pod_co2e_grams_total", "CO2e of each pod's energy.",
		       node_name);
	if (levels & KEPLER_LEVEL_CONTAINER)
		family(c, &w, KEPLER_HISTORY_CONTAINER, "kepler_container_co2e_grams_total",
		       "CO2e of each container's energy.", node_name);
	if (levels & KEPLER_LEVEL_VM)
		family(c, &w, KEPLER_HISTORY_VM, "kepler_vm_co2e_grams_total", "CO2e of each VM's energy.",
		       node_name);
}
