// SPDX-License-Identifier: Apache-2.0
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
		kepler_warn("the CO2e families are not exported: %s", err.msg);
	c->said = true;
	return -1;
}

static void grams(struct kepler_buf *o, uint64_t mg)
{
	kepler_buf_printf(o, "%llu.%03llu\n", (unsigned long long)(mg / 1000),
			  (unsigned long long)(mg % 1000));
}

/*
 * A counter's CO2e in grams to the µg: kepler_history_window() from nothing
 * to @r's zone @z (the one rule of every reader of the ledger), its whole mg
 * and the µg of its exact remainder, rounded down once. The difference of
 * two such counters is the exact CO2e between them to within 1 µg, which
 * kepler-report shows to the mg (docs/history.md).
 */
static void co2e_grams(struct kepler_buf *o, const struct kepler_history_row *r, size_t z)
{
	struct kepler_history_span s = kepler_history_window(NULL, 0, r, z);
	uint64_t ug = (uint64_t)((unsigned __int128)s.co2e_rem * 1000 / KEPLER_UJ_PER_KWH);

	kepler_buf_printf(o, "%llu.%03llu%03llu\n", (unsigned long long)(s.co2e_mg / 1000),
			  (unsigned long long)(s.co2e_mg % 1000), (unsigned long long)ug);
}

static void label(struct kepler_buf *o, const char *name, const char *v, bool first)
{
	kepler_buf_printf(o, "%s%s=\"", first ? "" : ",", name);
	kepler_fmt_prom_label_value(o, v);
	kepler_buf_addc(o, '"');
}

static void family(struct kepler_co2e_families *c, struct kepler_buf *o, enum kepler_history_kind k,
		   const char *name, const char *help, const char *node)
{
	const char *const *zones;
	size_t nz = kepler_history_zones(c->h, &zones);

	kepler_buf_printf(o, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);
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
			co2e_grams(o, r, z);
		}
	}
}

void kepler_co2e_families_render(struct kepler_co2e_families *c, struct kepler_store *store,
				 const struct kepler_snapshot *snap, const char *node_name,
				 struct kepler_buf *out)
{
	struct kepler_error err = { 0 };
	uint32_t mg = 0;

	if (kepler_store_intensity(store, snap->seq, &mg, &err) < 0 || !mg)
		return;
	if (follow(c, store, snap) < 0)
		return;
	c->said = false;
	kepler_buf_adds(
		out,
		"# HELP kepler_carbon_intensity_grams_per_kwh The grid's carbon intensity in force at the "
		"snapshot (carbon.intensity or carbon.intensity-file).\n"
		"# TYPE kepler_carbon_intensity_grams_per_kwh gauge\nkepler_carbon_intensity_grams_per_kwh{");
	label(out, "node_name", node_name, true);
	kepler_buf_adds(out, "} ");
	grams(out, mg);
	family(c, out, KEPLER_HISTORY_NODE, "kepler_node_co2e_grams_total",
	       "CO2e of the node's energy in each zone: each interval's energy times the intensity then.",
	       node_name);
	family(c, out, KEPLER_HISTORY_POD, "kepler_pod_co2e_grams_total", "CO2e of each pod's energy.",
	       node_name);
	family(c, out, KEPLER_HISTORY_CONTAINER, "kepler_container_co2e_grams_total",
	       "CO2e of each container's energy.", node_name);
	family(c, out, KEPLER_HISTORY_VM, "kepler_vm_co2e_grams_total", "CO2e of each VM's energy.",
	       node_name);
}
