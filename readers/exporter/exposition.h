/* SPDX-License-Identifier: Apache-2.0 */
/*
 * readers/exporter/exposition.h: one snapshot's exposition text, rendered
 * once and shared by every scrape until the next snapshot (reference
 * counted, immutable once published), with its gzip form made on first
 * demand, by libdeflate. The per-scrape head (the snapshot's age, the
 * exporter's own process figures) goes before the body in either form,
 * without re-rendering or re-compressing the body: in a gzip response it
 * is a stored deflate block, not final, that the body's compressed blocks
 * follow (a deflate stream may change block kinds at any byte-aligned
 * block boundary), and the trailer's CRC is combined from both parts.
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
	struct kepler_buf gz; /* text's raw deflate blocks, the last one final */
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
 * A gzip response is head + e->gz + trailer. The head: the gzip header,
 * then @head (plain text, any length) in stored deflate blocks, not final.
 */
void kepler_exposition_gzip_head(const char *head, size_t len, struct kepler_buf *out);
/* The trailer: CRC-32 and length of @head followed by e's text. */
void kepler_exposition_gzip_trailer(const struct kepler_exposition *e, const char *head, size_t len,
				    struct kepler_buf *out);

#endif /* KEPLER_EXPORTER_EXPOSITION_H */
