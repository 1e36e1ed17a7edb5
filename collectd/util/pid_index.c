// SPDX-License-Identifier: Apache-2.0
/* The collector's index of processes by (pid, start time): see pid_index.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pid_index.h"

int kepler_pid_index_reserve(struct kepler_pid_index *x, size_t n)
{
	size_t want = 64;
	struct kepler_pid_slot *slots;

	while (want < 2 * n)
		want *= 2;
	if (want <= x->nslots)
		return 0;
	slots = calloc(want, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	free(x->slots);
	x->slots = slots;
	x->nslots = want;
	return 1;
}

void kepler_pid_index_clear(struct kepler_pid_index *x)
{
	if (x->slots)
		memset(x->slots, 0, x->nslots * sizeof(*x->slots));
}

void kepler_pid_index_free(struct kepler_pid_index *x)
{
	free(x->slots);
	x->slots = NULL;
	x->nslots = 0;
}
