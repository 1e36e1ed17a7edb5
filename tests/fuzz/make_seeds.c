// SPDX-License-Identifier: Apache-2.0
/*
 * Writes the fuzzer's seed corpus: encoded fixture snapshots of a few
 * sizes, plain (1.5), packed as the store writes them (4.0, records as
 * bit-packed blocks of columns, compressed, and stored in raw blocks as the
 * store keeps small snapshots) and packed as collectors before 4.0 wrote
 * them (3.0, columns of whole bytes; 2.2, no columns).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../store/blob_format.h"
#include "../snapshot_fixture.h"
#include "kepler/history.h"
#include <zstd.h>

enum seed_kind { PLAIN, PACKED, STORED, PACKED_3, PACKED_2, KINDS };

static const char *const suffix[KINDS] = { "", "-packed", "-stored", "-packed-3.0", "-packed-2.2" };

/* A 4.0 blob repacked as @major.@minor: the same image, its major lowered. */
static int repack_as(void **blob, size_t *len, uint16_t major, uint16_t minor)
{
	struct blob_header h;
	uint8_t *image;
	void *old;
	size_t old_len;

	memcpy(&h, *blob, sizeof(h));
	if (kepler_blob_unpack(*blob, *len, &h, &image, NULL) < 0)
		return -1;
	h.major = major;
	h.minor = minor;
	memcpy(image, &h, sizeof(h));
	if (kepler_blob_pack(image, h.total_size, 1, &old, &old_len) < 0) {
		free(image);
		return -1;
	}
	free(image);
	free(*blob);
	*blob = old;
	*len = old_len;
	return 0;
}

static int write_seed(const char *dir, size_t n, enum seed_kind kind, uint64_t seed)
{
	struct fixture f;
	char path[4096];
	void *blob;
	size_t len;
	FILE *out;
	int r;

	fixture_build(&f, n, seed);
	r = kind == PLAIN ? kepler_snapshot_encode(&f.snap, &blob, &len, NULL)
			  : kepler_snapshot_encode_packed(&f.snap, kind == STORED ? KEPLER_PACK_STORED : 1,
							  &blob, &len, NULL);
	fixture_free(&f);
	if (r < 0 || (kind == PACKED_2 && repack_as(&blob, &len, 2, 2) < 0) ||
	    (kind == PACKED_3 && repack_as(&blob, &len, 3, 0) < 0))
		return -1;
	snprintf(path, sizeof(path), "%s/seed-%zu%s.blob", dir, n, suffix[kind]);
	out = fopen(path, "wb");
	r = out && fwrite(blob, 1, len, out) == len ? 0 : -1;
	if (out && fclose(out) != 0)
		r = -1;
	if (r < 0)
		perror(path);
	free(blob);
	return r;
}

static int write_file(const char *dir, const char *name, uint8_t prefix, const void *p, size_t n)
{
	char path[4096];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!(f = fopen(path, "wb")))
		return -1;
	ok = fwrite(&prefix, 1, 1, f) == 1 && fwrite(p, 1, n, f) == n;
	return fclose(f) == 0 && ok ? 0 : -1;
}

/* fuzz_history's seeds: a ledger of fixture snapshots as a whole record (1) and as its payload (0), an intensity file (2). */
static int history_seeds(const char *dir)
{
	struct kepler_history *h = kepler_history_new();
	struct kepler_history_header hdr = { .period_s = 3600, .boundary_ns = 3600000000000ULL };
	struct kepler_error err = { 0 };
	const char *carbon = "# seed\n2026-11-01T00:00:00Z,300\n2026-11-01T06:00:00+01:00,250.5\n";
	void *blob, *pay;
	size_t len, plen;
	int r = -1;

	for (uint64_t i = 1; h && i <= 3; i++) {
		struct fixture f = { 0 };

		fixture_build(&f, 12, i);
		f.snap.seq = i;
		f.snap.wall_ns = i * 1000000000ULL;
		kepler_history_add(h, &f.snap, i == 2 ? 0 : 420000);
		fixture_free(&f);
	}
	if (!h || kepler_history_encode(h, &hdr, 0, &blob, &len, &err) < 0)
		goto out;
	plen = (size_t)ZSTD_getFrameContentSize((uint8_t *)blob + 40, len - 40);
	if ((pay = malloc(plen)) && ZSTD_decompress(pay, plen, (uint8_t *)blob + 40, len - 40) == plen &&
	    write_file(dir, "payload", 0, pay, plen) == 0 && write_file(dir, "record", 1, blob, len) == 0 &&
	    write_file(dir, "carbon", 2, carbon, strlen(carbon)) == 0)
		r = 0;
	free(pay);
	free(blob);
out:
	kepler_history_free(h);
	return r;
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 0, 1, 2, 5, 12, 70 }; /* 70: more than one block of 64 */
	uint64_t seed = 0;

	if (argc == 3 && !strcmp(argv[1], "--history"))
		return history_seeds(argv[2]) < 0;
	if (argc != 2) {
		fprintf(stderr, "usage: make_seeds [--history] DIR\n");
		return 2;
	}
	for (int kind = 0; kind < KINDS; kind++)
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
			if (write_seed(argv[1], sizes[i], (enum seed_kind)kind, seed++) < 0)
				return 1;
	return 0;
}
