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
 *
 * The layout is LMDB 0.9's on 64-bit hosts (mdb.c: struct MDB_page's
 * 16-byte header, then struct MDB_meta), checked by the tests against files
 * LMDB wrote.
 */
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
#define META_BYTES 160 /* the header and MDB_meta, rounded up */

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
	unsigned char p[META_BYTES];
	uint32_t psize;
	int newest = -1;

	memset(m, 0, 2 * sizeof(*m));
	if (pread(fd, p, sizeof(p), 0) != (ssize_t)sizeof(p)) {
		snprintf(m[0].why, sizeof(m[0].why), "cannot be read");
		snprintf(m[1].why, sizeof(m[1].why), "cannot be read");
		return -1;
	}
	parse(p, 0, &m[0]);
	/* page 1 is a page further on: the page size page 0 says, else the system's */
	psize = m[0].valid ? m[0].psize : (uint32_t)sysconf(_SC_PAGESIZE);
	if (pread(fd, p, sizeof(p), psize) == (ssize_t)sizeof(p))
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
