/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the store's files; LMDB appears nowhere outside store/. */
#ifndef KEPLER_STORE_INTERNAL_H
#define KEPLER_STORE_INTERNAL_H

#include <lmdb.h>

#include "kepler/store.h"

struct kepler_store {
	MDB_env *env;
	MDB_dbi snapshots, series, meta;
	bool writer;
	bool have_dbs;      /* reader: the writer has created the databases */
	char *path;
	struct kepler_store_options opts;
	uint64_t map_size;
	uint64_t last_seq;  /* writer */
	unsigned commits;   /* writer: for periodic stale-reader checks */
	int inotify_fd;     /* reader: lazily created by kepler_store_wait() */
	char warning[256];
};

/* Translate an LMDB return code into -errno with a message naming @what. */
int kepler_store_lmdb_error(int rc, const char *what, struct kepler_error *err);

/* Begin a read transaction, following a map the writer has grown. */
int kepler_store_begin_read(struct kepler_store *s, MDB_txn **ret, struct kepler_error *err);

/* Big-endian u64 keys sort numerically in LMDB's default byte order. */
void kepler_store_put_key(uint64_t seq, unsigned char key[8]);
uint64_t kepler_store_get_key(const MDB_val *key);

/* Open the three databases inside @txn (creating them if @create). */
int kepler_store_open_dbs(struct kepler_store *s, MDB_txn *txn, bool create,
			  struct kepler_error *err);

/* Meta values are text (readable with mdb_dump): get/put one key. */
int kepler_store_meta_get_u64(struct kepler_store *s, MDB_txn *txn, const char *key,
			      uint64_t *ret);
int kepler_store_meta_put(struct kepler_store *s, MDB_txn *txn, const char *key,
			  const char *value);

#define KEPLER_SERIES_MAGIC 0x4b534552u /* "KSER" */
#define KEPLER_SERIES_VERSION 1

#endif
