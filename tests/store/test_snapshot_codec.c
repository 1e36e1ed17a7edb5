// SPDX-License-Identifier: Apache-2.0
/* The blob codec: round trips, hostile strings, corrupt and newer blobs. */
#include <errno.h>
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <zstd.h>

#include "kepler_test.h"

#include "blob_format.h"
#include "snapshot_fixture.h"

/* Recompute the checksum of a blob the test has edited on purpose. */
static void reseal(uint8_t *blob, size_t len)
{
	uint64_t sum = kepler_blob_checksum(blob, len);

	memcpy(blob + offsetof(struct blob_header, checksum), &sum, sizeof(sum));
}

static void round_trip(size_t nprocs)
{
	struct fixture f;
	struct kepler_snapshot *out = NULL;
	struct kepler_error err;
	void *blob;
	size_t len;
	const char *diff;

	fixture_build(&f, nprocs, 42);
	fixture_add_folds(&f);
	f.snap.seq = 77;
	KEPLER_OK(kepler_snapshot_encode(&f.snap, &blob, &len, &err));
	KEPLER_OK(kepler_snapshot_decode(blob, len, &out, &err));
	diff = snapshot_diff(&f.snap, out);
	if (diff)
		fail_msg("%zu processes: decoded snapshot differs in %s", nprocs, diff);
	kepler_snapshot_free(out);
	free(blob);
	fixture_free(&f);
}

static void test_round_trip_sizes(void **state)
{
	(void)state;
	round_trip(0);
	round_trip(1);
	round_trip(1000);
	round_trip(100000);
}

static void test_hostile_strings_survive(void **state)
{
	struct fixture f;
	struct kepler_snapshot *out;
	void *blob;
	size_t len;

	(void)state;
	fixture_build(&f, 12, 1);
	assert_int_equal(kepler_snapshot_encode(&f.snap, &blob, &len, NULL), 0);
	assert_int_equal(kepler_snapshot_decode(blob, len, &out, NULL), 0);
	assert_int_equal(strlen(out->processes[1].comm), 4096);
	assert_string_equal(out->processes[2].comm, "new\nline-2");
	assert_string_equal(out->processes[4].comm, "bad utf8 \xff\xfe\xc3-4");
	assert_string_equal(out->vms[0].name, "guest \"one\"");
	kepler_snapshot_free(out);
	free(blob);
	fixture_free(&f);
}

static void test_strings_are_interned(void **state)
{
	struct fixture f;
	void *blob;
	size_t len;

	(void)state;
	fixture_build(&f, 1000, 1);
	assert_int_equal(kepler_snapshot_encode(&f.snap, &blob, &len, NULL), 0);
	/* 250 processes share one 64-char container id: it is stored once */
	assert_non_null(memmem(blob, len, f.snap.processes[1].container_id, 64));
	{
		const char *first = memmem(blob, len, f.snap.processes[1].container_id, 64);
		size_t rest = len - (size_t)(first - (const char *)blob) - 64;

		assert_null(memmem(first + 64, rest, f.snap.processes[1].container_id, 64));
	}
	free(blob);
	fixture_free(&f);
}

/*
 * Runs of equal strings in separate buffers (the encoder reuses the last
 * process's reference when the text is equal), broken by other strings,
 * empty ones and a return to an earlier one: every field decodes to its
 * own text, and a string repeated anywhere is stored once.
 */
static void test_runs_of_equal_strings(void **state)
{
	static char comm[8][16], exe[8][32];
	static const char *const comms[8] = { "worker", "worker", "worker", "nginx",
					      "",       "worker", "nginx",  "nginx" };
	static const char *const exes[8] = { "/usr/bin/w", "/usr/bin/w", "/usr/sbin/nginx", "/usr/sbin/nginx",
					     "",           "/usr/bin/w", "/usr/bin/w",      "" };
	struct kepler_snapshot *out = NULL;
	struct kepler_error err;
	struct fixture f;
	void *blob;
	size_t len;

	(void)state;
	fixture_build(&f, 8, 9);
	for (size_t i = 0; i < 8; i++) {
		snprintf(comm[i], sizeof(comm[i]), "%s", comms[i]);
		snprintf(exe[i], sizeof(exe[i]), "%s", exes[i]);
		f.snap.processes[i].comm = comm[i];
		f.snap.processes[i].exe = exe[i];
		f.snap.processes[i].container_id = i % 3 ? "c1" : "";
		f.snap.processes[i].vm_id = "";
	}
	for (int packed = 0; packed < 2; packed++) {
		assert_int_equal(
			packed ? kepler_snapshot_encode_packed(&f.snap, KEPLER_PACK_STORED, &blob, &len, &err)
			       : kepler_snapshot_encode(&f.snap, &blob, &len, &err),
			0);
		if (!packed) {
			const char *at = memmem(blob, len, "/usr/sbin/nginx", 16);

			assert_non_null(at);
			assert_null(memmem(at + 16, len - (size_t)(at + 16 - (const char *)blob),
					   "/usr/sbin/nginx", 16));
		}
		KEPLER_OK(kepler_snapshot_decode(blob, len, &out, &err));
		for (size_t i = 0; i < 8; i++) {
			assert_string_equal(out->processes[i].comm, comms[i]);
			assert_string_equal(out->processes[i].exe, exes[i]);
			assert_string_equal(out->processes[i].container_id, i % 3 ? "c1" : "");
		}
		kepler_snapshot_free(out);
		free(blob);
	}
	fixture_free(&f);
}

static void test_truncated_blobs_are_rejected(void **state)
{
	struct fixture f;
	struct kepler_snapshot *out;
	struct kepler_error err;
	void *blob;
	size_t len;

	(void)state;
	fixture_build(&f, 3, 1);
	assert_int_equal(kepler_snapshot_encode(&f.snap, &blob, &len, NULL), 0);
	for (size_t n = 0; n < len; n++) {
		int r = kepler_snapshot_decode(blob, n, &out, &err);

		if (r != -EPROTO || strncmp(err.msg, "corrupt snapshot: ", 18) != 0)
			fail_msg("truncated to %zu of %zu bytes: %d '%s'", n, len, r, err.msg);
	}
	free(blob);
	fixture_free(&f);
}

/* Flip every bit of a small blob: each flip is reported, nothing crashes. */
static void test_bit_flips_never_crash(void **state)
{
	struct fixture f;
	struct kepler_snapshot *out;
	struct kepler_error err;
	uint8_t *blob;
	size_t len, failures = 0;

	(void)state;
	fixture_build(&f, 3, 1);
	fixture_add_folds(&f);
	assert_int_equal(kepler_snapshot_encode(&f.snap, (void **)&blob, &len, NULL), 0);
	for (size_t bit = 0; bit < len * 8; bit++) {
		blob[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		if (kepler_snapshot_decode(blob, len, &out, &err) == 0)
			kepler_snapshot_free(out);
		else
			failures++;
		blob[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
	print_message("%zu of %zu single-bit flips detected as corrupt\n", failures, len * 8);
	assert_int_equal(failures, len * 8);
	free(blob);
	fixture_free(&f);
}

static void test_newer_major_is_named(void **state)
{
	struct fixture f;
	struct kepler_snapshot *out;
	struct kepler_error err;
	uint8_t *blob;
	size_t len;
	uint16_t major = KEPLER_FORMAT_MAJOR + 1, minor = 3;
	char want[64];

	(void)state;
	fixture_build(&f, 3, 1);
	assert_int_equal(kepler_snapshot_encode(&f.snap, (void **)&blob, &len, NULL), 0);
	memcpy(blob + offsetof(struct blob_header, major), &major, 2);
	memcpy(blob + offsetof(struct blob_header, minor), &minor, 2);
	reseal(blob, len);
	assert_int_equal(kepler_snapshot_decode(blob, len, &out, &err), -EPROTONOSUPPORT);
	snprintf(want, sizeof(want), "snapshot format %d.3 is newer than this reader's %d.%d",
		 KEPLER_FORMAT_MAJOR + 1, KEPLER_FORMAT_MAJOR, KEPLER_FORMAT_MINOR);
	assert_non_null(strstr(err.msg, want));
	free(blob);
	fixture_free(&f);
}

/*
 * A newer minor version may add sections: rebuild a blob with one more
 * section table entry (an id this reader does not know) and shifted
 * offsets; it must decode to the same snapshot. Dropping a required
 * section must not.
 */
static uint8_t *with_extra_section(const uint8_t *blob, size_t len, uint32_t replace_id, size_t *ret_len)
{
	struct blob_header h;
	size_t table, extra = sizeof(struct blob_section);
	uint8_t *out = malloc(len + extra);
	struct blob_section unknown = { .id = 200, .record_size = 1, .offset = 0, .count = 8 };

	memcpy(&h, blob, sizeof(h));
	table = h.header_size + h.nsections * h.section_size;
	memcpy(out, blob, table);
	memcpy(out + table + extra, blob + table, len - table);
	for (uint32_t i = 0; i < h.nsections; i++) {
		struct blob_section sec;
		uint8_t *at = out + h.header_size + i * h.section_size;

		memcpy(&sec, at, sizeof(sec));
		sec.offset += extra;
		if (sec.id == replace_id)
			sec.id = 201;
		memcpy(at, &sec, sizeof(sec));
	}
	memcpy(out + table, &unknown, sizeof(unknown));
	h.nsections++;
	h.minor = 9;
	h.total_size = len + extra;
	memcpy(out, &h, sizeof(h));
	reseal(out, len + extra);
	*ret_len = len + extra;
	return out;
}

static void test_newer_minor_is_read(void **state)
{
	struct fixture f;
	struct kepler_snapshot *out;
	struct kepler_error err;
	uint8_t *blob, *newer;
	size_t len, newer_len;

	(void)state;
	fixture_build(&f, 5, 1);
	assert_int_equal(kepler_snapshot_encode(&f.snap, (void **)&blob, &len, NULL), 0);
	newer = with_extra_section(blob, len, 0, &newer_len);
	KEPLER_OK(kepler_snapshot_decode(newer, newer_len, &out, &err));
	assert_null(snapshot_diff(&f.snap, out));
	kepler_snapshot_free(out);
	free(newer);

	newer = with_extra_section(blob, len, SEC_INFO, &newer_len);
	assert_int_equal(kepler_snapshot_decode(newer, newer_len, &out, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "no info record"));
	free(newer);
	free(blob);
	fixture_free(&f);
}

/*
 * @f encoded as an older writer would have: the records of section @id cut
 * to @size bytes, those from @zero_from on zeroed (a padding field then).
 */
static uint8_t *encode_older(struct fixture *f, uint32_t id, uint32_t size, uint32_t zero_from,
			     size_t *ret_len)
{
	struct blob_header h;
	uint8_t *blob;

	assert_int_equal(kepler_snapshot_encode(&f->snap, (void **)&blob, ret_len, NULL), 0);
	memcpy(&h, blob, sizeof(h));
	for (uint32_t i = 0; i < h.nsections; i++) {
		uint8_t *at = blob + h.header_size + i * h.section_size;
		struct blob_section sec;

		memcpy(&sec, at, sizeof(sec));
		if (sec.id != id)
			continue;
		for (uint64_t r = 0; r < sec.count; r++) {
			memmove(blob + sec.offset + r * size, blob + sec.offset + r * sec.record_size, size);
			memset(blob + sec.offset + r * size + zero_from, 0, size - zero_from);
		}
		sec.record_size = size;
		memcpy(at, &sec, sizeof(sec));
	}
	reseal(blob, *ret_len);
	return blob;
}

/*
 * A 1.1 writer's zone records end before the baseline (72 bytes): they
 * read as the usage-ratio split (method none), every other field intact.
 */
static void test_older_zone_records_are_read(void **state)
{
	struct fixture f;
	struct kepler_snapshot *out;
	struct kepler_error err;
	uint8_t *blob;
	size_t len;

	(void)state;
	fixture_build(&f, 5, 1);
	blob = encode_older(&f, SEC_ZONES, 72, 72, &len);
	KEPLER_OK(kepler_snapshot_decode(blob, len, &out, &err));
	for (size_t z = 0; z < f.snap.nzones; z++) {
		assert_int_equal(out->zones[z].baseline.method, KEPLER_BASELINE_NONE);
		assert_int_equal(out->zones[z].baseline.idle_uw, 0);
		f.snap.zones[z].baseline = (struct kepler_baseline){ 0 };
		assert_int_equal(out->zones[z].meter_resets, 0);
		f.snap.zones[z].meter_resets = f.snap.zones[z].meter_wraps = 0;
		f.snap.zones[z].unattributed = (struct kepler_energy){ 0, 0 };
		f.snap.zones[z].device = (struct kepler_device){ 0, "", "", "" };
	}
	assert_null(snapshot_diff(&f.snap, out));
	kepler_snapshot_free(out);
	free(blob);
	fixture_free(&f);
}

/*
 * A 4.0 (or 1.5) writer's: process records of 96 bytes, no fold sections
 * (here renamed to an id this reader does not know, which it skips): no
 * process is folded and there are no folds; everything else as written.
 */
static void test_snapshots_before_folds_are_read(void **state)
{
	struct fixture f;
	struct kepler_snapshot *out;
	struct kepler_error err;
	struct blob_header h;
	uint8_t *blob;
	size_t len;

	(void)state;
	fixture_build(&f, 25, 4);
	fixture_add_folds(&f);
	blob = encode_older(&f, SEC_PROCESSES, 96, 96, &len);
	memcpy(&h, blob, sizeof(h));
	for (uint32_t i = 0; i < h.nsections; i++) {
		uint8_t *at = blob + h.header_size + i * h.section_size;
		struct blob_section sec;

		memcpy(&sec, at, sizeof(sec));
		if (sec.id >= SEC_FOLDS && sec.id <= SEC_FOLD_IDLE) {
			sec.id += 100;
			memcpy(at, &sec, sizeof(sec));
		}
	}
	reseal(blob, len);
	KEPLER_OK(kepler_snapshot_decode(blob, len, &out, &err));
	assert_int_equal(out->nfolds, 0);
	for (size_t i = 0; i < f.snap.nprocesses; i++)
		f.snap.processes[i].flags = 0;
	f.snap.nfolds = 0;
	assert_null(snapshot_diff(&f.snap, out));
	f.snap.nfolds = 2;
	kepler_snapshot_free(out);
	free(blob);
	fixture_free(&f);
}

/* A 2.0 (or 1.3) writer's zone record ends before the devices: no device, nothing unattributed. */
static void test_zone_records_before_devices_are_read(void **state)
{
	struct fixture f;
	struct kepler_snapshot *out;
	struct kepler_error err;
	uint8_t *blob;
	size_t len;

	(void)state;
	fixture_build(&f, 4, 3);
	blob = encode_older(&f, SEC_ZONES, 112, 112, &len);
	KEPLER_OK(kepler_snapshot_decode(blob, len, &out, &err));
	for (size_t z = 0; z < f.snap.nzones; z++) {
		assert_int_equal(out->zones[z].unattributed.total_uj, 0);
		assert_string_equal(out->zones[z].device.uuid, "");
		f.snap.zones[z].unattributed = (struct kepler_energy){ 0, 0 };
		f.snap.zones[z].device = (struct kepler_device){ 0, "", "", "" };
	}
	assert_null(snapshot_diff(&f.snap, out));
	kepler_snapshot_free(out);
	free(blob);
	fixture_free(&f);
}

/*
 * A 1.2 writer's info record ends before unstored_ns (80 bytes, with 0
 * where unstored_intervals now is): it reads as a snapshot stored on time.
 */
static void test_older_info_record_is_read(void **state)
{
	struct fixture f;
	struct kepler_snapshot *out;
	struct kepler_error err;
	uint8_t *blob;
	size_t len;

	(void)state;
	fixture_build(&f, 5, 2);
	assert_int_equal(f.snap.unstored_intervals, 2);
	blob = encode_older(&f, SEC_INFO, 80, 76, &len);
	KEPLER_OK(kepler_snapshot_decode(blob, len, &out, &err));
	assert_int_equal(out->unstored_intervals, 0);
	assert_int_equal(out->unstored_ns, 0);
	assert_int_equal(out->collector_cpu_ns, 0);
	f.snap.unstored_intervals = 0;
	f.snap.unstored_ns = 0;
	f.snap.collector_cpu_ns = f.snap.collector_rss_bytes = 0;
	assert_null(snapshot_diff(&f.snap, out));
	kepler_snapshot_free(out);
	free(blob);
	fixture_free(&f);
}

static void test_encode_rejects_bad_input(void **state)
{
	struct fixture f;
	struct kepler_error err;
	void *blob;
	size_t len;

	(void)state;
	fixture_build(&f, 3, 1);
	f.snap.nzones = KEPLER_MAX_ZONES + 1;
	assert_int_equal(kepler_snapshot_encode(&f.snap, &blob, &len, &err), -EINVAL);
	f.snap.nzones = 3;
	f.snap.processes[0].comm = NULL;
	assert_int_equal(kepler_snapshot_encode(&f.snap, &blob, &len, &err), -EINVAL);
	fixture_free(&f);
}

/*
 * Format 2.2 / 1.5: the idle energies of an idle policy and the containers'
 * sizes come back, plain and packed; a blob whose policy is set but whose
 * idle section does not cover every workload is refused.
 */
static void test_idle_round_trip(void **state)
{
	static const enum kepler_idle_policy policies[] = { KEPLER_IDLE_CPU, KEPLER_IDLE_SIZE };
	struct kepler_snapshot *out = NULL;
	struct kepler_error err;
	struct fixture f;
	void *blob;
	size_t len;
	const char *diff;

	(void)state;
	for (size_t i = 0; i < 2; i++) {
		fixture_build(&f, 40, 3);
		fixture_add_folds(&f);
		fixture_add_idle(&f, policies[i]);
		for (int packed = 0; packed < 2; packed++) {
			assert_int_equal(packed ? kepler_snapshot_encode_packed(&f.snap, 1, &blob, &len, &err)
						: kepler_snapshot_encode(&f.snap, &blob, &len, &err),
					 0);
			KEPLER_OK(kepler_snapshot_decode(blob, len, &out, &err));
			diff = snapshot_diff(&f.snap, out);
			if (diff)
				fail_msg("%s: %s differs", kepler_idle_policy_name(policies[i]), diff);
			assert_non_null(out->processes[0].usage.idle);
			kepler_snapshot_free(out);
			free(blob);
		}
		fixture_free(&f);
	}
	/* policy NONE: no idle arrays come back */
	fixture_build(&f, 5, 3);
	KEPLER_OK(kepler_snapshot_encode(&f.snap, &blob, &len, &err));
	KEPLER_OK(kepler_snapshot_decode(blob, len, &out, &err));
	assert_null(out->processes[0].usage.idle);
	assert_int_equal(out->idle_policy, KEPLER_IDLE_NONE);
	kepler_snapshot_free(out);
	free(blob);
	/* a policy with no idle section */
	f.snap.idle_policy = KEPLER_IDLE_CPU;
	assert_int_equal(kepler_snapshot_encode(&f.snap, &blob, &len, &err), -EINVAL);
	fixture_free(&f);
}

/* Format 4.0 (what the store writes): the same snapshot back, a peek from its plain part, smaller. */
static void test_packed_round_trip(void **state)
{
	static const size_t sizes[] = { 0, 1, 1000, 10000 };
	struct kepler_snapshot *out = NULL, plain_hdr, packed_hdr;
	struct kepler_error err;
	struct fixture f;
	void *plain, *packed;
	size_t plain_len, packed_len;
	struct blob_header h;
	const char *diff;

	(void)state;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		fixture_build(&f, sizes[i], 7);
		fixture_add_folds(&f);
		f.snap.seq = 99;
		KEPLER_OK(kepler_snapshot_encode(&f.snap, &plain, &plain_len, &err));
		KEPLER_OK(kepler_snapshot_encode_packed(&f.snap, 1, &packed, &packed_len, &err));
		memcpy(&h, packed, sizeof(h));
		assert_int_equal(h.major, KEPLER_FORMAT_MAJOR);
		assert_int_equal(h.minor, KEPLER_FORMAT_MINOR);
		KEPLER_OK(kepler_snapshot_decode(packed, packed_len, &out, &err));
		diff = snapshot_diff(&f.snap, out);
		if (diff)
			fail_msg("%zu processes: the packed snapshot differs in %s", sizes[i], diff);
		kepler_snapshot_free(out);
		KEPLER_OK(kepler_snapshot_peek(plain, plain_len, &plain_hdr, &err));
		KEPLER_OK(kepler_snapshot_peek(packed, packed_len, &packed_hdr, &err));
		assert_int_equal(packed_hdr.seq, 99);
		assert_memory_equal(&plain_hdr, &packed_hdr, sizeof(plain_hdr));
		print_message("%zu processes: plain %zu bytes, packed %zu bytes\n", sizes[i], plain_len,
			      packed_len);
		if (sizes[i] >= 1000)
			assert_true(packed_len * 4 < plain_len);
		free(plain);
		free(packed);
		fixture_free(&f);
	}
}

/*
 * KEPLER_PACK_STORED (what the store writes for small snapshots): the same
 * snapshot back from a zstd frame of raw blocks no smaller than its
 * content, read by the same decoder as a compressed one; KEPLER_PACK_AUTO
 * stores only what is small.
 */
static void test_stored_round_trip(void **state)
{
	static const size_t sizes[] = { 0, 1, 1000, 10000 };
	struct kepler_snapshot *out = NULL;
	struct kepler_error err;
	struct fixture f;
	void *stored, *packed, *out_blob;
	size_t stored_len, packed_len, out_len;
	struct blob_pack p;
	const char *diff;

	(void)state;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		unsigned long long content;

		fixture_build(&f, sizes[i], 3);
		fixture_add_idle(&f, KEPLER_IDLE_CPU);
		assert_int_equal(kepler_snapshot_encode_packed(&f.snap, KEPLER_PACK_STORED, &stored,
							       &stored_len, &err),
				 0);
		KEPLER_OK(kepler_snapshot_encode_packed(&f.snap, 1, &packed, &packed_len, &err));
		KEPLER_OK(kepler_snapshot_decode(stored, stored_len, &out, &err));
		diff = snapshot_diff(&f.snap, out);
		if (diff)
			fail_msg("%zu processes stored: differs in %s", sizes[i], diff);
		kepler_snapshot_free(out);
		memcpy(&p, (uint8_t *)stored + sizeof(struct blob_header), sizeof(p));
		content = ZSTD_getFrameContentSize((uint8_t *)stored + p.packed_at, stored_len - p.packed_at);
		assert_true(content != ZSTD_CONTENTSIZE_ERROR && content != ZSTD_CONTENTSIZE_UNKNOWN);
		assert_int_equal(ZSTD_findFrameCompressedSize((uint8_t *)stored + p.packed_at,
							      stored_len - p.packed_at),
				 stored_len - p.packed_at);
		assert_true(stored_len - p.packed_at >
			    content); /* not compressed: its bytes and the headers */
		print_message("%zu processes: stored %zu bytes (content %llu), compressed %zu bytes\n",
			      sizes[i], stored_len, content, packed_len);
		if (sizes[i] >= 1000)
			assert_true(packed_len < stored_len);
		/* what the store writes: stored when the content is small, else level 1 */
		assert_int_equal(
			kepler_snapshot_encode_packed(&f.snap, KEPLER_PACK_AUTO, &out_blob, &out_len, &err),
			0);
		assert_int_equal(out_len, content < KEPLER_PACK_STORED_BELOW ? stored_len : packed_len);
		free(out_blob);
		free(stored);
		free(packed);
		fixture_free(&f);
	}
}

/*
 * The stored frame itself, against libzstd, at the sizes where its raw
 * blocks (128 KiB at most) begin and end: a 2.x image (packed as it is) of
 * each size, packed stored, decompresses to its content.
 */
static void test_stored_frame_sizes(void **state)
{
	static const size_t sizes[] = { 0, 1, 131071, 131072, 131073, 262144, 300001 };
	struct blob_header h = { .magic = BLOB_MAGIC, .major = 2, .header_size = BLOB_PACKED_HEADER_SIZE };
	struct blob_pack p = { BLOB_PACKED_HEADER_SIZE };

	(void)state;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t total = BLOB_PACKED_HEADER_SIZE + sizes[i], len, n;
		uint8_t *image = malloc(total), *back = malloc(sizes[i] + 1);
		void *blob;

		assert_non_null(image);
		assert_non_null(back);
		h.total_size = total;
		memcpy(image, &h, sizeof(h));
		memcpy(image + sizeof(h), &p, sizeof(p));
		for (size_t k = 0; k < sizes[i]; k++)
			image[BLOB_PACKED_HEADER_SIZE + k] = (uint8_t)(k * 7 + k / 251);
		assert_int_equal(kepler_blob_pack(image, total, KEPLER_PACK_STORED, &blob, &len), 0);
		n = ZSTD_decompress(back, sizes[i] + 1, (uint8_t *)blob + p.packed_at, len - p.packed_at);
		if (ZSTD_isError(n))
			fail_msg("%zu bytes: %s", sizes[i], ZSTD_getErrorName(n));
		assert_int_equal(n, sizes[i]);
		assert_memory_equal(back, image + BLOB_PACKED_HEADER_SIZE, sizes[i]);
		assert_int_equal(len - p.packed_at,
				 14 + 3 * (sizes[i] / 131072 + (sizes[i] % 131072 || !sizes[i])) + sizes[i]);
		free(blob);
		free(image);
		free(back);
	}
}

/*
 * The formats collectors before 4.0 wrote are still read: repack a 4.0
 * blob's image as 2.2 (packed as it is, no columns) and as 3.0 (columns of
 * whole bytes) and decode them. 4.0 must be smaller than 2.2 on the
 * fixture, whose counters grow from one record to the next.
 */
static void test_formats_2_and_3_still_read(void **state)
{
	static const size_t sizes[] = { 0, 1, 2, 1000 };
	static const uint16_t majors[] = { 2, 3 };
	struct kepler_snapshot *out = NULL;
	struct kepler_error err;
	struct fixture f;
	uint8_t *image;
	void *packed, *old;
	size_t packed_len, old_len[2];
	struct blob_header h;
	const char *diff;

	(void)state;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		fixture_build(&f, sizes[i], 5);
		fixture_add_idle(&f, KEPLER_IDLE_SIZE);
		KEPLER_OK(kepler_snapshot_encode_packed(&f.snap, 1, &packed, &packed_len, &err));
		memcpy(&h, packed, sizeof(h));
		KEPLER_OK(kepler_blob_unpack(packed, packed_len, &h, &image, &err));
		for (size_t m = 0; m < 2; m++) {
			h.major = majors[m];
			h.minor = majors[m] == 2 ? 2 : 0;
			memcpy(image, &h, sizeof(h));
			assert_int_equal(kepler_blob_pack(image, h.total_size, 1, &old, &old_len[m]), 0);
			KEPLER_OK(kepler_snapshot_decode(old, old_len[m], &out, &err));
			diff = snapshot_diff(&f.snap, out);
			if (diff)
				fail_msg("%zu processes as %u.%u: differs in %s", sizes[i], h.major, h.minor,
					 diff);
			kepler_snapshot_free(out);
			free(old);
		}
		print_message("%zu processes: 2.2 %zu bytes, 3.0 %zu bytes, 4.0 %zu bytes\n", sizes[i],
			      old_len[0], old_len[1], packed_len);
		if (sizes[i] >= 1000)
			assert_true(packed_len * 2 < old_len[0]);
		free(image);
		free(packed);
		fixture_free(&f);
	}
}

/* Rows of @w words whose word c follows @pattern; every value the blocks must carry exactly. */
static uint64_t block_value(int pattern, uint64_t i, size_t c, uint64_t *seed)
{
	*seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
	switch (pattern) {
	case 0: /* counters that grow a little */ return 1000000 + i * 977 + c + (*seed >> 60);
	case 1: /* anything at all: 64 significant bits */ return *seed ^ (*seed >> 29);
	case 2: /* two 32-bit fields that step apart (a string's offset and length) */
		return (uint64_t)(i % 7 + c) << 32 | (uint32_t)(i * 13);
	case 3: /* wrapping in both halves, and the extremes */
		return i % 3 == 0 ? UINT64_MAX : i % 3 == 1 ? 0 : (uint64_t) - (int64_t)(i << 31);
	case 4: /* constant: no bits at all */ return 42;
	case 5: /* a width of its own in each column, 2 to 58 bits: each width's own unpacking */
		return *seed >> (63 - c % 57);
	default: /* differences of 58 to 63 bits: the read that spans nine bytes */
		return (i & 1) ? (1ULL << (57 + c % 6)) + (*seed >> 40) : *seed >> 50;
	}
}

/*
 * The 4.x blocks alone: every pattern, record width and count (a part
 * block, exactly one, one more) comes back exactly, in at most 9/8 of the
 * rows' bytes; cut short or given a width over 64 bits (or 32 in a half)
 * they are refused, never read past.
 */
static void test_blocks_round_trip(void **state)
{
	static const uint64_t counts[] = { 2, 3, 64, 65, 66, 129, 1000 };
	static const size_t widths[] = { 1, 2, 12, 64 };

	(void)state;
	for (int pattern = 0; pattern < 7; pattern++)
		for (size_t wi = 0; wi < sizeof(widths) / sizeof(widths[0]); wi++)
			for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {
				uint64_t n = counts[ci], seed = (uint64_t)pattern * 31 + n, bytes;
				size_t w = widths[wi], size = (size_t)n * w * 8;
				uint64_t *rows = malloc(size), *back = malloc(size + 64 * w * 8);
				uint8_t *packed = malloc(size + size / 8 + 16), *end;

				for (uint64_t i = 0; i < n; i++)
					for (size_t c = 0; c < w; c++)
						rows[i * w + c] = block_value(pattern, i, c, &seed);
				end = kepler_blob_rows_to_blocks(packed, (const uint8_t *)rows, n, w);
				bytes = (uint64_t)(end - packed);
				assert_true(bytes <= size + size / 8);
				memset(end, 0xa5, 8); /* what lies past the end is not read into a row */
				assert_ptr_equal(
					kepler_blob_blocks_to_rows((uint8_t *)back, packed, bytes, n, w),
					end);
				if (memcmp(rows, back, size) != 0)
					fail_msg("pattern %d, %zu words, %llu rows: rows differ", pattern, w,
						 (unsigned long long)n);
				assert_null(
					kepler_blob_blocks_to_rows((uint8_t *)back, packed, bytes - 1, n, w));
				/* more rows than were packed: refused or, by chance, read within the bytes */
				end = (uint8_t *)kepler_blob_blocks_to_rows((uint8_t *)back, packed, bytes,
									    n + 64, w);
				assert_true(!end || (end > packed && end <= packed + bytes));
				free(rows);
				free(back);
				free(packed);
			}
}

/*
 * Every width a block's column can take, 1 to 64 bits (differences of
 * both signs whose largest needs exactly that many), in blocks of 8 to 64
 * records (where the writer packs without a branch per value, and the
 * short ones where it does not), one word and three: packed and read back.
 */
static void test_blocks_every_width(void **state)
{
	static const uint64_t blocks[] = { 1, 7, 8, 9, 31, 63, 64 };
	uint64_t seed = 12345;

	(void)state;
	for (unsigned bits = 1; bits <= 64; bits++)
		for (size_t bi = 0; bi < sizeof(blocks) / sizeof(blocks[0]); bi++)
			for (size_t w = 1; w <= 3; w += 2) {
				uint64_t n = blocks[bi] + 1, size = n * w * 8, bytes;
				uint64_t *rows = malloc(size), *back = malloc(size + 64 * w * 8);
				uint8_t *packed = malloc(size + size / 8 + 16), *end;

				for (size_t c = 0; c < w; c++)
					rows[c] = seed * (c + 1);
				for (uint64_t i = 1; i < n; i++)
					for (size_t c = 0; c < w; c++) {
						/* a signed difference of at most @bits bits; at row 1 the widest, negative */
						uint64_t most = bits == 64 ? INT64_MAX
									   : (1ULL << (bits - 1)) - 1,
							 d;

						seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
						d = (seed >> 7) & most;
						if (i == 1)
							d = most;
						if (i == 1 || seed >> 63)
							d = ~d; /* negative: -d - 1, as wide */
						rows[i * w + c] = rows[(i - 1) * w + c] + d;
					}
				end = kepler_blob_rows_to_blocks(packed, (const uint8_t *)rows, n, w);
				bytes = (uint64_t)(end - packed);
				memset(end, 0x5a, 8);
				if (kepler_blob_blocks_to_rows((uint8_t *)back, packed, bytes, n, w) != end ||
				    memcmp(rows, back, size) != 0)
					fail_msg("%u bits, %llu rows of %zu words: not read back as packed",
						 bits, (unsigned long long)n, w);
				free(rows);
				free(back);
				free(packed);
			}
}

/* Nonzero bytes in [from, to) of @image: where a byte of the heap could have leaked. */
static size_t nonzero(const uint8_t *image, uint64_t from, uint64_t to)
{
	size_t n = 0;

	for (uint64_t i = from; i < to; i++)
		n += image[i] != 0;
	return n;
}

/*
 * The bytes no field holds (the records' padding, what lies between the
 * section table and the first section, between sections and before the
 * strings) of a 1.x or 4.x image; each must be 0.
 */
static size_t leaked(const uint8_t *image)
{
	struct blob_header h;
	struct blob_section sec[SEC_MAX] = { 0 }, s;
	uint64_t at, strings;
	size_t n = 0;

	memcpy(&h, image, sizeof(h));
	at = h.header_size + (uint64_t)h.nsections * h.section_size;
	for (uint32_t i = 0; i < h.nsections; i++) {
		memcpy(&s, image + h.header_size + (size_t)i * h.section_size, sizeof(s));
		assert_true(s.id > 0 && s.id < SEC_MAX);
		sec[s.id] = s;
	}
	strings = sec[SEC_STRINGS].offset;
	for (uint32_t id = SEC_INFO; id < SEC_MAX; id++) {
		if (id == SEC_STRINGS)
			continue;
		n += nonzero(image, at, sec[id].offset);
		at = sec[id].offset + sec[id].count * sec[id].record_size;
		for (uint64_t r = 0; r < sec[id].count; r++) {
			const uint8_t *b = image + sec[id].offset + r * sec[id].record_size;
			uint32_t pads[3] = { 0 };

			if (id == SEC_INFO)
				memcpy(&pads[0], b + offsetof(struct blob_info, pad2), 4);
			if (id == SEC_ZONES) {
				memcpy(&pads[0], b + offsetof(struct blob_zone, pad), 4);
				memcpy(&pads[1], b + offsetof(struct blob_zone, pad2), 4);
				memcpy(&pads[2], b + offsetof(struct blob_zone, pad3), 4);
			}
			if (id == SEC_PROCESSES) {
				memcpy(&pads[0], b + offsetof(struct blob_process, usage.pad), 4);
				memcpy(&pads[1], b + offsetof(struct blob_process, pad), 4);
			}
			if (id == SEC_FOLDS)
				memcpy(&pads[0], b + offsetof(struct blob_fold, usage.pad), 4);
			if (id == SEC_CONTAINERS)
				memcpy(&pads[0], b + offsetof(struct blob_container, usage.pad), 4);
			if (id == SEC_VMS || id == SEC_PODS) {
				memcpy(&pads[0], b + offsetof(struct blob_named, usage.pad), 4);
				memcpy(&pads[1], b + offsetof(struct blob_named, pad), 8);
			}
			n += (pads[0] != 0) + (pads[1] != 0) + (pads[2] != 0);
		}
	}
	return n + nonzero(image, at, strings);
}

/*
 * The encoder's buffer is not cleared as a whole: no byte the allocator
 * left there may reach a blob. The allocator is made to fill what it
 * hands out (glibc's M_PERTURB; under AddressSanitizer its own fill of
 * the first 4 KiB of each block, which holds the whole image of the small
 * snapshots), and every byte no field holds is checked to be 0: plain
 * blobs, and packed ones unpacked.
 */
static void test_no_heap_bytes_in_blobs(void **state)
{
	static const size_t sizes[] = { 0, 1, 2, 1000 };
	struct kepler_error err;
	struct fixture f;

	(void)state;
	mallopt(M_PERTURB, 0x5a);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		for (int idle = 0; idle < 2; idle++) {
			struct blob_header h;
			void *blob;
			uint8_t *image;
			size_t len;

			fixture_build(&f, sizes[i], 3);
			fixture_add_folds(&f);
			if (idle)
				fixture_add_idle(&f, KEPLER_IDLE_SIZE);
			KEPLER_OK(kepler_snapshot_encode(&f.snap, &blob, &len, &err));
			if (leaked(blob))
				fail_msg("%zu processes, plain: %zu bytes of padding not 0", sizes[i],
					 leaked(blob));
			free(blob);
			assert_int_equal(
				kepler_snapshot_encode_packed(&f.snap, KEPLER_PACK_AUTO, &blob, &len, &err),
				0);
			memcpy(&h, blob, sizeof(h));
			KEPLER_OK(kepler_blob_unpack(blob, len, &h, &image, &err));
			if (leaked(image))
				fail_msg("%zu processes, packed: %zu bytes of padding not 0", sizes[i],
					 leaked(image));
			free(image);
			free(blob);
			fixture_free(&f);
		}
	mallopt(M_PERTURB, 0);
}

/* Descriptors no writer makes: too wide, a half too wide, a record too wide. */
static void test_blocks_damage_is_an_error(void **state)
{
	uint8_t in[64 + 16] = { 0 }, rows[3 * 8 * 2];

	(void)state;
	in[8] = 65; /* 65 bits */
	assert_null(kepler_blob_blocks_to_rows(rows, in, 64, 3, 1));
	in[8] = 0x80 | 33; /* a low half of 33 bits */
	in[9] = 1;
	assert_null(kepler_blob_blocks_to_rows(rows, in, 64, 3, 1));
	in[8] = 0x80 | 1;
	in[9] = 33; /* a high half of 33 bits */
	assert_null(kepler_blob_blocks_to_rows(rows, in, 64, 3, 1));
	in[9] = 32; /* 33 bits, two of them: 9 bytes there, 10 claimed */
	assert_null(kepler_blob_blocks_to_rows(rows, in, 8 + 2 + 8, 3, 1));
	assert_non_null(kepler_blob_blocks_to_rows(rows, in, 8 + 2 + 9, 3, 1));
	in[8] = 0x80; /* a descriptor of halves cut before its second byte */
	assert_null(kepler_blob_blocks_to_rows(rows, in, 9, 3, 1));
	assert_null(kepler_blob_blocks_to_rows(rows, in, 64, 3, BLOB_BLOCK_MAX_WORDS + 1));
}

/*
 * 3.0's columns from a hostile store: sections that overlap once unpacked,
 * or a table that runs into the packed part, are an error, never a write
 * out of bounds.
 */
static void test_columns_damage_is_an_error(void **state)
{
	struct kepler_snapshot *out = NULL;
	struct kepler_error err;
	struct fixture f;
	uint8_t *blob;
	size_t len;
	struct blob_header h;
	struct blob_section sec[SEC_MAX];

	(void)state;
	fixture_build(&f, 100, 3);
	KEPLER_OK(kepler_snapshot_encode_packed(&f.snap, 1, (void **)&blob, &len, &err));
	memcpy(&h, blob, sizeof(h));
	memcpy(sec, blob + h.header_size, h.nsections * sizeof(sec[0]));
	for (uint32_t i = 0; i < h.nsections; i++) /* the containers start inside the processes */
		if (sec[i].id == SEC_CONTAINERS)
			for (uint32_t j = 0; j < h.nsections; j++)
				if (sec[j].id == SEC_PROCESSES)
					sec[i].offset = sec[j].offset + 8;
	memcpy(blob + h.header_size, sec, h.nsections * sizeof(sec[0]));
	reseal(blob, len);
	assert_int_equal(kepler_snapshot_decode(blob, len, &out, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "overlap"));
	h.nsections = 60; /* the table runs past the plain part */
	memcpy(blob, &h, sizeof(h));
	reseal(blob, len);
	assert_int_equal(kepler_snapshot_decode(blob, len, &out, &err), -EPROTO);
	free(blob);
	fixture_free(&f);
}

/* Damage to a packed blob: every bit flip is caught; damage resealed is an error, never a crash. */
static void test_packed_damage_is_an_error(void **state)
{
	struct kepler_snapshot *out = NULL, hdr;
	struct kepler_error err;
	struct fixture f;
	uint8_t *blob, *copy;
	size_t len, flips = 0;
	struct blob_header h;
	struct blob_pack p;

	(void)state;
	fixture_build(&f, 200, 3);
	KEPLER_OK(kepler_snapshot_encode_packed(&f.snap, 1, (void **)&blob, &len, &err));
	copy = malloc(len);
	for (size_t bit = 0; bit < len * 8; bit += 7) {
		memcpy(copy, blob, len);
		copy[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		assert_int_not_equal(kepler_snapshot_decode(copy, len, &out, &err), 0);
		flips++;
	}
	print_message("%zu bit flips in a packed blob: every one rejected\n", flips);
	/* resealed: a wrong image size, a frame cut short, no frame at all */
	memcpy(&h, blob, sizeof(h));
	memcpy(&p, blob + sizeof(h), sizeof(p));
	memcpy(copy, blob, len);
	h.total_size += 8;
	memcpy(copy, &h, sizeof(h));
	reseal(copy, len);
	assert_int_equal(kepler_snapshot_decode(copy, len, &out, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "more or less than the image"));
	memcpy(copy, blob, len);
	reseal(copy, len - 16);
	assert_int_equal(kepler_snapshot_decode(copy, len - 16, &out, &err), -EPROTO);
	memcpy(copy, blob, len);
	memset(copy + p.packed_at, 0x41, len - p.packed_at);
	reseal(copy, len);
	assert_int_equal(kepler_snapshot_decode(copy, len, &out, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "no zstd frame"));
	/* a header claiming a huge image is refused before anything is allocated */
	memcpy(copy, blob, len);
	h.total_size = 1ULL << 40;
	memcpy(copy, &h, sizeof(h));
	reseal(copy, len);
	assert_int_equal(kepler_snapshot_decode(copy, len, &out, &err), -EPROTO);
	assert_int_equal(kepler_snapshot_peek(copy, len, &hdr, &err), -EPROTO);
	/* a peek at a blob whose plain part is cut short */
	assert_int_equal(kepler_snapshot_peek(blob, p.packed_at - 8, &hdr, &err), -EPROTO);
	free(copy);
	free(blob);
	fixture_free(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_sizes),
		cmocka_unit_test(test_hostile_strings_survive),
		cmocka_unit_test(test_strings_are_interned),
		cmocka_unit_test(test_runs_of_equal_strings),
		cmocka_unit_test(test_truncated_blobs_are_rejected),
		cmocka_unit_test(test_bit_flips_never_crash),
		cmocka_unit_test(test_newer_major_is_named),
		cmocka_unit_test(test_formats_2_and_3_still_read),
		cmocka_unit_test(test_blocks_round_trip),
		cmocka_unit_test(test_blocks_every_width),
		cmocka_unit_test(test_no_heap_bytes_in_blobs),
		cmocka_unit_test(test_blocks_damage_is_an_error),
		cmocka_unit_test(test_columns_damage_is_an_error),
		cmocka_unit_test(test_newer_minor_is_read),
		cmocka_unit_test(test_older_zone_records_are_read),
		cmocka_unit_test(test_snapshots_before_folds_are_read),
		cmocka_unit_test(test_older_info_record_is_read),
		cmocka_unit_test(test_encode_rejects_bad_input),
		cmocka_unit_test(test_packed_round_trip),
		cmocka_unit_test(test_stored_round_trip),
		cmocka_unit_test(test_stored_frame_sizes),
		cmocka_unit_test(test_idle_round_trip),
		cmocka_unit_test(test_zone_records_before_devices_are_read),
		cmocka_unit_test(test_packed_damage_is_an_error),
	};
	return kepler_test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
