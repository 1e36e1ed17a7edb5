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
 *
 * Damage written over the live file (the collector running) would reach
 * the heap at the next commit too. So the writer notes data.mdb's modify
 * and change times and size after each of its commits; before the next,
 * if they differ, something else wrote the file and the whole walk runs
 * again. Otherwise only the free-page list is checked (a few pages).
 * Those times are as coarse as the kernel's clock tick: a write landing in
 * the same tick as the writer's own commit goes unseen until the next
 * write by anyone else; the check at the next start covers it.
 */
#include <sys/stat.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* ---- page by page, with pread ---- */

#define PAGE_HEADER 16
#define NODE_HEADER 8
#define P_BRANCH 0x01
#define P_LEAF 0x02
#define P_OVERFLOW 0x04
#define P_LEAF2 0x20
#define F_BIGDATA 0x01
#define F_SUBDATA 0x02
#define DB_RECORD 48 /* struct MDB_db: its root at byte 40 */
#define MAX_DEPTH 32
#define P_INVALID UINT64_MAX

enum tree { TREE_FREE, TREE_MAIN, TREE_NAMED };

struct pages {
	int fd;
	uint32_t psize;
	uint64_t last_pg, visited;
	const char *tree;
	char why[128];
};

static uint16_t u16(const unsigned char *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t u64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static bool bad(struct pages *w, const char *fmt, unsigned long long a, unsigned long long b)
{
	snprintf(w->why, sizeof(w->why), fmt, a, b);
	return false;
}

static bool read_page(struct pages *w, uint64_t pgno, unsigned char *buf, size_t len)
{
	if (pgno < 2 || pgno > w->last_pg)
		return bad(w, "a pointer to page %llu, outside the file's %llu pages", pgno, w->last_pg + 1);
	if (pread(w->fd, buf, len, (off_t)(pgno * w->psize)) != (ssize_t)len)
		return bad(w, "page %llu cannot be read%s", pgno, 0);
	if (u64(buf) != pgno)
		return bad(w, "page %llu says it is page %llu", pgno, u64(buf));
	return true;
}

static bool check_page(struct pages *w, uint64_t pgno, int depth, enum tree tree);

/* A leaf node's value: a large value's overflow pages, a free-page record, a named database's tree. */
static bool check_value(struct pages *w, const unsigned char *p, uint64_t pgno, uint16_t flags, size_t size,
			enum tree tree)
{
	unsigned char head[PAGE_HEADER];
	uint64_t opg, n;

	if (flags & F_BIGDATA) {
		opg = u64(p);
		if (!read_page(w, opg, head, sizeof(head)))
			return false;
		n = (uint64_t)head[12] | (uint64_t)head[13] << 8 | (uint64_t)head[14] << 16 |
		    (uint64_t)head[15] << 24;
		if (!(u16(head + 10) & P_OVERFLOW) || !n || opg + n - 1 > w->last_pg ||
		    n * w->psize < size + PAGE_HEADER)
			return bad(w, "page %llu: a large value's pages at %llu are not an overflow run",
				   pgno, opg);
		w->visited += n;
		return true;
	}
	if (tree == TREE_FREE) { /* a count, then that many page numbers inside the file */
		if (size < 8 || size % 8 || u64(p) != size / 8 - 1)
			return bad(w, "page %llu: a free-page record of %llu bytes is not a list", pgno,
				   size);
		for (size_t i = 1; i < size / 8; i++)
			if (u64(p + 8 * i) < 2 || u64(p + 8 * i) > w->last_pg)
				return bad(w, "page %llu: a free page %llu outside the file", pgno,
					   u64(p + 8 * i));
	}
	if (tree == TREE_MAIN && (flags & F_SUBDATA)) { /* a named database: its own tree */
		const char *outer = w->tree;
		bool ok;

		if (size != DB_RECORD)
			return bad(w, "page %llu: a database record of %llu bytes", pgno, size);
		w->tree = "a named database";
		ok = u64(p + 40) == P_INVALID || check_page(w, u64(p + 40), 0, TREE_NAMED);
		w->tree = outer;
		return ok;
	}
	return true;
}

static bool check_nodes(struct pages *w, const unsigned char *pg, uint64_t pgno, int depth, enum tree tree)
{
	uint16_t flags = u16(pg + 10), lower = u16(pg + 12), upper = u16(pg + 14);
	size_t n;

	if ((flags & (P_BRANCH | P_LEAF)) == 0 || (flags & (P_BRANCH | P_LEAF)) == (P_BRANCH | P_LEAF) ||
	    (flags & P_LEAF2))
		return bad(w, "page %llu has kind %#llx, not a branch or leaf page", pgno, flags);
	if (lower < PAGE_HEADER || lower > upper || upper > w->psize || (lower - PAGE_HEADER) % 2)
		return bad(w, "page %llu: its free space runs from %llu to an impossible end", pgno, lower);
	n = (size_t)(lower - PAGE_HEADER) / 2;
	if (!n)
		return bad(w, "page %llu holds no entry%s", pgno, 0);
	for (size_t i = 0; i < n; i++) {
		size_t off = u16(pg + PAGE_HEADER + 2 * i), ksize, dsize;
		const unsigned char *node = pg + off;

		if (off < upper || off + NODE_HEADER > w->psize)
			return bad(w, "page %llu: entry %llu lies outside its page", pgno, i);
		ksize = u16(node + 6);
		if (off + NODE_HEADER + ksize > w->psize)
			return bad(w, "page %llu: entry %llu's key runs past its page", pgno, i);
		if (flags & P_BRANCH) {
			uint64_t child = (uint64_t)u16(node) | (uint64_t)u16(node + 2) << 16 |
					 (uint64_t)u16(node + 4) << 32;

			if (!check_page(w, child, depth + 1, tree))
				return false;
			continue;
		}
		dsize = (size_t)u16(node) | (size_t)u16(node + 2) << 16;
		if (off + NODE_HEADER + ksize + ((u16(node + 4) & F_BIGDATA) ? 8 : dsize) > w->psize)
			return bad(w, "page %llu: entry %llu's value runs past its page", pgno, i);
		if (!check_value(w, node + NODE_HEADER + ksize, pgno, u16(node + 4), dsize, tree))
			return false;
	}
	return true;
}

static bool check_page(struct pages *w, uint64_t pgno, int depth, enum tree tree)
{
	unsigned char *pg;
	bool ok;

	if (depth > MAX_DEPTH)
		return bad(w, "a tree deeper than %llu levels, at page %llu", MAX_DEPTH, pgno);
	if (++w->visited > w->last_pg + 1)
		return bad(w, "more pages than the file's %llu (a loop), at page %llu", w->last_pg + 1, pgno);
	pg = malloc(w->psize);
	if (!pg)
		return bad(w, "out of memory%s%s", 0, 0);
	ok = read_page(w, pgno, pg, w->psize) && check_nodes(w, pg, pgno, depth, tree);
	free(pg);
	return ok;
}

/* Every tree of meta page @newest of @m, page by page, read from @fd (@free_only: the free-page list's). */
static int check_trees(struct kepler_store *s, int fd, const struct store_meta m[2], int newest,
		       bool free_only, struct kepler_error *err)
{
	struct pages w = { .fd = fd };
	int r = 0;

	w.psize = m[newest].psize;
	w.last_pg = m[newest].last_pg;
	w.tree = "the free-page list";
	if (m[newest].free_root != P_INVALID && !check_page(&w, m[newest].free_root, 0, TREE_FREE))
		r = damaged(s, w.tree, w.why, err);
	w.tree = "the main database";
	if (!r && !free_only && m[newest].main_root != P_INVALID &&
	    !check_page(&w, m[newest].main_root, 0, TREE_MAIN))
		r = damaged(s, w.tree, w.why, err);
	return r;
}

/* Every tree of the newest meta page, page by page (@free_only: the free-page list's). */
static int check_pages(struct kepler_store *s, bool free_only, struct kepler_error *err)
{
	char file[4200];
	struct store_meta m[2];
	int fd, newest, r;
	mdb_filehandle_t env_fd;
	/* the writer reads the file it writes (its path checked at each commit), with no lookup of the path */
	bool own = !(s->writer && s->env && mdb_env_get_fd(s->env, &env_fd) == 0);

	snprintf(file, sizeof(file), "%s/data.mdb", s->path);
	fd = own ? open(file, O_RDONLY | O_CLOEXEC) : env_fd;
	if (fd < 0 &&
	    (errno == EACCES || errno == EPERM)) /* not damage: a directory above it, closed to us */
		return kepler_error_set(
			err, -errno,
			"cannot open '%s' to check it: %s (the collector runs as collector.user "
			"after start: every directory above the store must let it in)",
			file, strerror(errno));
	if (fd < 0)
		return damaged(s, "data.mdb", strerror(errno), err);
	newest = store_meta_read(fd, m);
	r = newest < 0 ? damaged(s, "data.mdb", "no valid meta page", err)
		       : check_trees(s, fd, m, newest, free_only, err);
	if (own)
		close(fd);
	return r;
}

/* ---- through LMDB ---- */

static int walk(const struct kepler_store *s, MDB_txn *txn, MDB_dbi dbi, const char *what, size_t last_pgno,
		struct kepler_error *err)
{
	MDB_cursor *c;
	MDB_val k, v;
	int rc = store_cursor_open(txn, dbi, &c);

	if (rc)
		return damaged(s, what, mdb_strerror(rc), err);
	for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT))
		if (dbi == FREE_DBI && !free_record_ok(&v, last_pgno)) {
			store_cursor_close(c);
			return damaged(s, what, "a record that is not a list of free pages", err);
		}
	store_cursor_close(c);
	return rc == MDB_NOTFOUND ? 0 : damaged(s, what, mdb_strerror(rc), err);
}

/* Through LMDB, under the guard: the free-page list, then (unless @free_only) every other database. */
STORE_OP static int verify_in(struct kepler_store *s, bool free_only, struct kepler_error *err)
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
	if (r == 0 && !free_only)
		r = walk(s, txn, MAIN_DBI, "the main database", info.me_last_pgno, err);
	for (size_t i = 0; r == 0 && !free_only && i < sizeof(names) / sizeof(names[0]); i++) {
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
	int r = check_pages(s, false, err);

	return r < 0 ? r : STORE_GUARDED(s, err, verify_in(s, false, err));
}

int kepler_store_verify_free(struct kepler_store *s, struct kepler_error *err)
{
	int r = check_pages(s, true, err);

	return r < 0 ? r : STORE_GUARDED(s, err, verify_in(s, true, err));
}

static bool data_stat(const struct kepler_store *s, struct stat *st)
{
	mdb_filehandle_t fd;

	return s->env && mdb_env_get_fd(s->env, &fd) == 0 && fstat(fd, st) == 0;
}

static bool same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

int kepler_store_write_commit(struct kepler_store *s, MDB_txn *txn)
{
	struct stat st;
	int rc = mdb_txn_commit(txn);

	s->written_known = rc == 0 && data_stat(s, &st);
	if (s->written_known) {
		s->written_mtime = st.st_mtim;
		s->written_ctime = st.st_ctim;
		s->written_size = st.st_size;
	}
	return rc;
}

/* Whether data.mdb (@st) is as the writer's last commit left it. */
static bool as_written(const struct kepler_store *s, const struct stat *st)
{
	return s->written_known && st->st_size == s->written_size &&
	       same_time(&st->st_mtim, &s->written_mtime) && same_time(&st->st_ctim, &s->written_ctime);
}

int kepler_store_verify_for_write(struct kepler_store *s, struct kepler_error *err)
{
	struct stat st;

	if (data_stat(s, &st) && as_written(s, &st))
		return kepler_store_verify_free(s, err);
	return kepler_store_verify(s, err);
}

int kepler_store_verify_for_commit(struct kepler_store *s, const struct stat *st, const struct store_meta *m,
				   int newest, struct kepler_error *err)
{
	mdb_filehandle_t fd;
	int r;

	if (!as_written(s, st) || mdb_env_get_fd(s->env, &fd))
		return kepler_store_verify(s, err);
	r = check_trees(s, fd, m, newest, true, err);
	return r < 0 ? r : STORE_GUARDED(s, err, verify_in(s, true, err));
}
