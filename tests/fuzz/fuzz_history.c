// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target for the store's history: the tier record decoder and
 * the carbon intensity file. The first byte chooses: 0, the input is a
 * tier record's payload, wrapped in a valid header (format 1.1) and zstd
 * frame with its checksum so that the fuzzer explores the rows behind them; 1, the input
 * is a whole record as stored; else, an intensity file. Decoding may fail;
 * it must never crash, leak or read out of bounds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#include <zstd.h>

#include "kepler/carbon.h"
#include "kepler/history.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void decode(const void *blob, size_t len)
{
	struct kepler_history *h = NULL;
	struct kepler_history_header hdr;
	struct kepler_error err = { 0 };

	if (kepler_history_decode(blob, len, &h, &hdr, &err) == 0) {
		struct kepler_history_header again = hdr;
		size_t n;
		void *b;

		/* what decodes encodes again */
		if (kepler_history_encode(h, &again, 0, &b, &n, &err) == 0)
			free(b);
		kepler_history_free(h);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	if (data[0] == 0) {
		size_t bound = ZSTD_compressBound(size - 1);
		uint8_t *blob = malloc(40 + bound);
		size_t c;
		uint64_t v;

		if (!blob)
			return 0;
		memset(blob, 0, 40);
		memcpy(blob, "KHIS", 4);
		blob[4] = 1; /* format 1.1 */
		blob[6] = 1;
		blob[12] = 60; /* a 60 s tier */
		c = ZSTD_compress(blob + 40, bound, data + 1, size - 1, 1);
		if (!ZSTD_isError(c)) {
			v = size - 1;
			for (int i = 0; i < 8; i++)
				blob[24 + i] = (uint8_t)(v >> (8 * i));
			v = XXH3_64bits(blob, 40 + c); /* the checksum field still 0 */
			for (int i = 0; i < 8; i++)
				blob[32 + i] = (uint8_t)(v >> (8 * i));
			decode(blob, 40 + c);
		}
		free(blob);
	} else if (data[0] == 1) {
		decode(data + 1, size - 1);
	} else {
		struct kepler_carbon c;
		struct kepler_error err = { 0 };

		if (kepler_carbon_parse((const char *)data + 1, size - 1, &c, &err) == 0) {
			kepler_carbon_at(&c, UINT64_MAX / 2);
			kepler_carbon_free(&c);
		}
	}
	return 0;
}
