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

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 0, 1, 2, 5, 12, 70 }; /* 70: more than one block of 64 */
	uint64_t seed = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: make_seeds DIR\n");
		return 2;
	}
	for (int kind = 0; kind < KINDS; kind++)
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
			if (write_seed(argv[1], sizes[i], (enum seed_kind)kind, seed++) < 0)
				return 1;
	return 0;
}
