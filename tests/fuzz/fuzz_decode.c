// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target for the snapshot decoder. Inputs long enough to hold a
 * header get a correct checksum first, so the fuzzer explores the
 * structural validation behind it instead of stopping at the checksum.
 * Decoding may fail; it must never crash, leak or read out of bounds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "blob_format.h"
#include "kepler/snapshot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kepler_snapshot *snap;
	uint8_t *copy = malloc(size ? size : 1);

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (size >= sizeof(struct blob_header)) {
		uint64_t sum = kepler_blob_checksum(copy, size), image;

		/*
		 * A packed header may claim an image of up to BLOB_MAX_IMAGE
		 * (1 GiB), and 3.x columns can fill it from a few bytes: a
		 * decode the store allows, but each one costs the fuzzer a
		 * second and a GiB. Claims above 16 MiB are cut to 16 MiB (the
		 * bound itself is checked by test_snapshot_codec).
		 */
		memcpy(&image, copy + offsetof(struct blob_header, total_size), sizeof(image));
		if (image > (16u << 20) && image <= BLOB_MAX_IMAGE) {
			image = 16u << 20;
			memcpy(copy + offsetof(struct blob_header, total_size), &image, sizeof(image));
			sum = kepler_blob_checksum(copy, size);
		}

		memcpy(copy + offsetof(struct blob_header, checksum), &sum, sizeof(sum));
	}
	if (kepler_snapshot_decode(copy, size, &snap, NULL) == 0) {
		/* touch every string so ASan checks them */
		size_t n = 0;

		for (size_t i = 0; i < snap->nprocesses; i++) {
			const struct kepler_usage *u = &snap->processes[i].usage;

			n += strlen(snap->processes[i].comm) + strlen(snap->processes[i].exe);
			/* and every zone energy, read in place from the image */
			for (size_t z = 0; z < snap->nzones; z++)
				n += u->zones[z].delta_uj + (u->idle ? u->idle[z].delta_uj : 0);
		}
		for (size_t i = 0; i < snap->nzones; i++)
			n += strlen(snap->zones[i].name);
		(void)n;
		kepler_snapshot_free(snap);
	}
	free(copy);
	return 0;
}
