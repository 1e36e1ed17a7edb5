// SPDX-License-Identifier: Apache-2.0
/*
 * The census of the eBPF informer by a BPF task iterator (bpf/census.bpf.c):
 * every process running at open, with its start, comm, program, lifetime
 * CPU time and a token of its cgroups, from one read of the iterator
 * instead of three files of /proc per process (stat, exe, cgroup), which
 * cost ~35 us a process: a third of a second at 10,000 processes.
 *
 * The iterator gives one record per thread. A process's lifetime CPU time
 * is the sum over its threads plus what its exited threads ran (held by
 * the leader's record), as /proc/PID/stat's utime + stime sums it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "census.h"
#include "informer_internal.h"

/* A process's record in the buffer read, and its threads' time summed. */
struct leader {
	uint32_t tgid;
	uint32_t offset; /* of its record */
	uint64_t cpu_ns;
};

static int read_all(int fd, char **ret_buf, size_t *ret_len)
{
	size_t len = 0, cap = 1 << 20;
	char *buf = malloc(cap);

	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n;

		if (cap - len < 65536) {
			char *bigger = realloc(buf, cap * 2);

			if (!bigger) {
				free(buf);
				return -ENOMEM;
			}
			buf = bigger;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int r = -errno;

			free(buf);
			return r;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	*ret_buf = buf;
	*ret_len = len;
	return 0;
}

/*
 * Unload @prog once its census is taken, though libbpf keeps its number:
 * the number is pointed at /dev/null (closed with the object), so the
 * program's last reference goes now.
 */
static void release_program(struct bpf_program *prog)
{
	int fd = bpf_program__fd(prog), null = open("/dev/null", O_RDONLY | O_CLOEXEC);

	if (fd >= 0 && null >= 0)
		dup3(null, fd, O_CLOEXEC);
	if (null >= 0)
		close(null);
}

/* Run the iterator @prog once: every task's record in *@ret_buf. */
static int run_iterator(struct bpf_program *prog, char **ret_buf, size_t *ret_len, struct kepler_error *err)
{
	struct bpf_link *link;
	int fd = -1, r;

	link = bpf_program__attach_iter(prog, NULL);
	if (!link)
		return kepler_error_set(err, -errno ? -errno : -EINVAL,
					"cannot attach the census iterator: %s", strerror(errno));
	fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0) {
		r = kepler_error_set(err, -errno, "cannot start the census iterator: %s", strerror(errno));
		goto out;
	}
	r = read_all(fd, ret_buf, ret_len);
	if (r < 0)
		kepler_error_set(err, r, "cannot read the census iterator: %s", strerror(-r));
out:
	if (fd >= 0)
		close(fd);
	bpf_link__destroy(link);
	return r;
}

static int by_tgid(const void *a, const void *b)
{
	const struct leader *x = a, *y = b;

	return x->tgid < y->tgid ? -1 : x->tgid > y->tgid;
}

/* The leaders' records of @buf (checked whole), sorted by tgid. */
static int find_leaders(const char *buf, size_t len, struct leader **ret, size_t *ret_n,
			struct kepler_error *err)
{
	size_t n = 0, cap = 1024, at = 0;
	struct leader *v = malloc(cap * sizeof(*v));
	bool sorted = true;

	if (!v)
		return kepler_error_set(err, -ENOMEM, "out of memory");
	while (at < len) {
		struct kepler_census_task t;

		if (len - at < sizeof(t) || len > UINT32_MAX)
			goto bad;
		memcpy(&t, buf + at, sizeof(t));
		if (t.exe_len > KEPLER_CENSUS_PATH_MAX || len - at - sizeof(t) < t.exe_len ||
		    (t.exe_len && buf[at + sizeof(t) + t.exe_len - 1] != '\0'))
			goto bad;
		if (t.flags & KEPLER_CENSUS_LEADER) {
			if (n == cap) {
				struct leader *bigger = realloc(v, 2 * cap * sizeof(*v));

				if (!bigger) {
					free(v);
					return kepler_error_set(err, -ENOMEM, "out of memory");
				}
				v = bigger;
				cap *= 2;
			}
			if (n && v[n - 1].tgid >= t.tgid)
				sorted = false;
			v[n++] =
				(struct leader){ .tgid = t.tgid, .offset = (uint32_t)at, .cpu_ns = t.cpu_ns };
		}
		at += sizeof(t) + t.exe_len;
	}
	if (!sorted)
		qsort(v, n, sizeof(*v), by_tgid);
	*ret = v;
	*ret_n = n;
	return 0;
bad:
	free(v);
	return kepler_error_set(err, -EIO, "the census iterator gave a malformed record at byte %zu of %zu",
				at, len);
}

/* Add each thread's time to its process's. */
static void sum_threads(const char *buf, size_t len, struct leader *v, size_t n)
{
	for (size_t at = 0; at < len;) {
		struct kepler_census_task t;
		struct leader key, *l;

		memcpy(&t, buf + at, sizeof(t));
		at += sizeof(t) + t.exe_len;
		if (t.flags & KEPLER_CENSUS_LEADER)
			continue;
		key.tgid = t.tgid;
		l = bsearch(&key, v, n, sizeof(*v), by_tgid);
		if (l)
			l->cpu_ns += t.cpu_ns;
	}
}

int kepler_census_ebpf(struct bpf_program *prog, kepler_census_fn each, void *arg, size_t *ret_count,
		       struct kepler_error *err)
{
	struct leader *v = NULL;
	char *buf = NULL;
	size_t len = 0, n = 0;
	int r;

	if (!prog || bpf_program__fd(prog) < 0)
		return kepler_error_set(err, -ENOENT, "the census iterator is not loaded");
	r = run_iterator(prog, &buf, &len, err);
	release_program(prog);
	if (r == 0)
		r = find_leaders(buf, len, &v, &n, err);
	if (r < 0)
		goto out;
	sum_threads(buf, len, v, n);
	for (size_t i = 0; i < n && r == 0; i++) {
		struct kepler_census_task t;
		struct kepler_census_proc p = { 0 };

		memcpy(&t, buf + v[i].offset, sizeof(t));
		p.pid = t.tgid;
		p.start_time_ns = t.start_time_ns;
		p.lifetime_ns = v[i].cpu_ns;
		p.cgroups = t.cgroups;
		p.kthread = t.flags & KEPLER_CENSUS_KTHREAD;
		memcpy(p.comm, t.comm, sizeof(p.comm));
		p.comm[sizeof(p.comm) - 1] = '\0';
		p.exe = t.exe_len ? buf + v[i].offset + sizeof(t) : "";
		r = each(arg, &p);
		if (r < 0)
			kepler_error_set(err, r, "census: %s", strerror(-r));
	}
	*ret_count = n;
out:
	free(v);
	free(buf);
	return r;
}
