// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target for the collector's memory of forgotten identities
 * (collectd/attribution/memory.c), the text it reads back from the store's
 * meta "collector.memory" at start: loaded into a ledger resumed from a
 * snapshot with three zones, then built once (which remaps what was loaded)
 * and saved again. It must never crash, leak or read out of bounds, and
 * what it saves must load again with nothing skipped.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ledger.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct kepler_ledger_input input(uint64_t t, bool first)
{
	static const char *const names[] = { "package", "core", "dram" };
	struct kepler_ledger_input in = {
		.wall_ns = 1800000000000000000ULL + t,
		.mono_ns = t,
		.interval_ns = 1000000000ULL,
		.first = first,
		.nzones = 3,
		.busy_delta_ns = 1,
		.total_delta_ns = 2,
		.usage_ratio = 0.5,
	};

	for (unsigned z = 0; z < 3; z++)
		in.zones[z] = (struct kepler_ledger_zone_in){
			.name = names[z], .path = "p", .source = KEPLER_SOURCE_RAPL, .delta_uj = 1000
		};
	return in;
}

/* A ledger resumed from a snapshot of three zones, ready for the memory. */
static struct kepler_ledger *resumed(void)
{
	static struct kepler_ledger *first;
	static struct kepler_snapshot *prev;
	struct kepler_ledger_params p = { .terminated_ttl_ns = 1000000000ULL, .max_terminated = 8 };
	struct kepler_ledger_input in = input(0, true);
	struct kepler_ledger *l;
	struct kepler_error err;

	if (!first &&
	    (kepler_ledger_new(&p, &first, &err) < 0 || kepler_ledger_build(first, &in, &prev, &err) < 0))
		abort();
	if (kepler_ledger_new(&p, &l, &err) < 0 || kepler_ledger_resume(l, prev, NULL, NULL) < 0)
		abort();
	return l;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kepler_ledger *l = resumed(), *again;
	struct kepler_ledger_input in = input(5000000000ULL, true);
	struct kepler_snapshot *s;
	struct kepler_error err;
	size_t skipped;
	char *text;

	if (kepler_ledger_memory_load(l, (const char *)data, size, &skipped, &err) == 0 &&
	    kepler_ledger_build(l, &in, &s, &err) == 0 && kepler_ledger_memory_save(l, &text) == 0) {
		/* what it saves loads again whole */
		again = resumed();
		if (kepler_ledger_memory_load(again, text, strlen(text), &skipped, &err) != 0 || skipped)
			abort();
		kepler_ledger_free(again);
		free(text);
	}
	kepler_ledger_free(l);
	return 0;
}
