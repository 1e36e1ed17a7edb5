/* SPDX-License-Identifier: Apache-2.0 */
/*
 * readers/report/report.h: kepler-report's inside, shared by its main
 * (windows, rows, output) and groups.c (rows per owner or label value).
 */
#ifndef KEPLER_READERS_REPORT_H
#define KEPLER_READERS_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kepler/config.h"
#include "kepler/error.h"
#include "kepler/history.h"
#include "kepler/store.h"

#define MAX_PERIODS 64

/* What a row is: a history kind (enum kepler_history_kind), or pods grouped. */
enum report_by {
	REPORT_BY_OWNER = KEPLER_HISTORY_KIND_COUNT, /* (namespace, owner kind, owner name) */
	REPORT_BY_LABEL,                             /* a pod label's value */
	REPORT_BY_COUNT,
};

/* BY_LABEL's row for pods without the label: not a label value (they hold no parentheses). */
#define REPORT_NO_LABEL "(none)"

/* The ledger at one end of the window. */
struct end {
	struct kepler_history *h;
	uint64_t at_ns;    /* the time its counters are of */
	uint32_t period_s; /* the tier record it began from (0: none) */
	size_t snapshots;  /* raw snapshots applied after it */
	bool missed;       /* the record was written for a boundary passed while no collector ran */
	bool from_ring;    /* counters from the ring's oldest snapshot (kepler_store_history_at()) */
	char damaged[KEPLER_ERROR_MSG_MAX]; /* the damaged record the ring replaced, "" if none */
	char resolution[32];                /* "snapshot", or the tier's period ("1h") */
};

/* One row of the report: a ledger row of the window's end, less its value at the start. */
struct row {
	const struct kepler_history_row *r;
	uint64_t cpu_time_ns;
	uint64_t energy_uj[KEPLER_MAX_ZONES];
	uint64_t co2e_mg[KEPLER_MAX_ZONES];
	uint64_t co2e_rem[KEPLER_MAX_ZONES]; /* µJ × mg/kWh short of another whole mg (apportion()) */
};

struct job {
	const struct kepler_config *cfg;
	struct kepler_store *store;
	struct kepler_store_meta meta;
	uint64_t since, until;
	uint32_t periods[MAX_PERIODS];
	size_t nperiods;
	struct end a, b;
	enum kepler_history_kind kind; /* the ledger rows read: pods for BY_OWNER and BY_LABEL */
	unsigned by;                   /* a kepler_history_kind, or REPORT_BY_OWNER or _LABEL */
	const char *label;             /* REPORT_BY_LABEL: the key */
	struct row *rows;
	size_t nrows;
	bool co2e_known;
	const char *const *zones;
	size_t nzones;
	struct kepler_history_row *groups; /* BY_OWNER, BY_LABEL: the rows' identities */
	char **group_text;                 /* BY_LABEL: the values, owned */
	size_t ngroups;
};

/*
 * Replace the pods' rows (j->rows, of kind POD) by one row per owner or per
 * label value (j->by): energy and CPU time summed, CO₂e summed exactly (whole
 * mg and remainders, carried). -ENOMEM.
 */
int report_group_rows(struct job *j);
/* Free what report_group_rows() made. */
void report_groups_free(struct job *j);

#endif /* KEPLER_READERS_REPORT_H */
