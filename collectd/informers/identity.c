// SPDX-License-Identifier: Apache-2.0
/*
 * A process's identity (informer_internal.h): its exe, type, cgroups,
 * container and VM, read from /proc once when the process is first seen
 * (or seen after an exec or a cgroup move), interned in the string pool.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "informer_internal.h"
#include "strpool.h"

#define CGROUP_MAX 8192
#define CMDLINE_MAX 8192

static bool maybe_hypervisor(const char *comm)
{
	return !strncmp(comm, "qemu", 4) || !strcmp(comm, "kvm");
}

/* Point *@field at the pool's copy of @s (NULL when out of memory), giving back the old one. */
static void set_string(struct kepler_informer *inf, const char **field, const char *s)
{
	kepler_strpool_put(*field);
	*field = kepler_strpool_get(inf->strings, s);
}

/*
 * The exe of a live process: its /proc/PID/exe, else (closed to us after
 * the privilege drop) what the source recorded at its exec, else what was
 * read at open if it is still that program.
 */
static void resolve_exe(struct kepler_informer *inf, const struct kepler_proc_sample *s,
			const struct kepler_pid_stat *st, struct kepler_proc_identity *id)
{
	char path[64], buf[4096];
	const char *found = NULL;
	ssize_t n;

	snprintf(path, sizeof(path), "%u/exe", st->pid);
	n = readlinkat(inf->procfd, path, buf, sizeof(buf) - 1);
	if (n >= 0) {
		buf[n] = '\0';
		found = buf;
	} else if (errno == ENOENT) {
		return;
	} else if (inf->ops->exe_of && s->key_start_ns &&
		   inf->ops->exe_of(inf, s->pid, s->key_start_ns, buf, sizeof(buf))) {
		found = buf;
	} else {
		found = kepler_exe_prefetch_find(inf->exes, st->pid, st->start_ticks, st->comm);
		if (!found && !inf->exes)
			inf->stats.skipped++; /* EACCES even for root on some hardened hosts */
	}
	if (found)
		set_string(inf, &id->exe, found);
}

/* The cgroups and container of process @pid, from /proc/PID/cgroup; false if unreadable. */
bool kepler_informer_read_cgroups(struct kepler_informer *inf, uint32_t pid, struct kepler_proc_identity *id)
{
	char path[64], buf[CGROUP_MAX], cg[4096];
	size_t len;

	snprintf(path, sizeof(path), "%u/cgroup", pid);
	if (kepler_read_file_at(inf->procfd, path, buf, sizeof(buf), &len) < 0)
		return false;
	kepler_cgroup_path(buf, len, cg, sizeof(cg));
	set_string(inf, &id->cgroup, cg);
	kepler_cgroup_cpu_path(buf, len, cg, sizeof(cg));
	set_string(inf, &id->cpu_cgroup, cg);
	if (kepler_cgroup_container(buf, len, &id->container))
		id->type = KEPLER_PROC_CONTAINER;
	return true;
}

/* The VM a hypervisor process runs, from its command line. */
void kepler_informer_resolve_vm(struct kepler_informer *inf, const struct kepler_pid_stat *st,
				struct kepler_proc_identity *id)
{
	char path[64], buf[CMDLINE_MAX];
	size_t len;

	if (!maybe_hypervisor(st->comm))
		return;
	snprintf(path, sizeof(path), "%u/cmdline", st->pid);
	if (kepler_read_file_at(inf->procfd, path, buf, sizeof(buf), &len) >= 0 &&
	    kepler_cmdline_vm(buf, len, &id->vm) && id->type == KEPLER_PROC_REGULAR)
		id->type = KEPLER_PROC_VM;
}

/*
 * A process gone before it was looked up: its container from the cgroup its
 * time ran in; on a hybrid node, where the v1 cpu cgroup names none, from
 * its v2 cgroup (a workload placed in the v2 hierarchy alone).
 */
static void resolve_gone(struct kepler_informer *inf, const struct kepler_proc_sample *s,
			 struct kepler_proc_identity *id)
{
	const char *path = s->cgroup_id ? kepler_cgroup_ids_path(&inf->cgroups, s->cgroup_id) : NULL, *v2;
	char text[4200];
	int n;

	if (path) {
		/* as /proc/PID/cgroup would show it: the v2 line, or the cpu controller's v1 line */
		n = snprintf(text, sizeof(text), inf->cgroups.tree.v1_cpu ? "1:cpu:%s\n" : "0::%s\n", path);
		if (n <= 0 || (size_t)n >= sizeof(text))
			return;
		set_string(inf, &id->cgroup, path);
		set_string(inf, &id->cpu_cgroup, path);
		if (kepler_cgroup_container(text, (size_t)n, &id->container)) {
			if (id->type == KEPLER_PROC_REGULAR)
				id->type = KEPLER_PROC_CONTAINER;
			return;
		}
	}
	if (!s->cgroup_id_v2 || inf->cgroups_v2.rootfd < 0 ||
	    !(v2 = kepler_cgroup_ids_path(&inf->cgroups_v2, s->cgroup_id_v2)))
		return;
	n = snprintf(text, sizeof(text), "0::%s\n", v2);
	if (n <= 0 || (size_t)n >= sizeof(text))
		return;
	set_string(inf, &id->cgroup, v2);
	if (kepler_cgroup_container(text, (size_t)n, &id->container) && id->type == KEPLER_PROC_REGULAR)
		id->type = KEPLER_PROC_CONTAINER;
}

/*
 * Whether a cgroup path read from /proc is the root's: "/", or from inside
 * a cgroup namespace (the DaemonSet's view) "/.." up to it, every segment
 * "..".
 */
static bool at_root(const char *path)
{
	if (!path)
		return true;
	for (const char *p = path; *p;) {
		const char *end = strchr(p, '/');
		size_t n = end ? (size_t)(end - p) : strlen(p);

		if (n && (n != 2 || memcmp(p, "..", 2)))
			return false;
		p += n + (end ? 1 : 0);
	}
	return true;
}

/*
 * cgroup and cmdline (a VM's) of a live process whose stat matched. One
 * that ended meanwhile (a zombie reads as the root cgroup in every
 * hierarchy; a reaped one not at all) gets the cgroup its time ran in,
 * from the eBPF source: under load, 1 % of a container's short processes
 * were read as zombies and lost to it.
 */
static void resolve_cgroup_vm(struct kepler_informer *inf, const struct kepler_proc_sample *s,
			      const struct kepler_pid_stat *st, struct kepler_proc_identity *id)
{
	if (!kepler_informer_read_cgroups(inf, st->pid, id) ||
	    (at_root(id->cgroup) && at_root(id->cpu_cgroup) && (s->cgroup_id || s->cgroup_id_v2)))
		resolve_gone(inf, s, id);
	kepler_informer_resolve_vm(inf, st, id);
}

/*
 * exe, cgroup and cmdline of a live process whose stat matched; @same_exe:
 * its program when known unchanged (no exec since it was identified).
 */
static void resolve_live(struct kepler_informer *inf, const struct kepler_proc_sample *s,
			 const struct kepler_pid_stat *st, const char *same_exe,
			 struct kepler_proc_identity *id)
{
	if (st->flags & KEPLER_PF_KTHREAD) {
		id->type = KEPLER_PROC_KERNEL;
		return;
	}
	if (same_exe)
		set_string(inf, &id->exe, same_exe);
	else
		resolve_exe(inf, s, st, id);
	resolve_cgroup_vm(inf, s, st, id);
}

/*
 * Read /proc/PID/stat unless the source did; true if it is still the
 * process of @s (same start time: a reused pid is another process).
 */
bool kepler_informer_stat_of(struct kepler_informer *inf, const struct kepler_proc_sample *s,
			     struct kepler_pid_stat *st)
{
	char path[32], buf[1024];
	size_t len;

	if (s->has_stat) {
		*st = s->stat;
		return true;
	}
	snprintf(path, sizeof(path), "%u/stat", s->pid);
	if (kepler_read_file_at(inf->procfd, path, buf, sizeof(buf), &len) < 0 ||
	    kepler_procfs_parse_pid_stat(buf, len, st) < 0)
		return false;
	return st->start_ticks * kepler_ns_per_tick() == s->start_time_ns;
}

/* Empty strings for what was not found; false (all freed) when out of memory. */
bool kepler_informer_complete_identity(struct kepler_informer *inf, struct kepler_proc_identity *id)
{
	id->in_container = id->container.id[0] != '\0';
	id->in_vm = id->vm.id[0] != '\0';
	if (!id->exe)
		id->exe = kepler_strpool_get(inf->strings, "");
	if (!id->cgroup)
		id->cgroup = kepler_strpool_get(inf->strings, "");
	if (!id->cpu_cgroup)
		id->cpu_cgroup = kepler_strpool_get(inf->strings, "");
	if (id->exe && id->cgroup && id->cpu_cgroup)
		return true;
	kepler_identity_free(id);
	return false;
}

/*
 * A process's identity (exe, cgroup, container, VM) and comm, from /proc
 * now, else the source's comm. With @ret_lifetime: its lifetime CPU time,
 * 0 when /proc did not say.
 */
int kepler_informer_identify(struct kepler_informer *inf, const struct kepler_proc_sample *s,
			     struct kepler_proc_entry *e, uint64_t *ret_lifetime, bool first_sight)
{
	struct kepler_proc_identity *id;
	struct kepler_pid_stat st;
	/*
	 * Identified again with no exec since (the eBPF source counts them: a
	 * move to another cgroup, a new comm by prctl): the same program, kept
	 * rather than looked up again, since after the privilege drop another
	 * user's /proc/PID/exe is closed to us and the `exes` map may have
	 * evicted its record by now.
	 */
	const char *same_exe = !first_sight && inf->kind == KEPLER_INFORMER_EBPF && e->pub.id &&
					       s->execs == e->execs && e->pub.id->exe[0]
				       ? e->pub.id->exe
				       : NULL;

	*ret_lifetime = 0;
	if (first_sight && kepler_informer_identify_from_census(inf, s, e, ret_lifetime))
		return 0;
	id = calloc(1, sizeof(*id));
	if (!id)
		return -ENOMEM;
	id->container.runtime = id->vm.hypervisor = "";
	memcpy(e->pub.comm, s->comm, sizeof(e->pub.comm));
	if (s->kthread)
		id->type = KEPLER_PROC_KERNEL;
	if (kepler_informer_stat_of(inf, s, &st)) {
		memcpy(e->pub.comm, st.comm, sizeof(e->pub.comm));
		resolve_live(inf, s, &st, same_exe, id);
		*ret_lifetime = (st.utime_ticks + st.stime_ticks) * kepler_ns_per_tick();
	} else {
		if (!s->exited)
			inf->stats.vanished++;
		resolve_gone(inf, s, id);
	}
	if (!kepler_informer_complete_identity(inf, id))
		return -ENOMEM;
	e->pub.id = id;
	memcpy(e->identified_comm, s->comm, sizeof(e->identified_comm));
	e->execs = s->execs;
	e->cgroup_id = s->cgroup_id;
	e->cgroup_id_v2 = s->cgroup_id_v2;
	return 0;
}

int kepler_informer_identify_piece(struct kepler_informer *inf, const struct kepler_proc_piece *pc,
				   const struct kepler_proc_identity *was, struct kepler_proc_entry *e)
{
	struct kepler_proc_identity *id = calloc(1, sizeof(*id));

	if (!id)
		return -ENOMEM;
	if (was) {
		*id = *was;
		/* each string once more from the pool (interned: the same pointers, counted) */
		id->exe = id->cgroup = id->cpu_cgroup = NULL;
		set_string(inf, &id->exe, was->exe);
		set_string(inf, &id->cgroup, was->cgroup);
		set_string(inf, &id->cpu_cgroup, was->cpu_cgroup);
	} else {
		struct kepler_proc_sample ran = { .pid = pc->pid,
						  .cgroup_id = pc->cgroup_id,
						  .cgroup_id_v2 = pc->cgroup_id_v2,
						  .exited = true };

		id->container.runtime = id->vm.hypervisor = "";
		resolve_gone(inf, &ran, id);
		if (pc->exe[0])
			set_string(inf, &id->exe, pc->exe);
	}
	if (!kepler_informer_complete_identity(inf, id))
		return -ENOMEM;
	e->pub.id = id;
	memcpy(e->pub.comm, pc->comm, sizeof(e->pub.comm));
	e->pub.comm[sizeof(e->pub.comm) - 1] = '\0';
	memcpy(e->identified_comm, e->pub.comm, sizeof(e->identified_comm));
	e->execs = pc->execs;
	e->cgroup_id = pc->cgroup_id;
	e->cgroup_id_v2 = pc->cgroup_id_v2;
	return 0;
}

/* A new process: its identity, comm and the offset to its lifetime CPU time. */
int kepler_informer_resolve_new(struct kepler_informer *inf, const struct kepler_proc_sample *s,
				struct kepler_proc_entry *e)
{
	uint64_t lifetime;
	int r = kepler_informer_identify(inf, s, e, &lifetime, true);

	if (r == 0 && lifetime > s->cpu_ns)
		e->offset = lifetime - s->cpu_ns; /* CPU time from before we watched */
	return r;
}

void kepler_identity_free(struct kepler_proc_identity *id)
{
	if (id) {
		kepler_strpool_put(id->exe);
		kepler_strpool_put(id->cgroup);
		kepler_strpool_put(id->cpu_cgroup);
		free(id);
	}
}
