// SPDX-License-Identifier: Apache-2.0
/*
 * Privileges of the collector. At start, as root, it loads the eBPF program
 * and opens perf events (CAP_BPF, CAP_PERFMON), the energy files (root-only
 * since Linux 5.10), every running process's exe (CAP_SYS_PTRACE) and the
 * store. Then it needs none of it: the BPF maps and energy files are used
 * through descriptors it keeps, a new process's program is recorded by the
 * eBPF program at exec, and the rest of /proc it reads is world-readable.
 * So it becomes an unprivileged user with nothing (privileges.h).
 */
#include <errno.h>
#include <grp.h>
#include <linux/bpf.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kepler/log.h"
#include "privileges.h"
#include "syscall_filter.h"

static bool has_cap(cap_t caps, cap_value_t cap)
{
	cap_flag_value_t v = CAP_CLEAR;

	return caps && cap_get_flag(caps, cap, CAP_EFFECTIVE, &v) == 0 && v == CAP_SET;
}

void kepler_privileges_check(void)
{
	cap_t caps = cap_get_proc();

	if (!has_cap(caps, CAP_SYS_PTRACE))
		kepler_warn("no CAP_SYS_PTRACE: the exe of other users' processes running at start will "
			    "be empty (run kepler-collectd as root)");
	if (!has_cap(caps, CAP_BPF) && !has_cap(caps, CAP_SYS_ADMIN))
		kepler_info("no CAP_BPF: the eBPF informer cannot load (run as root for it)");
	if (caps)
		cap_free(caps);
}

/*
 * The uid the collector takes when collector.user does not exist: one no
 * account uses (Debian reserves 65000-65533 and allocates none of them), so
 * that the store never belongs to a user anything else runs as. nobody, the
 * fallback before, is what the exporter and many daemons run as: as nobody
 * one could chmod, zero or truncate the store, and signal the collector.
 */
#define KEPLER_OWN_UID 65432

/* The user to become: @name, a numeric uid, or KEPLER_OWN_UID when no such user exists. */
static int resolve_user(const char *name, uid_t *uid, gid_t *gid, char *shown, size_t size,
			struct kepler_error *err)
{
	struct passwd *pw = getpwnam(name);
	struct group *nog;
	char *end;
	unsigned long n;

	if (pw) {
		*uid = pw->pw_uid;
		*gid = pw->pw_gid;
		snprintf(shown, size, "%s", name);
		return 0;
	}
	n = strtoul(name, &end, 10);
	if (*name && !*end && n > 0 && n < 0xfffffffful) {
		*uid = (uid_t)n;
		*gid = (gid_t)n;
		snprintf(shown, size, "uid %lu", n);
		return 0;
	}
	pw = getpwuid(KEPLER_OWN_UID);
	if (pw)
		return kepler_error_set(
			err, -EEXIST,
			"collector.user '%s' does not exist, and uid %d, which the collector would "
			"take instead, is '%s''s: create the user (useradd --system --gid kepler "
			"--no-create-home --shell /usr/sbin/nologin kepler) or name another",
			name, KEPLER_OWN_UID, pw->pw_name);
	nog = getgrnam("nogroup");
	kepler_warn("collector.user '%s' does not exist: running as uid %d, a uid no account uses, the "
		    "owner of the store then; a user of its own is better (the package makes one: useradd "
		    "--system --gid kepler --no-create-home --shell /usr/sbin/nologin kepler)",
		    name, KEPLER_OWN_UID);
	*uid = KEPLER_OWN_UID;
	*gid = nog ? nog->gr_gid : 65534; /* readers in it read the store when store.group is "" */
	snprintf(shown, size, "uid %d", KEPLER_OWN_UID);
	return 0;
}

static int become(uid_t uid, gid_t gid)
{
	if (setgroups(1, &gid) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
		return -errno;
	return 0;
}

/*
 * Whether the kernel lets @uid use the BPF map @fd without CAP_BPF (Linux
 * 6.5 and later do; before, kernel.unprivileged_bpf_disabled refuses every
 * bpf() call): a child becomes @uid and tries.
 */
static bool bpf_needs_cap(int fd, uid_t uid, gid_t gid)
{
	int status;
	pid_t pid;

	if (fd < 0)
		return false;
	pid = fork();
	if (pid < 0)
		return true;
	if (pid == 0) {
		union bpf_attr a;
		unsigned char key[64];

		memset(&a, 0, sizeof(a));
		a.map_fd = (unsigned)fd;
		a.key = 0;
		a.next_key = (unsigned long)key;
		if (become(uid, gid) < 0)
			_exit(2);
		if (syscall(SYS_bpf, BPF_MAP_GET_NEXT_KEY, &a, sizeof(a)) == 0 || errno == ENOENT)
			_exit(0);
		_exit(1);
	}
	if (waitpid(pid, &status, 0) != pid)
		return true;
	return !WIFEXITED(status) || WEXITSTATUS(status) != 0;
}

/* Every capability out of the bounding set but @keep (-1: none). */
static int drop_bounding(int keep)
{
	for (int c = 0; c <= CAP_LAST_CAP; c++)
		if (c != keep && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			return -errno;
	return 0;
}

/* Effective and permitted: @keep alone (-1: nothing); inheritable and ambient empty. */
static int set_caps(int keep)
{
	cap_t caps = cap_init();
	cap_value_t v = keep;
	int r = 0;

	if (!caps)
		return -errno;
	if ((keep >= 0 && (cap_set_flag(caps, CAP_PERMITTED, 1, &v, CAP_SET) < 0 ||
			   cap_set_flag(caps, CAP_EFFECTIVE, 1, &v, CAP_SET) < 0)) ||
	    cap_set_proc(caps) < 0)
		r = -errno;
	cap_free(caps);
	if (r == 0 && prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		r = -errno;
	return r;
}

static int switch_user(const struct kepler_privileges_params *p, char *held, size_t size,
		       struct kepler_error *err)
{
	char who[64], grname[64];
	uid_t uid = 0;
	gid_t gid = 0;
	struct group *g;
	int keep = -1, r;

	r = resolve_user(p->user, &uid, &gid, who, sizeof(who), err);
	if (r < 0)
		return r;
	g = p->group && *p->group ? getgrnam(p->group) : NULL;
	if (g)
		gid = g->gr_gid;
	else
		g = getgrgid(gid); /* the user's own group, or nogroup for uid 65432 */
	snprintf(grname, sizeof(grname), "group %s", g ? g->gr_name : "without a name");
	if (bpf_needs_cap(p->bpf_fd, uid, gid)) {
		keep = CAP_BPF;
		kepler_warn("this kernel refuses BPF maps to a process without CAP_BPF (before Linux 6.5, "
			    "with kernel.unprivileged_bpf_disabled set): the collector keeps CAP_BPF");
	}
	if (p->store && (r = kepler_store_give(p->store, uid, gid, err)) < 0)
		return r;
	if ((r = drop_bounding(keep)) < 0) /* no CAP_SETPCAP: no_new_privs still keeps exec from using it */
		kepler_warn("cannot empty the capability bounding set (%s): give the collector CAP_SETPCAP "
			    "at start; it holds no capability after start either way",
			    strerror(-r));
	if (keep >= 0 && prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
		return kepler_error_set(err, -errno, "cannot keep CAP_BPF across the user switch: %s",
					strerror(errno));
	if ((r = become(uid, gid)) < 0)
		return kepler_error_set(err, r, "cannot become %s: %s", who, strerror(-r));
	if ((r = set_caps(keep)) < 0)
		return kepler_error_set(err, r, "cannot drop capabilities: %s", strerror(-r));
#if defined(__SANITIZE_ADDRESS__)
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0); /* sanitizer builds: LeakSanitizer's tracer attaches at exit */
#endif
	if (strncmp(who, "uid ", 4) != 0)
		snprintf(who + strlen(who), sizeof(who) - strlen(who), " (uid %u)", (unsigned)uid);
	snprintf(held, size, "%s in %s (gid %u), %s", who, grname, (unsigned)gid,
		 keep >= 0 ? "CAP_BPF kept (see above)" : "no capability");
	return 0;
}

int kepler_privileges_drop(const struct kepler_privileges_params *p, struct kepler_error *err)
{
	char held[256];
	int r, n;

	if (geteuid() == 0 && p->user && strcmp(p->user, "root") != 0) {
		r = switch_user(p, held, sizeof(held), err);
		if (r < 0)
			return r;
	} else {
		if (geteuid() == 0)
			kepler_warn("collector.user is root: the collector stays root after start (every "
				    "capability dropped, but root's files stay open to it)");
		if (geteuid() == 0)
			drop_bounding(-1);
		if ((r = set_caps(-1)) < 0)
			return kepler_error_set(err, r, "cannot drop capabilities: %s", strerror(-r));
		snprintf(held, sizeof(held), "uid %u, no capability", (unsigned)geteuid());
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return kepler_error_set(err, -errno, "cannot set no_new_privs: %s", strerror(errno));
	n = kepler_syscall_filter_apply(p->nvidia, p->ipmi, err);
	if (n < 0)
		return n;
	kepler_info("privileges: now %s, no_new_privs, a seccomp filter of %d system calls", held, n);
	return 0;
}
