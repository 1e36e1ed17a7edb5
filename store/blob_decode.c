// SPDX-License-Identifier: Apache-2.0
/*
 * Blob -> snapshot, validating everything: the header, every section's
 * bounds, every count, every string reference. A corrupt blob is an error
 * with a message, never a crash (fuzzed by tests/fuzz_decode.c).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "blob_format.h"
#include "kepler/snapshot.h"

struct decoder {
	const uint8_t *blob; /* the snapshot's own copy */
	size_t len;
	size_t present; /* bytes of @blob there to read: @len, or a packed blob's plain part (peek) */
	bool image;     /* @blob is a packed blob unpacked: its checksum was checked before */
	struct blob_section sec[SEC_MAX]; /* by id; count 0 when absent */
	const char *strings;
	size_t strings_len;
	bool skip_checksum;                    /* peek: header fields only, blob not copied */
	struct kepler_energy *energies, *idle; /* the workloads' zone energies: in the image, or pools */
	struct kepler_error *err;
};

#define CORRUPT(d, ...) kepler_error_set((d)->err, -EPROTO, "corrupt snapshot: " __VA_ARGS__)

/* The smallest record of each section a reader accepts: its format 1.0 size. */
static const uint32_t base_size[SEC_MAX] = {
	[SEC_INFO] = offsetof(struct blob_info, cpu_count),
	[SEC_ZONES] = offsetof(struct blob_zone, baseline_uw),
	[SEC_PROCESSES] = offsetof(struct blob_process, flags),
	[SEC_CONTAINERS] = sizeof(struct blob_container),
	[SEC_VMS] = sizeof(struct blob_named),
	[SEC_PODS] = sizeof(struct blob_named),
	[SEC_ENERGY] = sizeof(struct blob_energy),
	[SEC_STRINGS] = 1,
	[SEC_IDLE] = sizeof(struct blob_energy),
	[SEC_FOLDS] = sizeof(struct blob_fold),
	[SEC_FOLD_ENERGY] = sizeof(struct blob_energy),
	[SEC_FOLD_IDLE] = sizeof(struct blob_energy),
};

static int check_table(struct decoder *d, const struct blob_header *h);

/* 0: a 1.x blob or a packed blob's image, whole; 1: a stored 2.x to 4.x blob (checksum checked unless peeking) */
static int check_header(struct decoder *d, struct blob_header *h)
{
	if (d->len < sizeof(*h))
		return CORRUPT(d, "%zu bytes is shorter than the %zu-byte header", d->len, sizeof(*h));
	memcpy(h, d->blob, sizeof(*h));
	if (memcmp(h->magic, BLOB_MAGIC, 8) != 0)
		return CORRUPT(d, "bad magic (not a kepler-c snapshot)");
	if (h->major > KEPLER_FORMAT_MAJOR)
		return kepler_error_set(d->err, -EPROTONOSUPPORT,
					"snapshot format %u.%u is newer than this reader's %d.%d; "
					"upgrade kepler-c to read it",
					h->major, h->minor, KEPLER_FORMAT_MAJOR, KEPLER_FORMAT_MINOR);
	if (h->major < 1)
		return CORRUPT(d, "format major version 0");
	if (h->major >= BLOB_PACKED_MAJOR && !d->image) {
		/* stored packed: the checksum covers what is stored; the caller unpacks (or peeks) */
		if (!d->skip_checksum && h->checksum != kepler_blob_checksum(d->blob, d->len))
			return CORRUPT(d, "checksum mismatch (damaged data)");
		return 1;
	}
	if (h->total_size != d->len)
		return CORRUPT(d, "size is %zu bytes but the header says %llu (truncated?)", d->len,
			       (unsigned long long)h->total_size);
	if (!d->skip_checksum && !d->image && h->checksum != kepler_blob_checksum(d->blob, d->len))
		return CORRUPT(d, "checksum mismatch (damaged data)");
	return check_table(d, h);
}

static int check_table(struct decoder *d, const struct blob_header *h)
{
	if (h->header_size < sizeof(*h) || h->section_size < sizeof(struct blob_section) ||
	    h->nsections > BLOB_MAX_SECTIONS)
		return CORRUPT(d, "bad header sizes");
	if ((uint64_t)h->header_size + (uint64_t)h->nsections * h->section_size > d->present)
		return CORRUPT(d, "section table runs past the end");
	return 0;
}

static int read_sections(struct decoder *d, const struct blob_header *h)
{
	for (uint32_t i = 0; i < h->nsections; i++) {
		struct blob_section s;
		uint64_t bytes;

		memcpy(&s, d->blob + h->header_size + (size_t)i * h->section_size, sizeof(s));
		if (s.id == 0 || s.id >= SEC_MAX)
			continue; /* a section from a newer minor version */
		if (d->sec[s.id].id)
			return CORRUPT(d, "section %u appears twice", s.id);
		if (s.record_size < base_size[s.id] || (s.id == SEC_STRINGS && s.record_size != 1))
			return CORRUPT(d, "section %u records are %u bytes, need %u", s.id, s.record_size,
				       base_size[s.id]);
		if (__builtin_mul_overflow(s.count, (uint64_t)s.record_size, &bytes) || s.offset > d->len ||
		    bytes > d->len - s.offset)
			return CORRUPT(d, "section %u (%llu x %u bytes at %llu) runs past the end", s.id,
				       (unsigned long long)s.count, s.record_size,
				       (unsigned long long)s.offset);
		d->sec[s.id] = s;
	}
	if (!d->sec[SEC_INFO].id || d->sec[SEC_INFO].count != 1)
		return CORRUPT(d, "no info record");
	if (d->sec[SEC_INFO].offset + d->sec[SEC_INFO].record_size > d->present)
		return CORRUPT(d, "the info record is not in the plain part");
	if (!d->sec[SEC_STRINGS].id || d->sec[SEC_STRINGS].count == 0)
		return CORRUPT(d, "no string table");
	if (d->present < d->len)
		return 0; /* a peek at a packed blob: the rest is compressed */
	d->strings = (const char *)d->blob + d->sec[SEC_STRINGS].offset;
	d->strings_len = d->sec[SEC_STRINGS].count;
	if (d->strings[d->strings_len - 1] != '\0')
		return CORRUPT(d, "string table is not terminated");
	return 0;
}

/*
 * Copy record @i of section @id into @out (zero-filling fields it lacks).
 * Inlined with a constant @size: records of this version's size are one
 * fixed-size copy.
 */
static inline void get_record(const struct decoder *d, uint32_t id, size_t i, void *out, size_t size)
{
	const struct blob_section *s = &d->sec[id];
	const uint8_t *from = d->blob + s->offset + i * s->record_size;

	if (s->record_size >= size) {
		memcpy(out, from, size);
		return;
	}
	memset(out, 0, size);
	memcpy(out, from, s->record_size);
}

/*
 * A string: in the table and NUL-terminated where its length says. A NUL
 * inside it (never written by the encoder) would end it early for readers,
 * which is harmless, so it is not searched for.
 */
static inline int get_str(const struct decoder *d, struct blob_str ref, const char **ret)
{
	if ((uint64_t)ref.off + ref.len >= d->strings_len || d->strings[ref.off + ref.len] != '\0')
		return kepler_error_set(d->err, -EPROTO,
					"corrupt snapshot: string at %u+%u is out of bounds or "
					"unterminated",
					ref.off, ref.len);
	*ret = d->strings + ref.off;
	return 0;
}

#define STR(ref, dst)                               \
	do {                                        \
		int r_ = get_str(d, (ref), &(dst)); \
		if (r_ < 0)                         \
			return r_;                  \
	} while (0)

static void take_info(const struct decoder *d, struct kepler_snapshot *s, struct blob_info *ret)
{
	struct blob_info in;

	get_record(d, SEC_INFO, 0, &in, sizeof(in));
	s->seq = in.seq;
	s->wall_ns = in.wall_ns;
	s->mono_ns = in.mono_ns;
	s->interval_ns = in.interval_ns;
	s->flags = in.flags;
	s->cpu_usage_ratio = in.cpu_usage_ratio;
	s->node_cpu_busy_delta_ns = in.node_cpu_busy_delta_ns;
	s->node_cpu_total_delta_ns = in.node_cpu_total_delta_ns;
	s->skipped_entries = in.skipped_entries;
	s->lost_entries = in.lost_entries;
	s->cpu_count = in.cpu_count;                   /* 0 from format 1.0 */
	s->unstored_intervals = in.unstored_intervals; /* 0 before format 1.3 */
	s->unstored_ns = in.unstored_ns;
	s->collector_cpu_ns = in.collector_cpu_ns;
	s->collector_rss_bytes = in.collector_rss_bytes;
	/* NONE before format 2.2; a policy of a newer minor: its idle section is not understood */
	s->idle_policy = in.idle_policy < KEPLER_IDLE_POLICY_COUNT ? in.idle_policy : KEPLER_IDLE_NONE;
	s->nprocesses = d->sec[SEC_PROCESSES].count;
	s->ncontainers = d->sec[SEC_CONTAINERS].count;
	s->nvms = d->sec[SEC_VMS].count;
	s->npods = d->sec[SEC_PODS].count;
	*ret = in;
}

static int take_zones(const struct decoder *d, struct kepler_snapshot *s)
{
	for (size_t i = 0; i < s->nzones; i++) {
		struct kepler_zone *z = &s->zones[i];
		struct blob_zone b;

		get_record(d, SEC_ZONES, i, &b, sizeof(b));
		STR(b.name, z->name);
		STR(b.path, z->path);
		z->source = b.source < KEPLER_SOURCE_COUNT ? b.source : KEPLER_SOURCE_UNKNOWN;
		z->energy = (struct kepler_energy){ b.energy.total_uj, b.energy.delta_uj };
		z->active = (struct kepler_energy){ b.active.total_uj, b.active.delta_uj };
		z->idle = (struct kepler_energy){ b.idle.total_uj, b.idle.delta_uj };
		z->baseline = (struct kepler_baseline){
			.idle_uw = b.baseline_uw,
			.method = b.baseline_method < KEPLER_BASELINE_METHOD_COUNT ? b.baseline_method : 0,
			.quality_ppm = b.baseline_quality_ppm <= 1000000 ? b.baseline_quality_ppm : 0,
			.samples = b.baseline_samples,
		};
		z->meter_resets = b.meter_resets;
		z->meter_wraps = b.meter_wraps;
		z->unattributed = (struct kepler_energy){ b.unattributed.total_uj, b.unattributed.delta_uj };
		STR(b.device_uuid, z->device.uuid);
		STR(b.device_name, z->device.name);
		STR(b.device_vendor, z->device.vendor);
		z->device.index = b.device_index;
	}
	return 0;
}

static bool in_place(const struct decoder *d, uint32_t id);

_Static_assert(sizeof(struct kepler_energy) == sizeof(struct blob_energy) &&
		       offsetof(struct kepler_energy, delta_uj) == offsetof(struct blob_energy, delta_uj),
	       "a zone energy in memory is its record");

/*
 * Where the zone energies of section @id are read from: records of this
 * version's size are used in place, in the image the snapshot owns
 * (8-byte aligned: sections are, and the image is malloc'd); records of a
 * newer minor are copied into @pool.
 */
static struct kepler_energy *energies(const struct decoder *d, uint32_t id, struct kepler_energy *pool)
{
	const struct blob_section *sec = &d->sec[id];

	if (!in_place(d, id))
		for (size_t i = 0; i < sec->count; i++) {
			struct blob_energy e;

			get_record(d, id, i, &e, sizeof(e));
			pool[i] = (struct kepler_energy){ e.total_uj, e.delta_uj };
		}
	else
		pool = (struct kepler_energy *)(void *)(d->blob + sec->offset);
	return pool;
}

/* Workload @w's usage; its zone energies are entries w*nzones.. of ENERGY (and IDLE). */
static void take_usage(const struct decoder *d, const struct kepler_snapshot *s, size_t w,
		       const struct blob_usage *b, struct kepler_usage *u)
{
	u->state = b->state < KEPLER_STATE_COUNT ? b->state : KEPLER_STATE_RUNNING;
	u->cpu_time_ns = b->cpu_time_ns;
	u->cpu_time_delta_ns = b->cpu_time_delta_ns;
	u->zones = d->energies + w * s->nzones;
	u->idle = d->idle ? d->idle + w * s->nzones : NULL;
}

static int take_processes(const struct decoder *d, struct kepler_snapshot *s)
{
	for (size_t i = 0; i < s->nprocesses; i++) {
		struct kepler_process *p = &s->processes[i];
		struct blob_process b;

		get_record(d, SEC_PROCESSES, i, &b, sizeof(b));
		p->pid = b.pid;
		p->type = b.type < KEPLER_PROC_TYPE_COUNT ? b.type : KEPLER_PROC_REGULAR;
		p->start_time_ns = b.start_time_ns;
		STR(b.comm, p->comm);
		STR(b.exe, p->exe);
		STR(b.container_id, p->container_id);
		STR(b.vm_id, p->vm_id);
		p->cycles = b.cycles;
		p->instructions = b.instructions;
		p->cache_misses = b.cache_misses;
		p->flags = b.flags; /* 0 before format 4.1 */
		take_usage(d, s, i, &b.usage, &p->usage);
	}
	return 0;
}

static int take_containers(const struct decoder *d, struct kepler_snapshot *s)
{
	size_t w = s->nprocesses;

	for (size_t i = 0; i < s->ncontainers; i++, w++) {
		struct kepler_container *c = &s->containers[i];
		struct blob_container b;

		get_record(d, SEC_CONTAINERS, i, &b, sizeof(b));
		STR(b.id, c->id);
		STR(b.name, c->name);
		STR(b.runtime, c->runtime);
		STR(b.pod_id, c->pod_id);
		c->size_shares = b.size_shares; /* 0 before format 2.2 */
		take_usage(d, s, w, &b.usage, &c->usage);
	}
	return 0;
}

static int take_vms_and_pods(const struct decoder *d, struct kepler_snapshot *s)
{
	size_t w = s->nprocesses + s->ncontainers;
	struct blob_named b;
	struct blob_pod pb;

	for (size_t i = 0; i < s->nvms; i++, w++) {
		get_record(d, SEC_VMS, i, &b, sizeof(b));
		STR(b.id, s->vms[i].id);
		STR(b.name, s->vms[i].name);
		STR(b.extra, s->vms[i].hypervisor);
		take_usage(d, s, w, &b.usage, &s->vms[i].usage);
	}
	for (size_t i = 0; i < s->npods; i++, w++) {
		get_record(d, SEC_PODS, i, &pb, sizeof(pb)); /* owner and labels "" before format 4.2 / 1.7 */
		STR(pb.named.id, s->pods[i].id);
		STR(pb.named.name, s->pods[i].name);
		STR(pb.named.extra, s->pods[i].ns);
		STR(pb.owner_kind, s->pods[i].owner_kind);
		STR(pb.owner_name, s->pods[i].owner_name);
		STR(pb.labels, s->pods[i].labels);
		take_usage(d, s, w, &pb.named.usage, &s->pods[i].usage);
	}
	return 0;
}

/*
 * The folds (format 4.1 / 1.6; none before): their energies are copied
 * into the pool allocate() made, active then idle, nzones per fold.
 */
static int take_folds(const struct decoder *d, struct kepler_snapshot *s)
{
	size_t nz = s->nzones, n = s->nfolds;

	for (size_t i = 0; i < n; i++) {
		struct kepler_fold *f = &s->folds[i];
		struct kepler_energy *act = s->fold_pool + i * nz, *idle = s->fold_pool + (n + i) * nz;
		struct blob_fold b;

		get_record(d, SEC_FOLDS, i, &b, sizeof(b));
		STR(b.container_id, f->container_id);
		STR(b.vm_id, f->vm_id);
		f->processes = b.processes;
		f->processes_delta = b.processes_delta;
		f->usage = (struct kepler_usage){
			.state = b.usage.state < KEPLER_STATE_COUNT ? b.usage.state : KEPLER_STATE_RUNNING,
			.cpu_time_ns = b.usage.cpu_time_ns,
			.cpu_time_delta_ns = b.usage.cpu_time_delta_ns,
			.zones = act,
			.idle = s->idle_policy ? idle : NULL,
		};
		for (size_t z = 0; z < nz; z++) {
			struct blob_energy e;

			get_record(d, SEC_FOLD_ENERGY, i * nz + z, &e, sizeof(e));
			act[z] = (struct kepler_energy){ e.total_uj, e.delta_uj };
			if (!s->idle_policy)
				continue;
			get_record(d, SEC_FOLD_IDLE, i * nz + z, &e, sizeof(e));
			idle[z] = (struct kepler_energy){ e.total_uj, e.delta_uj };
		}
	}
	return 0;
}

/* The folds' arrays, their energies counted as the workloads' are. */
static int allocate_folds(struct decoder *d, struct kepler_snapshot *s)
{
	uint64_t n = d->sec[SEC_FOLDS].count;

	if (d->sec[SEC_FOLD_ENERGY].count != n * s->nzones)
		return CORRUPT(d, "%llu zone energies for %llu folds x %zu zones",
			       (unsigned long long)d->sec[SEC_FOLD_ENERGY].count, (unsigned long long)n,
			       s->nzones);
	if (s->idle_policy && d->sec[SEC_FOLD_IDLE].count != n * s->nzones)
		return CORRUPT(d, "idle policy %s but %llu idle energies for %llu folds x %zu zones",
			       kepler_idle_policy_name(s->idle_policy),
			       (unsigned long long)d->sec[SEC_FOLD_IDLE].count, (unsigned long long)n,
			       s->nzones);
	s->nfolds = n;
	s->folds = malloc((n + 1) * sizeof(*s->folds));
	s->fold_pool = malloc((2 * n * s->nzones + 1) * sizeof(*s->fold_pool));
	if (!s->folds || !s->fold_pool)
		return kepler_error_set(d->err, -ENOMEM, "out of memory decoding a snapshot");
	return 0;
}

/* A section of zone energies read in place, or a pool allocated for copies of a newer minor's records. */
static bool in_place(const struct decoder *d, uint32_t id)
{
	return d->sec[id].record_size == sizeof(struct blob_energy) && d->sec[id].offset % 8 == 0;
}

/* Allocate the workload arrays; every count is bounded by the blob's size. */
static int allocate(struct decoder *d, struct kepler_snapshot *s)
{
	uint64_t nwork = (uint64_t)s->nprocesses + s->ncontainers + s->nvms + s->npods;

	if (d->sec[SEC_ENERGY].count != nwork * s->nzones)
		return CORRUPT(d, "%llu zone energies for %llu workloads x %zu zones",
			       (unsigned long long)d->sec[SEC_ENERGY].count, (unsigned long long)nwork,
			       s->nzones);
	if (s->idle_policy && d->sec[SEC_IDLE].count != nwork * s->nzones)
		return CORRUPT(d, "idle policy %s but %llu idle energies for %llu workloads x %zu zones",
			       kepler_idle_policy_name(s->idle_policy),
			       (unsigned long long)d->sec[SEC_IDLE].count, (unsigned long long)nwork,
			       s->nzones);
	if (s->idle_policy && !in_place(d, SEC_IDLE)) {
		s->idle_pool = calloc(nwork * s->nzones + 1, sizeof(*s->idle_pool));
		if (!s->idle_pool)
			return kepler_error_set(d->err, -ENOMEM, "out of memory decoding a snapshot");
	}
	if (!in_place(d, SEC_ENERGY)) {
		s->energy_pool = calloc(nwork * s->nzones + 1, sizeof(*s->energy_pool));
		if (!s->energy_pool)
			return kepler_error_set(d->err, -ENOMEM, "out of memory decoding a snapshot");
	}
	/* not zeroed (a 10,000-process array is 1.3 MB to clear): take_*() set every field */
	s->processes = malloc((s->nprocesses + 1) * sizeof(*s->processes));
	s->containers = malloc((s->ncontainers + 1) * sizeof(*s->containers));
	s->vms = malloc((s->nvms + 1) * sizeof(*s->vms));
	s->pods = malloc((s->npods + 1) * sizeof(*s->pods));
	if (!s->processes || !s->containers || !s->vms || !s->pods)
		return kepler_error_set(d->err, -ENOMEM, "out of memory decoding a snapshot");
	d->energies = energies(d, SEC_ENERGY, s->energy_pool);
	d->idle = s->idle_policy ? energies(d, SEC_IDLE, s->idle_pool) : NULL;
	return allocate_folds(d, s);
}

static int decode_into(struct decoder *d, struct kepler_snapshot *s)
{
	struct blob_header h;
	struct blob_info info;
	int r;

	r = check_header(d, &h);
	if (r > 0)
		return CORRUPT(d, "a packed blob inside a packed blob");
	if (!r)
		r = read_sections(d, &h);
	if (r < 0)
		return r;
	take_info(d, s, &info);
	if (info.nzones > KEPLER_MAX_ZONES || info.nzones != d->sec[SEC_ZONES].count)
		return CORRUPT(d, "%u zones in the header, %llu zone records (max %d)", info.nzones,
			       (unsigned long long)d->sec[SEC_ZONES].count, KEPLER_MAX_ZONES);
	s->nzones = info.nzones;
	r = allocate(d, s);
	if (!r)
		r = take_zones(d, s);
	if (!r)
		r = take_processes(d, s);
	if (!r)
		r = take_containers(d, s);
	if (!r)
		r = take_vms_and_pods(d, s);
	if (!r)
		r = take_folds(d, s);
	return r;
}

/* A stored 2.x to 4.x blob: unpack it into the buffer @s owns and decode that image. */
static int decode_packed(struct decoder *d, const struct blob_header *h, struct kepler_snapshot *s)
{
	uint8_t *image;
	int r = kepler_blob_unpack(d->blob, d->len, h, &image, d->err);

	if (r < 0)
		return r;
	s->blob = image;
	*d = (struct decoder){
		.blob = image, .len = h->total_size, .present = h->total_size, .image = true, .err = d->err
	};
	return decode_into(d, s);
}

int kepler_snapshot_decode(const void *blob, size_t len, struct kepler_snapshot **ret_snap,
			   struct kepler_error *err)
{
	struct decoder d = { .blob = blob, .len = len, .present = len, .err = err };
	struct kepler_snapshot *s = calloc(1, sizeof(*s));
	struct blob_header h = { 0 };
	int r;

	if (!s)
		return kepler_error_set(err, -ENOMEM, "out of memory decoding a snapshot");
	r = check_header(&d, &h);
	if (r > 0) {
		r = decode_packed(&d, &h, s);
	} else if (r == 0) {
		s->blob = malloc(len ? len : 1); /* the snapshot's strings point into its own copy */
		if (!s->blob)
			r = kepler_error_set(err, -ENOMEM, "out of memory decoding a snapshot");
		else {
			memcpy(s->blob, blob, len);
			d.blob = s->blob;
			r = decode_into(&d, s);
		}
	}
	if (r < 0) {
		kepler_snapshot_free(s);
		return r;
	}
	*ret_snap = s;
	return 0;
}

int kepler_snapshot_peek(const void *blob, size_t len, struct kepler_snapshot *ret_header,
			 struct kepler_error *err)
{
	struct decoder d = { .blob = blob, .len = len, .present = len, .skip_checksum = true, .err = err };
	struct kepler_snapshot s = { 0 };
	struct blob_header h = { 0 };
	struct blob_pack p;
	struct blob_info info;
	int r;

	r = check_header(&d, &h);
	if (r > 0) { /* packed: bounds are the image's; only the plain part is read */
		if (h.header_size < BLOB_PACKED_HEADER_SIZE || len < BLOB_PACKED_HEADER_SIZE)
			return CORRUPT(&d, "a packed header of %u bytes", h.header_size);
		memcpy(&p, d.blob + sizeof(h), sizeof(p));
		if (p.packed_at > len || h.total_size > BLOB_MAX_IMAGE || p.packed_at > h.total_size)
			return CORRUPT(&d, "packed at %llu of %zu stored bytes",
				       (unsigned long long)p.packed_at, len);
		d.len = h.total_size;
		d.present = p.packed_at;
		r = check_table(&d, &h);
	}
	if (!r)
		r = read_sections(&d, &h);
	if (r < 0)
		return r;
	take_info(&d, &s, &info);
	s.nzones = info.nzones <= KEPLER_MAX_ZONES ? info.nzones : 0;
	*ret_header = s;
	return 0;
}

void kepler_snapshot_free(struct kepler_snapshot *snap)
{
	if (!snap)
		return;
	free(snap->processes);
	free(snap->containers);
	free(snap->vms);
	free(snap->pods);
	free(snap->folds);
	free(snap->fold_pool);
	free(snap->energy_pool);
	free(snap->idle_pool);
	free(snap->blob);
	free(snap);
}
