// SPDX-License-Identifier: Apache-2.0
/*
 * kepler-report's rows per pod owner and per pod label value (report.h):
 * sums of the pods' rows of the same window, so that they are exact as the
 * pods' are. A pod's owner and labels are those its newest snapshot in the
 * window recorded (kube.pod-labels; docs/history.md).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kepler/snapshot.h"
#include "report.h"

static char empty[] = "";

/* The identity of pod row @r's group: its fields in @g (strings borrowed, or the value in *@text). */
static int identity(struct job *j, const struct kepler_history_row *r, struct kepler_history_row *g,
		    char **text)
{
	size_t len;
	const char *v;

	*g = (struct kepler_history_row){ .kind = KEPLER_HISTORY_POD,
					  .id = empty,
					  .name = empty,
					  .ns = empty,
					  .pod_id = empty,
					  .runtime = empty,
					  .exe = empty,
					  .container_id = empty,
					  .vm_id = empty,
					  .owner_kind = empty,
					  .owner_name = empty,
					  .labels = empty };
	*text = NULL;
	if (j->by == REPORT_BY_OWNER) {
		g->ns = r->ns;
		g->owner_kind = r->owner_kind;
		g->owner_name = r->owner_name;
		g->name = r->owner_name;
		return 0;
	}
	v = kepler_pod_label(r->labels, j->label, &len);
	*text = v ? strndup(v, len) : strdup(REPORT_NO_LABEL);
	if (!*text)
		return -ENOMEM;
	g->name = g->labels = *text;
	return 0;
}

static bool same_group(const struct job *j, const struct kepler_history_row *a,
		       const struct kepler_history_row *b)
{
	if (j->by == REPORT_BY_OWNER)
		return !strcmp(a->ns, b->ns) && !strcmp(a->owner_kind, b->owner_kind) &&
		       !strcmp(a->owner_name, b->owner_name);
	return !strcmp(a->labels, b->labels);
}

/* Add @from's window to @to's: CO₂e as whole mg and remainder, the remainder's whole mg carried. */
static void add_row(const struct job *j, struct row *to, const struct row *from)
{
	to->cpu_time_ns += from->cpu_time_ns;
	for (size_t z = 0; z < j->nzones; z++) {
		to->energy_uj[z] += from->energy_uj[z];
		to->co2e_mg[z] += from->co2e_mg[z];
		to->co2e_rem[z] += from->co2e_rem[z]; /* each below KEPLER_UJ_PER_KWH: no overflow */
		if (to->co2e_rem[z] >= KEPLER_UJ_PER_KWH) {
			to->co2e_rem[z] -= KEPLER_UJ_PER_KWH;
			to->co2e_mg[z]++;
		}
	}
}

int report_group_rows(struct job *j)
{
	struct row *out = calloc(j->nrows ? j->nrows : 1, sizeof(*out));
	size_t n = 0;
	int e = 0;

	j->groups = calloc(j->nrows ? j->nrows : 1, sizeof(*j->groups));
	j->group_text = calloc(j->nrows ? j->nrows : 1, sizeof(*j->group_text));
	if (!out || !j->groups || !j->group_text) {
		free(out);
		return -ENOMEM;
	}
	for (size_t i = 0; i < j->nrows && !e; i++) { /* a few hundred pods: a linear search is enough */
		struct kepler_history_row g;
		char *text;
		size_t k;

		if ((e = identity(j, j->rows[i].r, &g, &text)) < 0)
			break;
		for (k = 0; k < n && !same_group(j, &j->groups[k], &g); k++)
			;
		if (k == n) {
			j->groups[n] = g;
			j->group_text[n] = text;
			out[n].r = &j->groups[n];
			n++;
		} else {
			free(text);
		}
		add_row(j, &out[k], &j->rows[i]);
	}
	j->ngroups = n;
	free(j->rows);
	j->rows = out;
	j->nrows = n;
	return e;
}

void report_groups_free(struct job *j)
{
	for (size_t i = 0; i < j->ngroups && j->group_text; i++)
		free(j->group_text[i]);
	free(j->group_text);
	free(j->groups);
}
