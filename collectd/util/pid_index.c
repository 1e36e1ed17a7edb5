// SPDX-License-Identifier: Apache-2.0
/* The collector's index of processes by (pid, start time): see pid_index.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pid_index.h"

int kepler_pid_index_reserve(struct kepler_pid_index *x, size_t n)
{
	size_t want = 64, least = n + n / 2;
	struct kepler_pid_slot *slots;

	if (least <= x->nslots) /* (called for each push: no loop then) */
		return 0;
	while (want < least)
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
