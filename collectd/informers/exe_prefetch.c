// SPDX-License-Identifier: Apache-2.0
/*
 * The processes running when the informer opens, read once in one walk of
 * /proc while the collector may still read other users' /proc/PID/exe
 * (CAP_SYS_PTRACE). After the privilege drop those links are closed to it;
 * a process started later is named by the eBPF program at its exec
 * (ops->exe_of). An entry serves only the process it was read from: same
 * pid, same start time, same comm (a later exec changes the comm, and then
 * the entry is stale).
 *
 * With a builder (the eBPF informer), each entry also holds the process's
 * whole identity (exe, cgroups, container, VM) and its lifetime CPU time,
 * so that the first refreshes, which see thousands of processes for the
 * first time, take them from here instead of reading /proc again (see
 * kepler_exe_prefetch_take). The eBPF informer's census comes from a BPF
 * task iterator (census_ebpf.c, through kepler_exe_prefetch_add), and from
 * the walk of /proc here only where the iterator cannot load.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "informer_internal.h"

struct exe_entry {
	uint32_t pid;
	uint64_t start_ticks;
	uint64_t lifetime_ns; /* utime + stime when read */
	char comm[KEPLER_COMM_MAX];
	char *exe;
	struct kepler_proc_identity *id; /* with a builder; NULL once taken */
};

struct kepler_exe_prefetch {
	struct exe_entry *items; /* sorted by pid */
	size_t count, cap;
	kepler_identity_free_fn free_id;
};

static int by_pid(const void *a, const void *b)
{
	const struct exe_entry *x = a, *y = b;

	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static struct exe_entry *append(struct kepler_exe_prefetch *x)
{
	if (x->count == x->cap) {
		size_t cap = x->cap ? x->cap * 2 : 256;
		struct exe_entry *items = realloc(x->items, cap * sizeof(*items));

		if (!items)
			return NULL;
		x->items = items;
		x->cap = cap;
	}
	return &x->items[x->count];
}

/* Append @pid's entry (a kernel thread's @exe is ""); @st is what stat says of it. */
static int add_entry(struct kepler_exe_prefetch *x, const struct kepler_pid_stat *st, const char *exe,
		     uint64_t lifetime_ns, uint64_t cgroups, kepler_identity_build_fn build, void *arg)
{
	struct exe_entry *e = append(x);

	if (!e)
		return -ENOMEM;
	memset(e, 0, sizeof(*e));
	e->exe = strdup(exe);
	if (!e->exe)
		return -ENOMEM;
	if (build) {
		e->id = build(arg, st, exe, cgroups);
		if (!e->id) {
			free(e->exe);
			return -ENOMEM;
		}
	}
	e->pid = st->pid;
	e->start_ticks = st->start_ticks;
	e->lifetime_ns = lifetime_ns;
	memcpy(e->comm, st->comm, sizeof(e->comm));
	x->count++;
	return 0;
}

static int add_one(struct kepler_exe_prefetch *x, int procfd, uint32_t pid, kepler_identity_build_fn build,
		   void *arg)
{
	char path[64], buf[4096];
	struct kepler_pid_stat st;
	size_t len;
	ssize_t n = 0;

	snprintf(path, sizeof(path), "%u/stat", pid);
	if (kepler_read_file_at(procfd, path, buf, sizeof(buf), &len) < 0 ||
	    kepler_procfs_parse_pid_stat(buf, len, &st) < 0)
		return 0;
	if ((st.flags & KEPLER_PF_KTHREAD) && !build)
		return 0;
	if (!(st.flags & KEPLER_PF_KTHREAD)) {
		snprintf(path, sizeof(path), "%u/exe", pid);
		n = readlinkat(procfd, path, buf, sizeof(buf) - 1);
		if (n <= 0 && !build)
			return 0;
	}
	buf[n > 0 ? n : 0] = '\0';
	return add_entry(x, &st, buf, (st.utime_ticks + st.stime_ticks) * kepler_ns_per_tick(), 0, build,
			 arg);
}

struct kepler_exe_prefetch *kepler_exe_prefetch_new(kepler_identity_free_fn free_id)
{
	struct kepler_exe_prefetch *x = calloc(1, sizeof(*x));

	if (x)
		x->free_id = free_id;
	return x;
}

int kepler_exe_prefetch_add(struct kepler_exe_prefetch *x, const struct kepler_census_proc *p,
			    kepler_identity_build_fn build, void *arg)
{
	struct kepler_pid_stat st = { .pid = p->pid, .state = 'S' };

	memcpy(st.comm, p->comm, sizeof(st.comm));
	st.flags = p->kthread ? KEPLER_PF_KTHREAD : 0;
	st.start_ticks = p->start_time_ns / kepler_ns_per_tick();
	return add_entry(x, &st, p->kthread ? "" : p->exe, p->lifetime_ns, p->cgroups, build, arg);
}

void kepler_exe_prefetch_done(struct kepler_exe_prefetch *x)
{
	if (x && x->count)
		qsort(x->items, x->count, sizeof(*x->items), by_pid);
}

struct kepler_exe_prefetch *kepler_exe_prefetch_read(int procfd, kepler_identity_build_fn build,
						     kepler_identity_free_fn free_id, void *arg)
{
	struct kepler_exe_prefetch *x = kepler_exe_prefetch_new(free_id);
	struct dirent *de;
	DIR *d;
	int fd;

	if (!x)
		return NULL;
	fd = openat(procfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return x; /* nothing read: every lookup misses */
	}
	while ((de = readdir(d))) {
		char *end;
		unsigned long pid = strtoul(de->d_name, &end, 10);

		if (*end || pid == 0 || pid > UINT32_MAX)
			continue;
		if (add_one(x, procfd, (uint32_t)pid, build, arg) < 0) {
			closedir(d);
			kepler_exe_prefetch_free(x);
			return NULL;
		}
	}
	closedir(d);
	kepler_exe_prefetch_done(x);
	return x;
}

static struct exe_entry *find(const struct kepler_exe_prefetch *x, uint32_t pid, uint64_t start_ticks,
			      const char *comm)
{
	struct exe_entry key = { .pid = pid }, *e;

	if (!x || !x->count)
		return NULL;
	e = bsearch(&key, x->items, x->count, sizeof(*x->items), by_pid);
	if (!e || e->start_ticks != start_ticks || strncmp(e->comm, comm, sizeof(e->comm)) != 0)
		return NULL;
	return e;
}

const char *kepler_exe_prefetch_find(const struct kepler_exe_prefetch *x, uint32_t pid, uint64_t start_ticks,
				     const char *comm)
{
	const struct exe_entry *e = find(x, pid, start_ticks, comm);

	return e && e->exe[0] ? e->exe : NULL;
}

struct kepler_proc_identity *kepler_exe_prefetch_take(struct kepler_exe_prefetch *x, uint32_t pid,
						      uint64_t start_ticks, const char *comm,
						      uint64_t *ret_lifetime_ns)
{
	struct exe_entry *e = find(x, pid, start_ticks, comm);
	struct kepler_proc_identity *id;

	if (!e || !e->id)
		return NULL;
	id = e->id;
	e->id = NULL;
	*ret_lifetime_ns = e->lifetime_ns;
	return id;
}

void kepler_exe_prefetch_drop_identities(struct kepler_exe_prefetch *x)
{
	for (size_t i = 0; x && i < x->count; i++) {
		if (x->items[i].id && x->free_id)
			x->free_id(x->items[i].id);
		x->items[i].id = NULL;
	}
}

size_t kepler_exe_prefetch_count(const struct kepler_exe_prefetch *x)
{
	return x ? x->count : 0;
}

void kepler_exe_prefetch_free(struct kepler_exe_prefetch *x)
{
	if (!x)
		return;
	kepler_exe_prefetch_drop_identities(x);
	for (size_t i = 0; i < x->count; i++)
		free(x->items[i].exe);
	free(x->items);
	free(x);
}
