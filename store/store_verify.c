// SPDX-License-Identifier: Apache-2.0
/*
 * The writer's check of the whole store before its first write.
 *
 * LMDB trusts its pages. A read of a damaged page is caught (the fault
 * guard, LMDB's own errors and assertions), but a write transaction on one
 * is not: committing over a damaged free-page list copies as many bytes as
 * a garbage count says, over the heap, and the process then dies in
 * free() with SIGABRT, whatever guard is in place. So before it writes,
 * the collector walks every database read-only, under the guard: every
 * page of every tree (the free-page list, the main database, snapshots,
 * series, meta, history), and every free-page record's shape (a count,
 * then that many page numbers inside the file). A store that fails is
 * damaged (-EUCLEAN): the collector says so and stops, or with
 * store.move-damaged keeps it aside and starts a new one. The walk reads
 * each tree's pages once, and of a large value its first page only.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "store_internal.h"

#define FREE_DBI 0 /* LMDB's free-page list */
#define MAIN_DBI 1 /* LMDB's main database: the named ones' records */

static int damaged(const struct kepler_store *s, const char *what, const char *why, struct kepler_error *err)
{
	return kepler_error_set(
		err, -EUCLEAN,
		"the store '%s' is damaged: %s: %s; stop kepler-collectd, move '%s' aside and start "
		"it again, or start it with --store.move-damaged",
		s->path, what, why, s->path);
}

/* A free-page record: its count, then that many page numbers, each inside the file. */
static bool free_record_ok(const MDB_val *v, size_t last_pgno)
{
	const unsigned char *p = v->mv_data;
	size_t n, pg;

	if (v->mv_size < sizeof(size_t) || v->mv_size % sizeof(size_t))
		return false;
	memcpy(&n, p, sizeof(n));
	if (n != v->mv_size / sizeof(size_t) - 1)
		return false;
	for (size_t i = 1; i <= n; i++) {
		memcpy(&pg, p + i * sizeof(size_t), sizeof(pg));
		if (pg < 2 || pg > last_pgno)
			return false;
	}
	return true;
}

static int walk(const struct kepler_store *s, MDB_txn *txn, MDB_dbi dbi, const char *what, size_t last_pgno,
		struct kepler_error *err)
{
	MDB_cursor *c;
	MDB_val k, v;
	int rc = mdb_cursor_open(txn, dbi, &c);

	if (rc)
		return damaged(s, what, mdb_strerror(rc), err);
	for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT))
		if (dbi == FREE_DBI && !free_record_ok(&v, last_pgno)) {
			mdb_cursor_close(c);
			return damaged(s, what, "a record that is not a list of free pages", err);
		}
	mdb_cursor_close(c);
	return rc == MDB_NOTFOUND ? 0 : damaged(s, what, mdb_strerror(rc), err);
}

STORE_OP static int verify_in(struct kepler_store *s, struct kepler_error *err)
{
	static const char *const names[] = { "snapshots", "series", "meta", "history" };
	MDB_envinfo info;
	MDB_txn *txn;
	MDB_dbi dbi;
	int rc, r;

	rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn);
	if (rc)
		return damaged(s, "beginning a read", mdb_strerror(rc), err);
	store_guard_track(txn);
	mdb_env_info(s->env, &info);
	r = walk(s, txn, FREE_DBI, "the free-page list", info.me_last_pgno, err);
	if (r == 0)
		r = walk(s, txn, MAIN_DBI, "the main database", info.me_last_pgno, err);
	for (size_t i = 0; r == 0 && i < sizeof(names) / sizeof(names[0]); i++) {
		rc = mdb_dbi_open(txn, names[i], 0, &dbi);
		if (rc == MDB_NOTFOUND)
			continue; /* a new store, or one from before history */
		r = rc ? damaged(s, names[i], mdb_strerror(rc), err)
		       : walk(s, txn, dbi, names[i], info.me_last_pgno, err);
	}
	store_guard_track(NULL);
	mdb_txn_abort(txn);
	return r;
}

int kepler_store_verify(struct kepler_store *s, struct kepler_error *err)
{
	return STORE_GUARDED(s, err, verify_in(s, err));
}
