/* SPDX-License-Identifier: Apache-2.0 */
/*
 * readers/exporter/exposition.h: one snapshot's exposition text, rendered
 * once and shared by every scrape until the next snapshot (reference
 * counted, immutable once published), with its gzip form made on first
 * demand. The per-scrape tail (the snapshot's age) is appended to either
 * form without re-rendering or re-compressing the body: the gzip body ends
 * on a deflate sync flush, so the tail goes after it as a final stored
 * block, with the trailer's CRC combined from both parts.
 */
#ifndef KEPLER_EXPORTER_EXPOSITION_H
#define KEPLER_EXPORTER_EXPOSITION_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "kepler/buf.h"
#include "kepler/error.h"
#include "kepler/fmt.h"

struct kepler_exposition {
	int refs;         /* atomic */
	uint64_t seq;     /* 0: no snapshot (build info only) */
	uint64_t wall_ns; /* the snapshot's time, for its age */
	char node_name[256];
	struct kepler_buf text; /* the body without the tail */
	uint32_t crc;           /* CRC-32 of text, set with gz */
	pthread_mutex_t gz_lock;
	bool gz_done;
	struct kepler_buf gz; /* gzip header + deflate blocks, sync-flushed, not final */
};

/*
 * Render @snap (NULL: only build info) into a new exposition with one
 * reference. -ENOMEM.
 */
int kepler_exposition_new(const struct kepler_snapshot *snap, const struct kepler_prom_options *opts,
			  struct kepler_exposition **ret, struct kepler_error *err);
void kepler_exposition_ref(struct kepler_exposition *e);
/* Drop a reference; the last one frees. Accepts NULL. */
void kepler_exposition_unref(struct kepler_exposition *e);

/* Make the gzip form if not made yet (thread-safe; one compression). -ENOMEM, -EIO. */
int kepler_exposition_gzip(struct kepler_exposition *e);

/*
 * The end of a gzip response: @tail (plain text, < 64 KiB) as a final
 * stored deflate block, then the gzip trailer for body + tail.
 */
void kepler_exposition_gzip_tail(const struct kepler_exposition *e, const char *tail, size_t len,
				 struct kepler_buf *out);

#endif /* KEPLER_EXPORTER_EXPOSITION_H */
