// SPDX-License-Identifier: Apache-2.0
/*
 * LMDB's two meta pages (pages 0 and 1 of data.mdb), read with pread, never
 * through the map. LMDB reads them through its map and trusts them: a
 * zeroed or garbled meta page makes any process that begins a transaction
 * abort on one of LMDB's assertions. LMDB keeps two so that one can be lost
 * (each commit writes the older one). So the store checks them before each
 * transaction: with one damaged, readers go on with the other (unless the
 * damaged one would be picked) and the writer copies the good one over it;
 * with both damaged, every process refuses the store with what to do.
 * Here too the check that data.mdb holds every page the newest points at
 * (kepler_store_check_size, _check_meta).
 *
 * The layout is LMDB 0.9's on 64-bit hosts (mdb.c: struct MDB_page's
 * 16-byte header, then struct MDB_meta), checked by the tests against files
 * LMDB wrote.
 */
#include <sys/stat.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "store_internal.h"

#define PAGE_HEADER 16
#define P_META 0x08
#define MDB_MAGIC 0xBEEFC0DEu
#define MDB_DATA_VERSION 1u
#define P_INVALID UINT64_MAX
#define META_BYTES 160        /* the header and MDB_meta, rounded up */
#define SYSTEM_PAGE_MAX 16384 /* the largest page size read in one go with the next meta page */

static uint16_t u16_at(const unsigned char *p, size_t off)
{
	uint16_t v;

	memcpy(&v, p + off, sizeof(v));
	return v;
}

static uint32_t u32_at(const unsigned char *p, size_t off)
{
	uint32_t v;

	memcpy(&v, p + off, sizeof(v));
	return v;
}

static uint64_t u64_at(const unsigned char *p, size_t off)
{
	uint64_t v;

	memcpy(&v, p + off, sizeof(v));
	return v;
}

/* One meta page's bytes into @m: valid, or why not. */
static void parse(const unsigned char *p, uint64_t pgno, struct store_meta *m)
{
	uint64_t free_root = u64_at(p, 80), main_root = u64_at(p, 128);

	memset(m, 0, sizeof(*m));
	m->psize = u32_at(p, 40); /* the free DB's md_pad: LMDB's page size */
	m->txnid = u64_at(p, 144);
	m->last_pg = u64_at(p, 136);
	m->free_root = free_root;
	m->main_root = main_root;
	if (!(u16_at(p, 10) & P_META) || u64_at(p, 0) != pgno)
		snprintf(m->why, sizeof(m->why), "not a meta page");
	else if (u32_at(p, 16) != MDB_MAGIC || u32_at(p, 20) != MDB_DATA_VERSION)
		snprintf(m->why, sizeof(m->why), "no LMDB magic");
	else if (m->psize < 512 || m->psize > 65536 || (m->psize & (m->psize - 1)))
		snprintf(m->why, sizeof(m->why), "page size %u", m->psize);
	else if (m->last_pg < 1 || (free_root != P_INVALID && (free_root < 2 || free_root > m->last_pg)) ||
		 (main_root != P_INVALID && (main_root < 2 || main_root > m->last_pg)))
		snprintf(m->why, sizeof(m->why), "its roots lie outside its pages");
	else
		m->valid = true;
}

int store_meta_read(int fd, struct store_meta m[2])
{
	/* both at once where page 1 is where the system's page size puts it (one read at each commit) */
	unsigned char p[SYSTEM_PAGE_MAX + META_BYTES];
	size_t sys = (size_t)sysconf(_SC_PAGESIZE), both = sys + META_BYTES;
	uint32_t psize;
	ssize_t got;
	int newest = -1;

	memset(m, 0, 2 * sizeof(*m));
	got = pread(fd, p, both <= sizeof(p) ? both : META_BYTES, 0);
	if (got < META_BYTES) {
		snprintf(m[0].why, sizeof(m[0].why), "cannot be read");
		snprintf(m[1].why, sizeof(m[1].why), "cannot be read");
		return -1;
	}
	parse(p, 0, &m[0]);
	/* page 1 is a page further on: the page size page 0 says, else the system's */
	psize = m[0].valid ? m[0].psize : (uint32_t)sys;
	if (psize == sys && got == (ssize_t)both)
		parse(p + sys, 1, &m[1]);
	else if (pread(fd, p, META_BYTES, psize) == META_BYTES)
		parse(p, 1, &m[1]);
	else
		snprintf(m[1].why, sizeof(m[1].why), "cannot be read");
	for (int i = 0; i < 2; i++)
		if (m[i].valid && (newest < 0 || m[i].txnid > m[newest].txnid))
			newest = i;
	return newest;
}

int store_meta_repair(int fd, const struct store_meta m[2], int good)
{
	unsigned char p[META_BYTES];
	int bad = !good;
	uint64_t pgno = (uint64_t)bad;
	off_t from = good ? (off_t)m[good].psize : 0, to = bad ? (off_t)m[good].psize : 0;

	if (pread(fd, p, sizeof(p), from) != (ssize_t)sizeof(p))
		return -EIO;
	memcpy(p, &pgno, sizeof(pgno));
	if (pwrite(fd, p, sizeof(p), to) != (ssize_t)sizeof(p) || fdatasync(fd) < 0)
		return -errno ? -errno : -EIO;
	return 0;
}

/* ---- the store's checks of them (store_internal.h) ---- */

void kepler_store_repair_meta(struct kepler_store *s, int fd, const struct store_meta m[2], int good)
{
	int r = store_meta_repair(fd, m, good);

	if (r < 0)
		kepler_store_say(s,
				 "the store '%s': meta page %d of data.mdb is damaged (%s) and could not be "
				 "restored from the other: %s",
				 s->path, !good, m[!good].why, strerror(-r));
	else
		kepler_store_say(s,
				 "the store '%s': meta page %d of data.mdb was damaged (%s): restored from "
				 "meta page %d (transaction %llu); at most the last commit is lost",
				 s->path, !good, m[!good].why, good, (unsigned long long)m[good].txnid);
}

int kepler_store_check_meta(struct kepler_store *s, int fd, const struct stat *fs, struct store_meta *m,
			    int *ret_newest, struct kepler_error *err)
{
	char what[200];
	uint64_t need;
	int newest;

	need = 2 * (uint64_t)sysconf(_SC_PAGESIZE);
	if ((uint64_t)fs->st_size < need) {
		snprintf(what, sizeof(what), "data.mdb is %lld bytes, shorter than its two meta pages",
			 (long long)fs->st_size);
		return kepler_store_damaged(s, what, err);
	}
	newest = *ret_newest = store_meta_read(fd, m);
	if (newest < 0) {
		snprintf(what, sizeof(what), "both meta pages of data.mdb are damaged (%s; %s)", m[0].why,
			 m[1].why);
		return kepler_store_damaged(s, what, err);
	}
	if (!m[!newest].valid) {
		if (s->writer)
			kepler_store_repair_meta(s, fd, m, newest);
		else if (m[!newest].txnid > m[newest].txnid) /* LMDB would pick the damaged one */
			return kepler_error_set(
				err, -EUCLEAN,
				"the store '%s': meta page %d of data.mdb is damaged (%s); "
				"kepler-collectd restores it from the other at its next commit",
				s->path, !newest, m[!newest].why);
	}
	need = (m[newest].last_pg + 1) * m[newest].psize;
	if ((uint64_t)fs->st_size >= need)
		return 0;
	snprintf(what, sizeof(what), "data.mdb is %lld bytes but its pages reach %llu (truncated?)",
		 (long long)fs->st_size, (unsigned long long)need);
	return kepler_store_damaged(s, what, err);
}

int kepler_store_check_size(struct kepler_store *s, struct kepler_error *err)
{
	struct store_meta m[2];
	mdb_filehandle_t fd;
	struct stat fs;
	int newest;

	if (!s->env || mdb_env_get_fd(s->env, &fd) || fstat(fd, &fs) < 0)
		return 0; /* cannot tell: LMDB reports its own errors */
	return kepler_store_check_meta(s, fd, &fs, m, &newest, err);
}
