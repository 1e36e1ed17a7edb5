// SPDX-License-Identifier: Apache-2.0
/*
 * The store's `history` database (docs/history.md):
 *   'T' + u32 period_s + u64 boundary_ns (big-endian) -> a tier record
 *       (kepler/history.h), kept for its tier's KEEP;
 *   'I' + u64 seq (big-endian) -> u32 carbon intensity (mg CO2e per kWh,
 *       little-endian) of that snapshot, kept as long as the snapshot.
 * Written by the writer in the transaction of the snapshot they belong to.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kepler/config.h"
#include "kepler/history.h"
#include "store_internal.h"

#define TIER_KEY 13
#define INTENSITY_KEY 9
#define SEC 1000000000ULL
#define MAX_SKIPPED 8 /* damaged records passed over for an older one */

static void tier_key(unsigned char k[TIER_KEY], uint32_t period_s, uint64_t boundary_ns)
{
	k[0] = 'T';
	for (int i = 0; i < 4; i++)
		k[1 + i] = (unsigned char)(period_s >> (24 - 8 * i));
	kepler_store_put_key(boundary_ns, k + 5);
}

static uint32_t key_period(const MDB_val *k)
{
	const unsigned char *p = k->mv_data;

	return (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | p[4];
}

static uint64_t key_boundary(const MDB_val *k)
{
	MDB_val b = { 8, (unsigned char *)k->mv_data + 5 };

	return kepler_store_get_key(&b);
}

static bool is_tier_key(const MDB_val *k)
{
	return k->mv_size == TIER_KEY && ((const unsigned char *)k->mv_data)[0] == 'T';
}

int kepler_store_set_tiers(struct kepler_store *s, const struct kepler_store_tier_keep *tiers, size_t n)
{
	struct kepler_store_tier_keep *t = n ? malloc(n * sizeof(*t)) : NULL;

	if (n && !t)
		return -ENOMEM;
	if (n)
		memcpy(t, tiers, n * sizeof(*t));
	free(s->tier_keep);
	s->tier_keep = t;
	s->ntier_keep = n;
	return 0;
}

int kepler_store_stage_tier(struct kepler_store *s, uint32_t period_s, uint64_t boundary_ns, void *blob,
			    size_t len)
{
	struct store_staged_tier *st = realloc(s->staged, (s->nstaged + 1) * sizeof(*st));

	if (!st) {
		free(blob);
		return -ENOMEM;
	}
	s->staged = st;
	st[s->nstaged++] = (struct store_staged_tier){ period_s, boundary_ns, blob, len };
	return 0;
}

void kepler_store_stage_intensity(struct kepler_store *s, uint32_t mg_kwh)
{
	s->staged_intensity = mg_kwh;
}

void kepler_store_history_committed(struct kepler_store *s)
{
	for (size_t i = 0; i < s->nstaged; i++)
		free(s->staged[i].blob);
	s->nstaged = 0;
}

void kepler_store_history_free(struct kepler_store *s)
{
	kepler_store_history_committed(s);
	free(s->staged);
	s->staged = NULL;
	free(s->tier_keep);
	s->tier_keep = NULL;
	s->ntier_keep = 0;
}

/* Delete the records of tier @t older than its KEEP before @now_ns. */
static int prune_tier(struct kepler_store *s, MDB_txn *txn, const struct kepler_store_tier_keep *t,
		      uint64_t now_ns)
{
	unsigned char key[TIER_KEY];
	MDB_val k = { TIER_KEY, key }, v;
	MDB_cursor *cur;
	uint64_t cutoff = now_ns > t->keep_ns ? now_ns - t->keep_ns : 0;
	int rc = store_cursor_open(txn, s->history, &cur);

	if (rc)
		return rc;
	tier_key(key, t->period_s, 0);
	rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	while (!rc && is_tier_key(&k) && key_period(&k) == t->period_s && key_boundary(&k) < cutoff) {
		rc = mdb_cursor_del(cur, 0);
		if (!rc)
			rc = mdb_cursor_get(cur, &k, &v, MDB_GET_CURRENT);
	}
	store_cursor_close(cur);
	return rc == MDB_NOTFOUND || rc == EINVAL ? 0 : rc;
}

/* Delete the intensities of snapshots the ring no longer holds (below @oldest). */
static int prune_intensities(struct kepler_store *s, MDB_txn *txn, uint64_t oldest)
{
	unsigned char key[INTENSITY_KEY] = { 'I' };
	MDB_val k = { INTENSITY_KEY, key }, v;
	MDB_cursor *cur;
	int rc = store_cursor_open(txn, s->history, &cur);

	if (rc)
		return rc;
	rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	while (!rc && k.mv_size == INTENSITY_KEY && ((unsigned char *)k.mv_data)[0] == 'I') {
		MDB_val sk = { 8, (unsigned char *)k.mv_data + 1 };

		if (kepler_store_get_key(&sk) >= oldest)
			break;
		rc = mdb_cursor_del(cur, 0);
		if (!rc)
			rc = mdb_cursor_get(cur, &k, &v, MDB_GET_CURRENT);
	}
	store_cursor_close(cur);
	return rc == MDB_NOTFOUND || rc == EINVAL ? 0 : rc;
}

int kepler_store_put_history(struct kepler_store *s, MDB_txn *txn, uint64_t seq, uint64_t wall_ns)
{
	MDB_cursor *cur;
	MDB_val k, v;
	int rc = 0;

	/*
	 * Nothing to do in most commits: records come at tier boundaries, and
	 * pruning waits for them or for every 64th commit (a commit without
	 * history touches no more of the map than before history existed).
	 */
	if (!s->have_history || (!s->nstaged && !s->staged_intensity && (s->commits + 1) % 64))
		return 0;
	for (size_t i = 0; i < s->nstaged && !rc; i++) {
		unsigned char key[TIER_KEY];

		tier_key(key, s->staged[i].period_s, s->staged[i].boundary_ns);
		k = (MDB_val){ TIER_KEY, key };
		v = (MDB_val){ s->staged[i].len, s->staged[i].blob };
		rc = mdb_put(txn, s->history, &k, &v, 0);
	}
	if (!rc && s->staged_intensity) {
		unsigned char key[INTENSITY_KEY] = { 'I' }, val[4];

		kepler_store_put_key(seq, key + 1);
		for (int b = 0; b < 4; b++)
			val[b] = (unsigned char)(s->staged_intensity >> (8 * b));
		k = (MDB_val){ INTENSITY_KEY, key };
		v = (MDB_val){ 4, val };
		rc = mdb_put(txn, s->history, &k, &v, 0);
	}
	for (size_t i = 0; i < s->ntier_keep && !rc; i++)
		rc = prune_tier(s, txn, &s->tier_keep[i], wall_ns);
	if (!rc && !(rc = store_cursor_open(txn, s->snapshots, &cur))) {
		rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
		store_cursor_close(cur);
		if (!rc)
			rc = prune_intensities(s, txn, kepler_store_get_key(&k));
		else if (rc == MDB_NOTFOUND)
			rc = 0;
	}
	return rc;
}

/* ---- readers ---- */

/* A read transaction with the history database; -ENOENT (ended) when the store has none. */
static int begin_history(struct kepler_store *s, MDB_txn **txn, struct kepler_error *err)
{
	int r = kepler_store_begin(s, txn, err);

	if (r < 0)
		return r;
	if (!s->have_history) {
		kepler_store_end_read(*txn);
		return kepler_error_set(
			err, -ENOENT,
			"the store '%s' keeps no history (written before kepler-c kept history)", s->path);
	}
	return 0;
}

STORE_OP static int periods_in(struct kepler_store *s, uint32_t *ret, size_t max, size_t *ret_n,
			       struct kepler_error *err)
{
	unsigned char key[TIER_KEY];
	MDB_val k = { TIER_KEY, key }, v;
	MDB_txn *txn;
	MDB_cursor *cur;
	size_t n = 0;
	int rc, r = begin_history(s, &txn, err);

	*ret_n = 0;
	if (r < 0)
		return r == -ENOENT ? 0 : r;
	tier_key(key, 0, 0);
	rc = store_cursor_open(txn, s->history, &cur);
	if (rc) {
		kepler_store_end_read(txn);
		return kepler_store_lmdb_error(rc, "reading the store's tiers", err);
	}
	rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	while (!rc && is_tier_key(&k)) {
		uint32_t p = key_period(&k);

		if (n < max)
			ret[n++] = p;
		/* the next period: the first key past this period's last boundary */
		tier_key(key, p, UINT64_MAX);
		k = (MDB_val){ TIER_KEY, key };
		rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
		if (!rc && is_tier_key(&k) && key_period(&k) == p)
			rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
	}
	store_cursor_close(cur);
	if (rc == MDB_NOTFOUND)
		rc = 0;
	kepler_store_end_read(txn);
	if (rc)
		return kepler_store_lmdb_error(rc, "reading the store's tiers", err);
	*ret_n = n;
	return 0;
}

int kepler_store_tier_periods(struct kepler_store *s, uint32_t *ret, size_t max, size_t *ret_n,
			      struct kepler_error *err)
{
	return STORE_GUARDED(s, err, periods_in(s, ret, max, ret_n, err));
}

STORE_OP static int record_in(struct kepler_store *s, uint32_t period_s, uint64_t wall_ns, bool before,
			      void **ret, size_t *ret_len, uint64_t *ret_boundary, struct kepler_error *err)
{
	unsigned char key[TIER_KEY];
	MDB_val k = { TIER_KEY, key }, v;
	MDB_txn *txn;
	MDB_cursor *cur;
	int rc, r = begin_history(s, &txn, err);

	if (r < 0)
		return r;
	tier_key(key, period_s, wall_ns);
	rc = store_cursor_open(txn, s->history, &cur);
	if (!rc) {
		/* the first key at or after (period, wall_ns); before: that one if equal, else the one before it */
		rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
		if (before &&
		    (rc == MDB_NOTFOUND ||
		     (!rc && (!is_tier_key(&k) || key_period(&k) != period_s || key_boundary(&k) > wall_ns))))
			rc = mdb_cursor_get(cur, &k, &v, rc == MDB_NOTFOUND ? MDB_LAST : MDB_PREV);
		store_cursor_close(cur);
	}
	if (!rc && (!is_tier_key(&k) || key_period(&k) != period_s))
		rc = MDB_NOTFOUND;
	if (!rc) {
		*ret = store_value_fits(s, &v) ? malloc(v.mv_size ? v.mv_size : 1) : NULL;
		if (*ret) {
			store_guard_hold(*ret); /* the copy may fault: then freed */
			memcpy(*ret, v.mv_data, v.mv_size);
			store_guard_release(*ret);
			*ret_len = v.mv_size;
			*ret_boundary = key_boundary(&k);
		}
	}
	kepler_store_end_read(txn);
	if (rc == MDB_NOTFOUND)
		return kepler_error_set(err, -ENOENT, "no record of the %us tier %s that time", period_s,
					before ? "at or before" : "at or after");
	if (rc)
		return kepler_store_lmdb_error(rc, "reading a tier record", err);
	if (!*ret && !store_value_fits(s, &v))
		return kepler_error_set(err, -EUCLEAN,
					"the store '%s' is damaged: a tier record larger than the file",
					s->path);
	return *ret ? 0 : kepler_error_set(err, -ENOMEM, "out of memory");
}

int kepler_store_tier_record(struct kepler_store *s, uint32_t period_s, uint64_t wall_ns, bool before,
			     void **ret, size_t *ret_len, uint64_t *ret_boundary, struct kepler_error *err)
{
	return STORE_GUARDED(s, err,
			     record_in(s, period_s, wall_ns, before, ret, ret_len, ret_boundary, err));
}

STORE_OP static int intensity_in(struct kepler_store *s, uint64_t seq, uint32_t *ret,
				 struct kepler_error *err)
{
	unsigned char key[INTENSITY_KEY] = { 'I' };
	MDB_val k = { INTENSITY_KEY, key }, v;
	MDB_txn *txn;
	int rc, r = begin_history(s, &txn, err);

	*ret = 0;
	if (r < 0)
		return r == -ENOENT ? 0 : r;
	kepler_store_put_key(seq, key + 1);
	rc = mdb_get(txn, s->history, &k, &v);
	size_t len = rc ? 4 : v.mv_size;

	if (!rc && len == 4) {
		const unsigned char *p = v.mv_data;

		*ret = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	}
	kepler_store_end_read(txn);
	if (rc && rc != MDB_NOTFOUND)
		return kepler_store_lmdb_error(rc, "reading a carbon intensity", err);
	if (len != 4) /* not a value to read as another: the CO2e would change unsaid */
		return kepler_error_set(err, -EUCLEAN,
					"the store '%s' is damaged: snapshot %llu's carbon intensity record "
					"is %zu bytes, not 4",
					s->path, (unsigned long long)seq, len);
	return 0;
}

int kepler_store_intensity(struct kepler_store *s, uint64_t seq, uint32_t *ret_mg_kwh,
			   struct kepler_error *err)
{
	return STORE_GUARDED(s, err, intensity_in(s, seq, ret_mg_kwh, err));
}

/* ---- the ledger from the store: a record and the snapshots after it ---- */

/* "the 1h tier record of 2026-11-29T07:00:00Z" */
static void name_record(char *buf, size_t size, uint32_t period_s, uint64_t boundary_ns)
{
	char period[32], when[32];
	time_t t = (time_t)(boundary_ns / SEC);
	struct tm tm;

	kepler_format_duration((uint64_t)period_s * SEC, period, sizeof(period));
	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(buf, size, "the %s tier record of %s", period, when);
}

int kepler_store_history_load(struct kepler_store *s, uint64_t wall_ns, struct kepler_history **ret,
			      struct kepler_history_header *ret_hdr, struct kepler_error *err)
{
	uint32_t periods[64], best_p = 0;
	uint64_t best = 0, boundary;
	size_t np = 0, len;
	void *blob;
	char name[96], why[sizeof(err->msg)];
	int r = kepler_store_tier_periods(s, periods, 64, &np, err);

	if (r < 0)
		return r;
	for (size_t i = 0; i < np; i++) { /* finest first: a tie keeps the finer */
		if (kepler_store_tier_record(s, periods[i], wall_ns, true, &blob, &len, &boundary, err) < 0)
			continue;
		free(blob);
		if (!best_p || boundary > best)
			best = boundary, best_p = periods[i];
	}
	if (!best_p)
		return kepler_error_set(err, -ENOENT, "no tier record at or before that time");
	r = kepler_store_tier_record(s, best_p, wall_ns, true, &blob, &len, &boundary, err);
	if (r < 0)
		return r;
	r = kepler_history_decode(blob, len, ret, ret_hdr, err);
	free(blob);
	if (r == 0 && (ret_hdr->period_s != best_p || ret_hdr->boundary_ns != boundary)) {
		kepler_history_free(*ret);
		*ret = NULL;
		r = kepler_error_set(err, -EPROTO, "its header says another tier or boundary");
	}
	if (r < 0 && r != -ENOMEM) {
		/* named by its key, not by a header that may be what is damaged */
		name_record(name, sizeof(name), best_p, boundary);
		snprintf(why, sizeof(why), "%s", err->msg);
		ret_hdr->period_s = best_p;
		ret_hdr->boundary_ns = boundary;
		r = kepler_error_set(err, -EUCLEAN, "%s is damaged (%s)", name, why);
	}
	return r;
}

/*
 * The newest usable record at or before @wall_ns, passing over damaged ones
 * (at most MAX_SKIPPED); *@damaged: the newest passed over, "" if none.
 */
static int load_usable(struct kepler_store *s, uint64_t wall_ns, struct kepler_history **ret,
		       struct kepler_history_header *hdr, char *damaged, size_t size,
		       struct kepler_error *err)
{
	int r = -ENOENT;

	damaged[0] = 0;
	for (int i = 0; i <= MAX_SKIPPED; i++) {
		if ((r = kepler_store_history_load(s, wall_ns, ret, hdr, err)) != -EUCLEAN)
			break;
		if (!damaged[0])
			snprintf(damaged, size, "%s", err->msg);
		if (!hdr->boundary_ns)
			break;
		wall_ns = hdr->boundary_ns - 1;
	}
	return r;
}

int kepler_store_history_replay(struct kepler_store *s, struct kepler_history *h, uint64_t last_seq,
				size_t *ret_n, uint64_t *ret_wall_ns, struct kepler_error *err)
{
	uint64_t from = kepler_history_seq(h) + 1, *seqs = NULL;
	size_t n = 0, done = 0;
	int r = kepler_store_list(s, from, last_seq, &seqs, &n, err);

	*ret_n = 0;
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	/* only an unbroken run from the ledger's next snapshot keeps its counters exact */
	for (size_t i = 0; i < n && seqs[i] == from + i; i++) {
		struct kepler_snapshot *snap;
		uint32_t mg = 0;

		if ((r = kepler_store_read(s, seqs[i], &snap, err)) < 0)
			break;
		if ((r = kepler_store_intensity(s, seqs[i], &mg, err)) == 0 &&
		    (r = kepler_history_add(h, snap, mg)) < 0)
			kepler_error_set(err, r, "snapshot %llu: %s", (unsigned long long)seqs[i],
					 strerror(-r));
		if (r == 0) {
			done++;
			if (ret_wall_ns)
				*ret_wall_ns = snap->wall_ns;
		}
		kepler_snapshot_free(snap);
		if (r < 0)
			break;
	}
	free(seqs);
	*ret_n = done;
	return r < 0 ? r : 0;
}

int kepler_store_history_follow(struct kepler_store *s, struct kepler_history **h, uint64_t seq,
				uint64_t wall_ns, struct kepler_error *err)
{
	struct kepler_history_header hdr;
	uint64_t oldest = 0;
	char damaged[KEPLER_ERROR_MSG_MAX];
	size_t n;

	for (int attempt = 0; attempt < 2; attempt++) {
		if (*h && kepler_history_seq(*h) <= seq &&
		    kepler_store_history_replay(s, *h, seq, &n, NULL, err) == 0 &&
		    kepler_history_seq(*h) == seq)
			return 0;
		/* rebuilt: a store replaced, or the snapshots it needed pruned */
		kepler_history_free(*h);
		*h = NULL;
		if (load_usable(s, wall_ns, h, &hdr, damaged, sizeof(damaged), err) < 0) {
			if (!(*h = kepler_history_new()))
				return kepler_error_set(err, -ENOMEM, "out of memory");
			/* no record: only the store's first snapshot can begin a ledger */
			if (kepler_store_oldest_seq(s, &oldest, err) < 0 || oldest != 1)
				break;
		}
	}
	return kepler_error_set(err, -ENODATA, "the store's history does not reach snapshot %llu",
				(unsigned long long)seq);
}

/*
 * An empty ledger just before the ring's oldest snapshot, for a time at or
 * after that snapshot's interval began (*@at_ns: that time, when @wall_ns
 * is earlier). -ENODATA for an empty ring.
 */
static int ring_base(struct kepler_store *s, uint64_t wall_ns, struct kepler_history **ret, uint64_t *at_ns,
		     struct kepler_error *err)
{
	struct kepler_snapshot *first;
	uint64_t oldest, begin;
	int r;

	if (kepler_store_oldest_seq(s, &oldest, err) < 0)
		return kepler_error_set(err, -ENODATA, "no history at or before that time");
	if ((r = kepler_store_read(s, oldest, &first, err)) < 0)
		return r;
	begin = first->wall_ns > first->interval_ns ? first->wall_ns - first->interval_ns : 0;
	kepler_snapshot_free(first);
	if (!(*ret = kepler_history_new()))
		return kepler_error_set(err, -ENOMEM, "out of memory");
	kepler_history_set_seq(*ret, oldest - 1);
	*at_ns = wall_ns > begin ? wall_ns : begin;
	return 0;
}

int kepler_store_history_at(struct kepler_store *s, uint64_t wall_ns, struct kepler_history **ret,
			    struct kepler_history_at *at, struct kepler_error *err)
{
	struct kepler_history_header hdr;
	uint64_t oldest = 0, last;
	bool ring = at->from_ring;
	int r = ring ? -ENOENT : kepler_store_history_load(s, wall_ns, ret, &hdr, err);

	memset(at, 0, sizeof(*at));
	if (r == -EUCLEAN) {
		/* the raw snapshots instead, where they cover the time; else the damage said */
		snprintf(at->damaged, sizeof(at->damaged), "%s", err->msg);
		if (ring_base(s, wall_ns, ret, &at->at_ns, err) < 0 || at->at_ns != wall_ns) {
			if (at->at_ns != wall_ns) {
				kepler_history_free(*ret);
				*ret = NULL;
			}
			return kepler_error_set(err, -EUCLEAN,
						"%s, and the raw snapshots do not reach that time",
						at->damaged);
		}
		at->from_ring = true;
	} else if (r == 0) {
		at->at_ns = hdr.boundary_ns;
		at->period_s = hdr.period_s;
		at->missed = hdr.flags & KEPLER_HISTORY_MISSED;
	} else if (r == -ENOENT) {
		kepler_store_oldest_seq(s, &oldest, err);
		if (!ring && oldest == 1) {
			/* the collector's ledger began empty at the store's first snapshot */
			if (!(*ret = kepler_history_new()))
				return kepler_error_set(err, -ENOMEM, "out of memory");
			at->at_ns = wall_ns; /* before the store's first snapshot every counter is 0 */
		} else {
			/* no record: counters from the ring's oldest snapshot, which only another end so built matches */
			if ((r = ring_base(s, wall_ns, ret, &at->at_ns, err)) < 0)
				return r;
			at->from_ring = true;
		}
	} else {
		return r;
	}
	r = kepler_store_seq_at(s, wall_ns, &last, err);
	if (r == 0 && last > kepler_history_seq(*ret))
		r = kepler_store_history_replay(s, *ret, last, &at->snapshots, &at->at_ns, err);
	else if (r == -ENOENT)
		r = 0;
	if (r < 0) {
		kepler_history_free(*ret);
		*ret = NULL;
	}
	return r;
}
