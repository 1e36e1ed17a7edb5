// SPDX-License-Identifier: Apache-2.0
/* Writes the fuzzer's seed corpus: encoded fixture snapshots of a few sizes, plain (1.3) and packed (2.0). */
#include <stdio.h>
#include <stdlib.h>

#include "../snapshot_fixture.h"

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 0, 1, 2, 5, 12 };

	if (argc != 2) {
		fprintf(stderr, "usage: make_seeds DIR\n");
		return 2;
	}
	for (size_t i = 0; i < 2 * sizeof(sizes) / sizeof(sizes[0]); i++) {
		const size_t n = sizes[i % (sizeof(sizes) / sizeof(sizes[0]))];
		const int packed = i >= sizeof(sizes) / sizeof(sizes[0]);
		struct fixture f;
		char path[4096];
		void *blob;
		size_t len;
		FILE *out;

		fixture_build(&f, n, i);
		if ((packed ? kepler_snapshot_encode_packed(&f.snap, 1, &blob, &len, NULL)
			    : kepler_snapshot_encode(&f.snap, &blob, &len, NULL)) < 0)
			return 1;
		snprintf(path, sizeof(path), "%s/seed-%zu%s.blob", argv[1], n, packed ? "-packed" : "");
		out = fopen(path, "wb");
		if (!out || fwrite(blob, 1, len, out) != len || fclose(out) != 0) {
			perror(path);
			return 1;
		}
		free(blob);
		fixture_free(&f);
	}
	return 0;
}
