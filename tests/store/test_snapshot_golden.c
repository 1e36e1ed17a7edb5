// SPDX-License-Identifier: Apache-2.0
/*
 * Snapshots encode byte for byte as they did: one synthetic snapshot (200
 * processes with hostile strings, folds, idle energies) encoded plain (the
 * current 1.x image) and packed without compression (the 4.x image the
 * store writes, zstd aside, whose output is zstd's own business) and
 * compared with tests/golden/snapshot-200.plain and .packed. A change of
 * format is deliberate: bump the format version, then rewrite the golden
 * files with KEPLER_GOLDEN_UPDATE=1 build/tests/test_snapshot_golden and
 * say why in the commit. The golden files of the formats before
 * (snapshot-200-1.6.plain, -4.1.packed: the same fixture without the pods'
 * owners and labels) still decode to it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kepler/snapshot.h"
#include "kepler_test.h"
#include "snapshot_fixture.h"

static void *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static void compare(const char *name, const void *blob, size_t len)
{
	char path[512];
	size_t want_len = 0, at = 0;
	unsigned char *want;

	snprintf(path, sizeof(path), "%s/tests/golden/%s", KEPLER_SOURCE_DIR, name);
	if (getenv("KEPLER_GOLDEN_UPDATE")) {
		FILE *f = fopen(path, "wb");

		assert_non_null(f);
		assert_int_equal(fwrite(blob, 1, len, f), len);
		assert_int_equal(fclose(f), 0);
		print_message("rewrote %s (%zu bytes)\n", path, len);
		return;
	}
	want = slurp(path, &want_len);
	if (!want)
		fail_msg("%s: cannot read the golden file", path);
	while (at < len && at < want_len && ((const unsigned char *)blob)[at] == want[at])
		at++;
	free(want);
	if (at != len || len != want_len)
		fail_msg(
			"%s: %zu bytes encoded, %zu golden; they differ from byte %zu. A format change must be "
			"deliberate: see this test's header",
			name, len, want_len, at);
	print_message("%s: %zu bytes, the same\n", name, len);
}

static void build(struct fixture *f)
{
	memset(f, 0, sizeof(*f));
	fixture_build(f, 200, 3);
	fixture_add_folds(f);
	fixture_add_idle(f, KEPLER_IDLE_CPU);
	f->snap.seq = 1234;
	f->snap.wall_ns = 1795768187809095829ULL;
}

static void test_plain(void **state)
{
	struct kepler_error err = { 0 };
	struct fixture f;
	size_t len;
	void *blob;

	(void)state;
	build(&f);
	KEPLER_OK(kepler_snapshot_encode(&f.snap, &blob, &len, &err));
	compare("snapshot-200.plain", blob, len);
	free(blob);
	fixture_free(&f);
}

static void test_packed(void **state)
{
	struct kepler_error err = { 0 };
	struct fixture f;
	size_t len;
	void *blob;

	(void)state;
	build(&f);
	KEPLER_OK(kepler_snapshot_encode_packed(&f.snap, KEPLER_PACK_STORED, &blob, &len, &err));
	compare("snapshot-200.packed", blob, len);
	free(blob);
	fixture_free(&f);
}

/* Blobs of the formats before 4.2 / 1.7 decode to the fixture, its pods' owner and labels "". */
static void test_older_formats(void **state)
{
	static const char *const older[] = { "snapshot-200-1.6.plain", "snapshot-200-4.1.packed" };
	struct kepler_error err = { 0 };

	(void)state;
	for (size_t i = 0; i < 2; i++) {
		struct kepler_snapshot *back = NULL;
		struct fixture f;
		char path[512];
		size_t len;
		void *blob;
		const char *diff;

		snprintf(path, sizeof(path), "%s/tests/golden/%s", KEPLER_SOURCE_DIR, older[i]);
		blob = slurp(path, &len);
		assert_non_null(blob);
		build(&f);
		f.snap.pods[0].owner_kind = f.snap.pods[0].owner_name = f.snap.pods[0].labels = "";
		KEPLER_OK(kepler_snapshot_decode(blob, len, &back, &err));
		diff = snapshot_diff(&f.snap, back);
		if (diff)
			fail_msg("%s: %s", older[i], diff);
		print_message("%s decodes: the fixture, no owners\n", older[i]);
		kepler_snapshot_free(back);
		free(blob);
		fixture_free(&f);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain),
		cmocka_unit_test(test_packed),
		cmocka_unit_test(test_older_formats),
	};

	return kepler_test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
