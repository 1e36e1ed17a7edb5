// SPDX-License-Identifier: Apache-2.0
/*
 * The census at open (informer_internal.h): every running process's
 * identity in one walk, from a BPF task iterator or /proc, so that the
 * eBPF informer's first refreshes, which see thousands of processes for
 * the first time, need not read /proc for each.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "informer_internal.h"
#include "kepler/clock.h"
#include "kepler/log.h"
#include "strpool.h"

/*
 * The census being taken at open. Processes in the same cgroups of every
 * hierarchy (the same token from the source) have the same
 * /proc/PID/cgroup: it is read once per token (a node's thousands of
 * processes sit in tens or hundreds of cgroups), parsed, and copied.
 */
struct census_cgroups {
	uint64_t token;                  /* 0: an empty slot */
	const char *cgroup, *cpu_cgroup; /* pooled */
	struct kepler_container_ref container;
	enum kepler_process_type type;
};

struct census {
	struct kepler_informer *inf;
	struct kepler_exe_prefetch *x;
	struct census_cgroups *slots; /* open addressing on the token */
	size_t nslots, used;
	size_t cgroup_reads; /* /proc/PID/cgroup files read */
};

static void census_cgroups_free(struct census *c)
{
	for (size_t i = 0; i < c->nslots; i++) {
		kepler_strpool_put(c->slots[i].cgroup);
		kepler_strpool_put(c->slots[i].cpu_cgroup);
	}
	free(c->slots);
	c->slots = NULL;
	c->nslots = c->used = 0;
}

static struct census_cgroups *census_slot(struct census_cgroups *slots, size_t nslots, uint64_t token)
{
	size_t i = (size_t)((token >> 6) * 0x9E3779B97F4A7C15ULL) & (nslots - 1);

	while (slots[i].token && slots[i].token != token)
		i = (i + 1) & (nslots - 1);
	return &slots[i];
}

static bool census_grow(struct census *c)
{
	size_t nslots = c->nslots ? c->nslots * 2 : 256;
	struct census_cgroups *slots = calloc(nslots, sizeof(*slots));

	if (!slots)
		return false;
	for (size_t i = 0; i < c->nslots; i++)
		if (c->slots[i].token)
			*census_slot(slots, nslots, c->slots[i].token) = c->slots[i];
	free(c->slots);
	c->slots = slots;
	c->nslots = nslots;
	return true;
}

/* Fill @id's cgroups for process @pid, whose cgroups are those of @token (0: unknown). */
static void census_cgroups_of(struct census *c, uint64_t token, uint32_t pid, struct kepler_proc_identity *id)
{
	struct census_cgroups *slot;

	if (!token || ((c->used + 1) * 2 > c->nslots && !census_grow(c))) {
		c->cgroup_reads++;
		kepler_informer_read_cgroups(c->inf, pid, id);
		return;
	}
	slot = census_slot(c->slots, c->nslots, token);
	if (slot->token) {
		id->cgroup = kepler_strpool_ref(slot->cgroup);
		id->cpu_cgroup = kepler_strpool_ref(slot->cpu_cgroup);
		id->container = slot->container;
		id->type = slot->type;
		return;
	}
	c->cgroup_reads++;
	if (!kepler_informer_read_cgroups(c->inf, pid, id) || !id->cgroup || !id->cpu_cgroup)
		return; /* gone, or out of memory: the next process of this token reads it */
	slot->cgroup = kepler_strpool_ref(id->cgroup);
	slot->cpu_cgroup = kepler_strpool_ref(id->cpu_cgroup);
	slot->container = id->container;
	slot->type = id->type;
	slot->token = token;
	c->used++;
}

/* The identity of a process running at open (the census, exe_prefetch.c); NULL when out of memory. */
static struct kepler_proc_identity *census_identity(void *arg, const struct kepler_pid_stat *st,
						    const char *exe, uint64_t cgroups)
{
	struct census *c = arg;
	struct kepler_proc_identity *id = calloc(1, sizeof(*id));

	if (!id)
		return NULL;
	id->container.runtime = id->vm.hypervisor = "";
	if (st->flags & KEPLER_PF_KTHREAD) {
		id->type = KEPLER_PROC_KERNEL;
	} else {
		id->exe = kepler_strpool_get(c->inf->strings, exe);
		census_cgroups_of(c, cgroups, st->pid, id);
		kepler_informer_resolve_vm(c->inf, st, id);
	}
	return kepler_informer_complete_identity(c->inf, id) ? id : NULL;
}

static int census_add(void *arg, const struct kepler_census_proc *p)
{
	struct census *c = arg;

	return kepler_exe_prefetch_add(c->x, p, census_identity, c);
}

/*
 * Every process's identity now, in one walk (see identify_from_census):
 * from the source when it can take a census whole (ebpf: a BPF task
 * iterator), else from /proc (three files per process). NULL: out of memory.
 */
struct kepler_exe_prefetch *kepler_informer_take_census(struct kepler_informer *inf, bool iterator)
{
	struct census c = { .inf = inf };
	struct kepler_error e = { 0 };
	uint64_t t0 = kepler_mono_ns();
	size_t n = 0;

	if (iterator && inf->ops->census) {
		c.x = kepler_exe_prefetch_new(kepler_identity_free);
		if (c.x && inf->ops->census(inf, census_add, &c, &n, &e) == 0) {
			kepler_exe_prefetch_done(c.x);
			inf->stats.census_by_iterator = true;
			kepler_debug(
				"census: %zu processes from a BPF task iterator, %zu cgroup files read, in %.1f ms",
				n, c.cgroup_reads, (double)(kepler_mono_ns() - t0) / 1e6);
			census_cgroups_free(&c);
			return c.x;
		}
		kepler_exe_prefetch_free(c.x);
		census_cgroups_free(&c);
		c.cgroup_reads = 0;
		kepler_info("census by BPF task iterator unavailable (%s): reading /proc instead",
			    c.x ? e.msg : "out of memory");
	}
	c.x = kepler_exe_prefetch_read(inf->procfd, census_identity, kepler_identity_free, &c);
	kepler_debug("census: %zu processes from /proc in %.1f ms", kepler_exe_prefetch_count(c.x),
		     (double)(kepler_mono_ns() - t0) / 1e6);
	return c.x;
}

/*
 * The identity the census read for @s, if it is still that process and ran
 * no other program since (no exec seen). Its lifetime CPU time then stands
 * for now's when the source has counted less than a tick since (the
 * offset is no less exact than a tick either way); else /proc says.
 */
bool kepler_informer_identify_from_census(struct kepler_informer *inf, const struct kepler_proc_sample *s,
					  struct kepler_proc_entry *e, uint64_t *ret_lifetime)
{
	uint64_t tick = kepler_ns_per_tick(), lifetime_ns;
	struct kepler_proc_identity *id;
	struct kepler_pid_stat st;

	if (!inf->census_until_ns || s->execs || !s->start_time_ns)
		return false;
	id = kepler_exe_prefetch_take(inf->exes, s->pid, s->start_time_ns / tick, s->comm, &lifetime_ns);
	if (!id)
		return false;
	if (s->kthread)
		id->type = KEPLER_PROC_KERNEL;
	*ret_lifetime = lifetime_ns;
	if (s->cpu_ns >= tick)
		*ret_lifetime =
			kepler_informer_stat_of(inf, s, &st) ? (st.utime_ticks + st.stime_ticks) * tick : 0;
	memcpy(e->pub.comm, s->comm, sizeof(e->pub.comm));
	e->pub.id = id;
	memcpy(e->identified_comm, s->comm, sizeof(e->identified_comm));
	e->execs = s->execs;
	e->cgroup_id = s->cgroup_id;
	e->cgroup_id_v2 = s->cgroup_id_v2;
	inf->stats.census_hits++;
	return true;
}
