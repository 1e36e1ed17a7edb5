// SPDX-License-Identifier: Apache-2.0
/*
 * Container and pod identity from /proc/PID/cgroup text. The cgroup path
 * patterns are those of the runtimes' cgroup drivers:
 *
 *   docker      /docker/<id>                  (cgroupfs)
 *               /system.slice/docker-<id>.scope (systemd)
 *   containerd  .../cri-containerd-<id>.scope, ...:cri-containerd:<id>,
 *               /containerd/<id>, containerd-<id>.scope
 *   cri-o       .../crio-<id>.scope, .../crio-<id>  (not crio-conmon-<id>)
 *   podman      .../libpod-<id>.scope[/container], /libpod_parent/libpod-<id>,
 *               libpod-payload-<id>             (not libpod-conmon-<id>)
 *   kubernetes  /kubepods[/<qos>]/pod<uid>/<id> (cgroupfs driver, any runtime)
 *
 * with <id> 64 lowercase hex digits; pods from pod<uid> (cgroupfs) or
 * kubepods[-<qos>]-pod<uid with _>.slice (systemd; kubelet-kubepods-... when
 * the kubelet runs nested, as in kind).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "workload.h"

struct seg {
	const char *p;
	size_t n;
};

static bool is_hex64(const char *p, size_t n)
{
	if (n < KEPLER_CONTAINER_ID_LEN)
		return false;
	for (size_t i = 0; i < KEPLER_CONTAINER_ID_LEN; i++)
		if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
			return false;
	return true;
}

/* @s starts with @prefix followed by a 64-hex id, then @suffix or the end. */
static const char *prefixed_id(struct seg s, const char *prefix)
{
	size_t pl = strlen(prefix);
	const char *id = s.p + pl;
	size_t rest;

	if (s.n < pl + KEPLER_CONTAINER_ID_LEN || memcmp(s.p, prefix, pl) || !is_hex64(id, s.n - pl))
		return NULL;
	rest = s.n - pl - KEPLER_CONTAINER_ID_LEN;
	if (rest == 0 || (rest == 6 && !memcmp(id + KEPLER_CONTAINER_ID_LEN, ".scope", 6)))
		return id;
	return NULL;
}

/* A v1 systemd-style "<slice>:cri-containerd:<id>" segment. */
static const char *colon_id(struct seg s, const char *tag)
{
	size_t tl = strlen(tag);

	for (size_t i = 0; i + tl + KEPLER_CONTAINER_ID_LEN <= s.n; i++)
		if (!memcmp(s.p + i, tag, tl) && i + tl + KEPLER_CONTAINER_ID_LEN == s.n &&
		    is_hex64(s.p + i + tl, KEPLER_CONTAINER_ID_LEN))
			return s.p + i + tl;
	return NULL;
}

static bool seg_is(struct seg s, const char *word)
{
	return s.n == strlen(word) && !memcmp(s.p, word, s.n);
}

static bool is_uid_char(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == '-' || c == '_';
}

/* pod<uid> or kubepods[-qos]-pod<uid>.slice; writes the dashed uid. */
static bool pod_uid_of(struct seg s, char *uid)
{
	const char *p = NULL;
	size_t n;

	if (s.n >= 3 + KEPLER_POD_UID_LEN && !memcmp(s.p, "pod", 3)) {
		p = s.p + 3;
		n = s.n - 3;
	} else if (s.n > 9 &&
		   (!memcmp(s.p, "kubepods-", 9) || !memcmp(s.p, "kubelet-kubepods-", 17 < s.n ? 17 : s.n))) {
		for (size_t i = 9; i + 3 < s.n; i++)
			if (!memcmp(s.p + i - 1, "-pod", 4)) {
				p = s.p + i + 3;
				n = s.n - i - 3;
				break;
			}
		if (p && n > 6 && !memcmp(p + n - 6, ".slice", 6))
			n -= 6;
		else
			p = NULL;
	}
	if (!p || n != KEPLER_POD_UID_LEN)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!is_uid_char(p[i]))
			return false;
		uid[i] = p[i] == '_' ? '-' : p[i];
	}
	uid[n] = '\0';
	return true;
}

/* The container id in segment @i of a path, or NULL; sets the runtime. */
static const char *id_in_segment(const struct seg *segs, size_t i, bool under_pod, const char **runtime)
{
	static const struct {
		const char *prefix, *runtime;
	} prefixed[] = {
		{ "docker-", "docker" },         { "cri-containerd-", "containerd" },
		{ "containerd-", "containerd" }, { "crio-", "crio" },
		{ "libpod-", "podman" },         { "libpod-payload-", "podman" },
	};
	const char *id;

	for (size_t k = 0; k < sizeof(prefixed) / sizeof(prefixed[0]); k++)
		if ((id = prefixed_id(segs[i], prefixed[k].prefix))) {
			*runtime = prefixed[k].runtime;
			return id;
		}
	if ((id = colon_id(segs[i], ":cri-containerd:"))) {
		*runtime = "containerd";
		return id;
	}
	if (segs[i].n == KEPLER_CONTAINER_ID_LEN && is_hex64(segs[i].p, segs[i].n) && i > 0) {
		if (seg_is(segs[i - 1], "docker")) {
			*runtime = "docker";
			return segs[i].p;
		}
		if (seg_is(segs[i - 1], "containerd")) {
			*runtime = "containerd";
			return segs[i].p;
		}
		if (under_pod) {
			*runtime = "kubernetes";
			return segs[i].p;
		}
	}
	return NULL;
}

#define MAX_SEGS 64

/* Scan one cgroup path; keep the deepest id (largest offset) in @best. */
static void scan_path(const char *path, size_t len, struct kepler_container_ref *best, long *best_off,
		      const char *line_start)
{
	struct seg segs[MAX_SEGS];
	size_t nseg = 0, i = 0;
	bool kube = false, under_pod = false;
	char uid[KEPLER_POD_UID_LEN + 1] = "";

	while (i < len && nseg < MAX_SEGS) {
		size_t j = i;

		while (j < len && path[j] != '/')
			j++;
		if (j > i)
			segs[nseg++] = (struct seg){ path + i, j - i };
		i = j + 1;
	}
	for (size_t k = 0; k < nseg; k++) {
		const char *runtime = NULL, *id;

		/*
		 * ".." : the path of a process outside the reader's cgroup
		 * namespace (a collector in a pod with a private one sees
		 * 0::/../../besteffort/pod<uid>/<id>): the kubepods segment
		 * may be above what it can see.
		 */
		if ((segs[k].n >= 8 && !memcmp(segs[k].p, "kubepods", 8)) ||
		    (segs[k].n >= 16 && !memcmp(segs[k].p, "kubelet-kubepods", 16)) || seg_is(segs[k], ".."))
			kube = true;
		if (kube && !under_pod && pod_uid_of(segs[k], uid)) {
			under_pod = true;
			continue;
		}
		id = id_in_segment(segs, k, under_pod, &runtime);
		if (id && (id - line_start) > *best_off) {
			*best_off = id - line_start;
			memcpy(best->id, id, KEPLER_CONTAINER_ID_LEN);
			best->id[KEPLER_CONTAINER_ID_LEN] = '\0';
			best->runtime = runtime;
			snprintf(best->pod_uid, sizeof(best->pod_uid), "%s", under_pod ? uid : "");
		}
	}
}

bool kepler_cgroup_container(const char *text, size_t len, struct kepler_container_ref *ret)
{
	struct kepler_container_ref best = { .runtime = "" };
	const char *p = text, *end = text + len;
	long best_off = -1;

	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *c1, *c2;
		long off = best_off;

		if (!eol)
			eol = end;
		c1 = memchr(p, ':', (size_t)(eol - p));
		c2 = c1 ? memchr(c1 + 1, ':', (size_t)(eol - c1 - 1)) : NULL;
		if (c2) {
			/* ties between lines: the first line wins, so compare offsets per line */
			long line_best = -1;
			struct kepler_container_ref cand = { .runtime = "" };

			scan_path(c2 + 1, (size_t)(eol - c2 - 1), &cand, &line_best, c2 + 1);
			if (line_best > off) {
				best = cand;
				best_off = line_best;
			}
		}
		p = eol + 1;
	}
	if (best_off < 0)
		return false;
	*ret = best;
	return true;
}

/* Does the controller list @c (@n bytes, comma-separated) name "cpu"? */
static bool has_cpu_controller(const char *c, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t j = i;

		while (j < n && c[j] != ',')
			j++;
		if (j - i == 3 && !memcmp(c + i, "cpu", 3))
			return true;
		i = j + 1;
	}
	return false;
}

/* The path of the best-ranked line of /proc/PID/cgroup: v2 first, or the cpu controller's first. */
static void cgroup_path_ranked(const char *text, size_t len, bool cpu_first, char *buf, size_t size)
{
	const char *p = text, *end = text + len, *best = NULL, *best_end = NULL;
	int best_rank = 0;

	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *c1, *c2;
		int rank;

		if (!eol)
			eol = end;
		c1 = memchr(p, ':', (size_t)(eol - p));
		c2 = c1 ? memchr(c1 + 1, ':', (size_t)(eol - c1 - 1)) : NULL;
		if (c2) {
			bool v2 = c1 - p == 1 && *p == '0' && c2 == c1 + 1;
			bool cpu = has_cpu_controller(c1 + 1, (size_t)(c2 - c1 - 1));

			rank = v2 ? (cpu_first ? 2 : 3) : cpu ? (cpu_first ? 3 : 2) : 1;
			if (rank > best_rank) {
				best_rank = rank;
				best = c2 + 1;
				best_end = eol;
			}
		}
		p = eol + 1;
	}
	if (!size)
		return;
	if (!best) {
		buf[0] = '\0';
		return;
	}
	snprintf(buf, size, "%.*s", (int)(best_end - best), best);
}

void kepler_cgroup_path(const char *text, size_t len, char *buf, size_t size)
{
	cgroup_path_ranked(text, len, false, buf, size);
}

void kepler_cgroup_cpu_path(const char *text, size_t len, char *buf, size_t size)
{
	cgroup_path_ranked(text, len, true, buf, size);
}
