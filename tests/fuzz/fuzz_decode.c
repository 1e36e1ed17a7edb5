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
		uint64_t sum = kepler_blob_checksum(copy, size);

		memcpy(copy + offsetof(struct blob_header, checksum), &sum, sizeof(sum));
	}
	if (kepler_snapshot_decode(copy, size, &snap, NULL) == 0) {
		/* touch every string so ASan checks them */
		size_t n = 0;

		for (size_t i = 0; i < snap->nprocesses; i++)
			n += strlen(snap->processes[i].comm) + strlen(snap->processes[i].exe);
		for (size_t i = 0; i < snap->nzones; i++)
			n += strlen(snap->zones[i].name);
		(void)n;
		kepler_snapshot_free(snap);
	}
	free(copy);
	return 0;
}
