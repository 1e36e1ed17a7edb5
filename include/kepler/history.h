/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kepler/history.h: history that outlives raw snapshots (docs/history.md).
 *
 * A history ledger keeps, for every identity the snapshots named, the
 * cumulative counters of all the intervals it has been given: energy per
 * zone (µJ, active and idle together), CPU time and CO₂e per zone (integer
 * mg: the exact sum of each interval's energy × the carbon intensity then,
 * its remainder carried). Identities are the node, namespaces, pods,
 * containers, VMs and process groups: processes grouped by (comm, exe,
 * container, VM), so that churn cannot grow it without bound.
 *
 * The collector keeps one ledger, adds each snapshot to it, and at each
 * tier boundary (store.tiers) writes it into the store as a tier record.
 * kepler-report rebuilds the ledger at any time from the newest record
 * before it and the raw snapshots after that record, with the same
 * function: a range's figures are differences of cumulative counters, exact
 * to the µJ and the mg. The record's encoding is versioned, checksummed and
 * compressed; its decoder takes any bytes.
 */
#ifndef KEPLER_HISTORY_H
#define KEPLER_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kepler/error.h"
#include "kepler/snapshot.h"

/* The tier record's own format (docs/store.md, "History"). */
#define KEPLER_HISTORY_FORMAT_MAJOR 1
#define KEPLER_HISTORY_FORMAT_MINOR 1

/* µJ × (mg CO₂e per kWh) in one mg of CO₂e: 3.6e12 µJ a kWh. */
#define KEPLER_UJ_PER_KWH UINT64_C(3600000000000)

enum kepler_history_kind {
	KEPLER_HISTORY_NODE = 0,
	KEPLER_HISTORY_NAMESPACE,
	KEPLER_HISTORY_POD,
	KEPLER_HISTORY_CONTAINER,
	KEPLER_HISTORY_VM,
	KEPLER_HISTORY_PROCESS, /* a process group: (comm, exe, container, VM) */
	KEPLER_HISTORY_KIND_COUNT,
};

/* "node", "namespace", "pod", "container", "vm", "process". */
const char *kepler_history_kind_name(enum kepler_history_kind k);
/* The kind named @name; -EINVAL if none. */
int kepler_history_kind_from_name(const char *name, enum kepler_history_kind *ret);

/* Tier record flags. */
enum kepler_history_flags {
	/*
	 * The boundary passed while no collector ran: the counters are those
	 * of the first snapshot after it (the last before it, as no energy was
	 * measured between).
	 */
	KEPLER_HISTORY_MISSED = 1u << 0,
};

/*
 * One identity and its counters. Strings are never NULL ("" when absent).
 * Identity fields by kind: namespace: name; pod: id (UID), name, ns;
 * container: id, name, ns and pod_id (its pod's), runtime; vm: id, name;
 * process: name (comm), exe, container_id, vm_id; node: none. A pod's
 * owner_kind, owner_name and labels (struct kepler_pod; "" in records
 * written before them) describe it, as its name does: they follow the
 * newest snapshot that names it.
 */
struct kepler_history_row {
	enum kepler_history_kind kind;
	char *id, *name, *ns, *pod_id, *runtime, *exe, *container_id, *vm_id;
	char *owner_kind, *owner_name, *labels;
	uint64_t first_ns, last_ns; /* wall clock of the first and last snapshot that named it */
	uint64_t cpu_time_ns;
	uint64_t *energy_uj; /* per ledger zone (kepler_history_zones()) */
	uint64_t *co2e_mg;   /* per ledger zone */
	uint64_t *co2e_rem;  /* per ledger zone: µJ × mg/kWh not yet a whole mg (< KEPLER_UJ_PER_KWH) */
};

struct kepler_history;

/* A new, empty ledger; NULL when memory is short. */
struct kepler_history *kepler_history_new(void);
void kepler_history_free(struct kepler_history *h);

/*
 * Add @snap's intervals to the ledger: every workload's energy deltas
 * (active and idle) and CPU time, and CO₂e at @intensity_mg_kwh (mg CO₂e per
 * kWh; 0: not known, no CO₂e counted). A snapshot flagged FIRST has no
 * deltas; it still names its identities. -ENOMEM, or -EINVAL for a snapshot
 * older than the last one added.
 */
int kepler_history_add(struct kepler_history *h, const struct kepler_snapshot *snap,
		       uint32_t intensity_mg_kwh);

/* The snapshot last added (its seq and wall clock); 0 and 0 for an empty ledger. */
uint64_t kepler_history_seq(const struct kepler_history *h);
uint64_t kepler_history_wall_ns(const struct kepler_history *h);
/* Begin an empty ledger after snapshot @seq (its next must be @seq + 1 to be added by a replay). */
void kepler_history_set_seq(struct kepler_history *h, uint64_t seq);

/* The intensity of the last snapshot added (0: none known). */
uint32_t kepler_history_intensity(const struct kepler_history *h);

/* The ledger's zones, in the order of every row's arrays. */
size_t kepler_history_zones(const struct kepler_history *h, const char *const **ret_names);

/* Its rows, in the order they were first met. */
size_t kepler_history_count(const struct kepler_history *h);
const struct kepler_history_row *kepler_history_row(const struct kepler_history *h, size_t i);

/*
 * The row of the same identity as @like (kind and identity fields), or
 * NULL: how a reader pairs the rows of two ledgers.
 */
const struct kepler_history_row *kepler_history_find(const struct kepler_history *h,
						     const struct kepler_history_row *like);

/* What one identity used over a window of the ledger (kepler_history_window()). */
struct kepler_history_span {
	uint64_t energy_uj;
	uint64_t co2e_mg;  /* whole mg of the window's exact CO₂e, rounded down */
	uint64_t co2e_rem; /* the rest, µJ × mg/kWh (< KEPLER_UJ_PER_KWH) */
};

/*
 * The window from @start's zone @sz to @end's zone @ez (@start NULL: the
 * identity began inside the window): energy, and CO₂e from the exact
 * counters (whole mg and remainder, so the window's CO₂e is the exact
 * difference rounded down once, never the difference of two rounded
 * counters). A counter begun anew (@start above @end: an identity dropped
 * and back) counts from 0. One rule for every reader of windows:
 * kepler-report's rows and kepler-top's TODAY column.
 */
struct kepler_history_span kepler_history_window(const struct kepler_history_row *start, size_t sz,
						 const struct kepler_history_row *end, size_t ez);

/* Drop rows last named before @before_ns (identities that ended longer ago than every tier keeps). */
void kepler_history_evict(struct kepler_history *h, uint64_t before_ns);

/* What a tier record says besides its ledger. */
struct kepler_history_header {
	uint32_t format_major, format_minor;
	uint32_t period_s;    /* the tier's period */
	uint64_t boundary_ns; /* the boundary it was written for */
	uint32_t flags;       /* enum kepler_history_flags */
};

/*
 * Encode @h as a tier record of @hdr (format and header fields as given),
 * keeping only rows named since @since_ns (the tier's retention): a
 * malloc'ed blob in *ret, its length in *ret_len. -ENOMEM, -EINVAL.
 */
int kepler_history_encode(const struct kepler_history *h, const struct kepler_history_header *hdr,
			  uint64_t since_ns, void **ret, size_t *ret_len, struct kepler_error *err);

/*
 * Decode a tier record (any bytes: corrupt, truncated or hostile input is
 * -EPROTO with what is wrong; a newer major format -EPROTONOSUPPORT) into a
 * new ledger in *ret (free with kepler_history_free()) and its header.
 */
int kepler_history_decode(const void *blob, size_t len, struct kepler_history **ret,
			  struct kepler_history_header *ret_hdr, struct kepler_error *err);

#endif /* KEPLER_HISTORY_H */
