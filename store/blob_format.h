/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The snapshot blob on disk (formats 1.7 and 4.2), private to store/
 *
 *   1.x: header (40 bytes) | section table (nsections x 24 bytes) | sections...
 *   2.x: header (40 bytes) | packed_at (8 bytes) | section table | INFO |
 *        one zstd frame holding the rest of the sections
 *   3.x: as 2.x, the sections of fixed-width records in the frame stored as
 *        columns of differences (store/blob_pack.c)
 *   4.x: as 3.x, the columns' differences bit-packed in blocks of 64
 *        records (store/blob_blocks.c)
 *
 * A 2.x, 3.x or 4.x blob is a 1.x-shaped image (header_size 48) whose bytes from
 * packed_at on are stored as one zstd frame: the header, the section table
 * and the INFO record stay plain, so a peek needs no decompression, and the
 * decoder unpacks the frame into the image and reads it as it reads 1.x.
 * total_size is the image's size; the checksum covers the stored blob.
 * Minor versions are shared: 2.2, 1.5, 3.0 and 4.0 hold the same records;
 * 1.6 and 4.1 add the folds of short processes; 1.7 and 4.2 the pods'
 * controllers and labels.
 *
 * Every integer is little-endian; records are fixed-width with explicit
 * padding, each section 8-byte aligned. Strings live once each in the
 * STRINGS section, NUL-terminated, referenced by (offset, length); offset 0
 * is the empty string. A section's record_size lets a newer minor version
 * append fields: readers copy the fields they know and skip the rest, and
 * fill fields missing from an older minor with defaults. Unknown section ids
 * are ignored. See docs/store.md.
 */
#ifndef KEPLER_BLOB_FORMAT_H
#define KEPLER_BLOB_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kepler/error.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the store format is little-endian; big-endian hosts need byte swapping here"
#endif

#define BLOB_MAGIC "KEPLSNAP"
#define BLOB_MAX_SECTIONS 64

enum blob_section_id {
	SEC_INFO = 1,
	SEC_ZONES = 2,
	SEC_PROCESSES = 3,
	SEC_CONTAINERS = 4,
	SEC_VMS = 5,
	SEC_PODS = 6,
	SEC_ENERGY = 7,  /* nzones entries per workload: processes, containers, vms, pods */
	SEC_STRINGS = 8, /* record_size 1 */
	/*
	 * format 2.2 / 1.5: the workloads' idle energy under an idle policy
	 * (info.idle_policy not NONE), laid out as ENERGY; count 0 otherwise
	 */
	SEC_IDLE = 9,
	/*
	 * format 4.1 / 1.6: the folds of short processes (struct blob_fold),
	 * their zone energies (nzones entries per fold) and, under an idle
	 * policy, their idle energies (laid out as FOLD_ENERGY; count 0 otherwise)
	 */
	SEC_FOLDS = 10,
	SEC_FOLD_ENERGY = 11,
	SEC_FOLD_IDLE = 12,
	SEC_MAX = 13,
};

struct blob_header {
	char magic[8];
	uint16_t major;
	uint16_t minor;
	uint32_t header_size; /* offset of the section table */
	uint32_t nsections;
	uint32_t section_size; /* size of one section table entry */
	uint64_t total_size;   /* of the whole blob */
	uint64_t checksum;     /* XXH3-64 of the blob with this field zeroed */
};

/* formats 2.x to 4.x: follows the header (header_size 48) */
struct blob_pack {
	uint64_t packed_at; /* offset of the zstd frame in the stored blob, and of its content in the image */
};

#define BLOB_PACKED_MAJOR 2     /* from this major on, blobs are packed */
#define BLOB_COLUMNS_MAJOR 3    /* from this major on, packed records are stored as columns */
#define BLOB_BLOCKS_MAJOR 4     /* from this major on, the columns are bit-packed blocks (blob_blocks.c) */
#define BLOB_BLOCK_ROWS 64      /* records in a block of 4.x columns */
#define BLOB_BLOCK_MAX_WORDS 64 /* 4.x: wider records (more than 512 bytes) are stored as they are */
#define BLOB_PACKED_HEADER_SIZE (sizeof(struct blob_header) + sizeof(struct blob_pack))
/*
 * The largest image a packed blob may claim: a bound for a hostile one
 * (3.x columns let a few hundred bytes describe millions of identical
 * records), above any real snapshot: pid_max's ceiling of 4,194,304
 * processes at ~180 bytes each is 0.75 GiB.
 */
#define BLOB_MAX_IMAGE (1ULL << 30)

struct blob_section {
	uint32_t id;
	uint32_t record_size;
	uint64_t offset;
	uint64_t count;
};

struct blob_str {
	uint32_t off;
	uint32_t len;
};

struct blob_info {
	uint64_t seq;
	uint64_t wall_ns;
	uint64_t mono_ns;
	uint64_t interval_ns;
	uint32_t flags;
	uint32_t nzones;
	double cpu_usage_ratio;
	uint64_t node_cpu_busy_delta_ns;
	uint64_t node_cpu_total_delta_ns;
	uint32_t skipped_entries;
	uint32_t lost_entries;
	/* format 1.1 */
	uint32_t cpu_count;
	/* format 1.3 (a padding field before, 0) */
	uint32_t unstored_intervals;
	uint64_t unstored_ns;
	uint64_t collector_cpu_ns;
	uint64_t collector_rss_bytes;
	/* format 2.2 / 1.5 */
	uint32_t idle_policy;
	uint32_t pad2;
};

struct blob_energy {
	uint64_t total_uj;
	uint64_t delta_uj;
};

struct blob_zone {
	struct blob_str name;
	struct blob_str path;
	uint32_t source;
	uint32_t pad;
	struct blob_energy energy, active, idle;
	/* format 1.2 */
	uint64_t baseline_uw;
	uint32_t baseline_method;
	uint32_t baseline_quality_ppm;
	uint32_t baseline_samples;
	uint32_t pad2;
	uint64_t meter_resets, meter_wraps;
	/* format 2.1 / 1.4 */
	struct blob_energy unattributed;
	struct blob_str device_uuid, device_name, device_vendor;
	uint32_t device_index;
	uint32_t pad3;
};

struct blob_usage {
	uint32_t state;
	uint32_t pad;
	uint64_t cpu_time_ns;
	uint64_t cpu_time_delta_ns;
};

struct blob_process {
	uint32_t pid;
	uint32_t type;
	uint64_t start_time_ns;
	struct blob_str comm, exe, container_id, vm_id;
	uint64_t cycles, instructions, cache_misses;
	struct blob_usage usage;
	/* format 4.1 / 1.6 */
	uint32_t flags;
	uint32_t pad;
};

struct blob_fold {
	struct blob_str container_id, vm_id;
	uint64_t processes, processes_delta;
	struct blob_usage usage;
};

struct blob_container {
	struct blob_str id, name, runtime, pod_id;
	struct blob_usage usage;
	/* format 2.2 / 1.5 */
	uint64_t size_shares;
};

/* vms and pods share this shape: id, name, and hypervisor or namespace */
struct blob_named {
	struct blob_str id, name, extra;
	uint32_t pad[2];
	struct blob_usage usage;
};

/* a pod's record: the named shape, then (format 4.2 / 1.7) its controller and labels */
struct blob_pod {
	struct blob_named named;
	struct blob_str owner_kind, owner_name, labels;
};

_Static_assert(sizeof(struct blob_header) == 40, "blob header layout");
_Static_assert(sizeof(struct blob_section) == 24, "section entry layout");
_Static_assert(sizeof(struct blob_info) == 112, "info record layout (format 2.2 / 1.5)");
_Static_assert(offsetof(struct blob_info, idle_policy) == 104, "info record of format 1.3");
_Static_assert(offsetof(struct blob_info, cpu_count) == 72, "info record of format 1.0");
_Static_assert(offsetof(struct blob_zone, baseline_uw) == 72, "zone record layout (format 1.0)");
_Static_assert(offsetof(struct blob_zone, unattributed) == 112, "zone record layout (format 1.2)");
_Static_assert(sizeof(struct blob_zone) == 160, "zone record layout (format 2.1 / 1.4)");
_Static_assert(sizeof(struct blob_process) == 104, "process record layout (format 4.1 / 1.6)");
_Static_assert(offsetof(struct blob_process, flags) == 96, "process record of format 1.0");
_Static_assert(sizeof(struct blob_fold) == 56, "fold record layout");
_Static_assert(sizeof(struct blob_container) == 64, "container record layout (format 2.2 / 1.5)");
_Static_assert(offsetof(struct blob_container, size_shares) == 56, "container record of format 1.0");
_Static_assert(sizeof(struct blob_named) == 56, "vm/pod record layout");
_Static_assert(sizeof(struct blob_pod) == 80, "pod record layout (format 4.2 / 1.7)");

/* An 8-byte word at any alignment (blobs are little-endian, as the build requires). */
static inline uint64_t blob_load64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static inline void blob_store64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

/* XXH3-64 of @blob (at least a header long) as if its checksum were 0. */
uint64_t kepler_blob_checksum(const void *blob, size_t len);

/*
 * store/blob_pack.c. Pack a 2.x, 3.x or 4.x image (header_size 48, packed_at
 * set; its header's major says whether records go as columns, and which) of @len
 * bytes at @level (zstd's, KEPLER_PACK_STORED or KEPLER_PACK_AUTO): the
 * stored blob in *ret (malloc), checksum set. 0, -ENOMEM, or -EINVAL (a
 * bad section table, zstd refused).
 */
int kepler_blob_pack(const uint8_t *image, size_t len, int level, void **ret, size_t *ret_len);
/*
 * The same for an image held in two parts: @len bytes at @image, then
 * @tail_len at @tail (the encoder's string table, where it was built).
 * Sections stored as columns must lie in the first part.
 */
int kepler_blob_pack_tail(const uint8_t *image, size_t len, const uint8_t *tail, size_t tail_len, int level,
			  void **ret, size_t *ret_len);

/*
 * store/blob_blocks.c. A section of @n (>= 2) records of @w (<= 64) words
 * at @rows as 4.x blocks at @out, which has room for n * w * 9 bytes;
 * returns the end.
 */
uint8_t *kepler_blob_rows_to_blocks(uint8_t *out, const uint8_t *rows, uint64_t n, size_t w);
/*
 * The inverse, from @in (@left bytes, readable 8 bytes past them) into
 * @rows (n * w * 8 bytes): the end of the blocks read, or NULL if they
 * claim more bytes than there are, or a width over 64 bits (or over 32 in
 * a half), or @w is over 64.
 */
const uint8_t *kepler_blob_blocks_to_rows(uint8_t *rows, const uint8_t *in, uint64_t left, uint64_t n,
					  size_t w);

/*
 * Unpack a stored 2.x, 3.x or 4.x blob whose header @h has been checked (magic, major
 * 2, checksum): the image in *ret (malloc, h->total_size bytes). 0, -EPROTO
 * with what is wrong, or -ENOMEM.
 */
int kepler_blob_unpack(const uint8_t *blob, size_t len, const struct blob_header *h, uint8_t **ret,
		       struct kepler_error *err);

#endif /* KEPLER_BLOB_FORMAT_H */
