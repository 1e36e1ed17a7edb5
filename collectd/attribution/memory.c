// SPDX-License-Identifier: Apache-2.0
/*
 * The ledger's memory of forgotten identities (its tombstones: containers,
 * VMs and pods that ended and left the snapshots), as text the collector
 * keeps in the store (meta "collector.memory"), so that it survives a
 * restart: a container restarted under the same id after the collector
 * restarted too continues its counters.
 *
 *   kepler-memory 1 NZONES IDLE
 *   ZONE<TAB>ZONE...
 *   KIND<TAB>ID<TAB>CPU_NS<TAB>UJ UJ ...       (NZONES active, then NZONES idle if IDLE)
 *   fold<TAB>c:ID|v:ID<TAB>CPU_NS<TAB>UJ UJ ...<TAB>PROCESSES
 *
 * (the folds of containers and VMs that left with their group: folds.c;
 * a collector before them skips those lines as malformed)
 * Loaded at start after the resume (same boot), in the resumed snapshot's
 * zone order, which must be the text's; remapped with the rest at the
 * first build. Lines that do not parse are skipped and counted.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kepler/array.h"
#include "ledger_internal.h"

#define MEMORY_MAGIC "kepler-memory 1"

bool kepler_ledger_memory_changed(const struct kepler_ledger *l)
{
	return l->memory_dirty;
}

void kepler_ledger_memory_saved(struct kepler_ledger *l)
{
	l->memory_dirty = false;
}

struct text {
	char *buf;
	size_t len, cap;
	bool failed;
};

static void put(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->failed)
		return;
	for (;;) {
		size_t room = t->cap - t->len;

		va_start(ap, fmt);
		n = vsnprintf(t->buf ? t->buf + t->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			t->failed = true;
			return;
		}
		if ((size_t)n < room) {
			t->len += (size_t)n;
			return;
		}
		if (kepler_array_reserve((void **)&t->buf, &t->cap, t->len + (size_t)n + 1, 1) < 0) {
			t->failed = true;
			return;
		}
	}
}

/* An id that the text's syntax can carry (no tab, newline or other control). */
static bool plain(const char *id)
{
	for (const unsigned char *p = (const unsigned char *)id; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return false;
	return id[0] != '\0';
}

/* A tombstone kind's name in the text: "fold" for the folds' (kept under PROCESS). */
static const char *kind_name(int k)
{
	return k == KEPLER_KIND_PROCESS ? "fold" : kepler_kind_name((enum kepler_kind)k);
}

int kepler_ledger_memory_save(const struct kepler_ledger *l, char **ret)
{
	struct text t = { 0 };

	*ret = NULL;
	put(&t, MEMORY_MAGIC " %u %d\n", l->nzones, l->idle ? 1 : 0);
	for (unsigned z = 0; z < l->nzones; z++)
		put(&t, "%s%s", z ? "\t" : "", l->zone_names[z]);
	put(&t, "\n");
	for (int k = KEPLER_KIND_PROCESS; k < KEPLER_KIND_COUNT; k++)
		for (size_t i = 0; l->tombs[k] && i < LEDGER_TOMBSTONES; i++) {
			/* oldest first, so that a load refills the ring in the same order */
			const struct tombstone *d = &l->tombs[k][(l->tomb_next[k] + i) % LEDGER_TOMBSTONES];

			if (!plain(d->id))
				continue;
			put(&t, "%s\t%s\t%" PRIu64 "\t", kind_name(k), d->id, d->cpu_total);
			for (unsigned s = 0; s < l->nslots; s++)
				put(&t, "%s%" PRIu64, s ? " " : "", d->total[s]);
			if (k == KEPLER_KIND_PROCESS)
				put(&t, "\t%" PRIu64, d->count_total);
			put(&t, "\n");
		}
	if (t.failed) {
		free(t.buf);
		return -ENOMEM;
	}
	*ret = t.buf;
	return 0;
}

static int kind_of(const char *name, size_t len)
{
	for (int k = KEPLER_KIND_PROCESS; k < KEPLER_KIND_COUNT; k++) {
		const char *n = kind_name(k);

		if (strlen(n) == len && !memcmp(n, name, len))
			return k;
	}
	return -1;
}

static bool parse_u64(const char **p, const char *end, uint64_t *ret)
{
	uint64_t v = 0;
	const char *q = *p;

	if (q == end || *q < '0' || *q > '9')
		return false;
	for (; q < end && *q >= '0' && *q <= '9'; q++) {
		if (v > (UINT64_MAX - (uint64_t)(*q - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(*q - '0');
	}
	*p = q;
	*ret = v;
	return true;
}

/*
 * Tombstone @d into kind @k's ring. The resume buried groups already (the
 * resumed snapshot's, ended or not seen since), from totals newer than a
 * memory saved before that snapshot may hold: where the ring has @id, each
 * total keeps the larger (totals only grow), so an older memory never
 * takes a group back.
 */
static void merge(struct kepler_ledger *l, enum kepler_kind k, const struct tombstone *d)
{
	struct tombstone *t = ledger_tomb_find(l, k, d->id);

	if (!t) {
		l->tombs[k][l->tomb_next[k]] = *d;
		l->tomb_next[k] = (l->tomb_next[k] + 1) % LEDGER_TOMBSTONES;
		return;
	}
	for (size_t s = 0; s < LEDGER_MAX_SLOTS; s++)
		t->total[s] = t->total[s] > d->total[s] ? t->total[s] : d->total[s];
	t->cpu_total = t->cpu_total > d->cpu_total ? t->cpu_total : d->cpu_total;
	t->count_total = t->count_total > d->count_total ? t->count_total : d->count_total;
}

/* One tombstone line, [@p, @end) without its newline, into the ring; false if malformed. */
static bool load_line(struct kepler_ledger *l, const char *p, const char *end, unsigned nz, bool idle)
{
	const char *tab = memchr(p, '\t', (size_t)(end - p)), *id, *id_end;
	struct tombstone d = { 0 };
	unsigned nslots = nz * (idle ? 2 : 1);
	int k;

	if (!tab || (k = kind_of(p, (size_t)(tab - p))) < 0)
		return false;
	id = tab + 1;
	id_end = memchr(id, '\t', (size_t)(end - id));
	if (!id_end || id_end == id || (size_t)(id_end - id) > KEPLER_KEY_MAX)
		return false;
	memcpy(d.id, id, (size_t)(id_end - id));
	if (!plain(d.id))
		return false;
	p = id_end + 1;
	if (!parse_u64(&p, end, &d.cpu_total) || p == end || *p++ != '\t')
		return false;
	for (unsigned s = 0; s < nslots; s++) {
		uint64_t v;

		if ((s && (p == end || *p++ != ' ')) || !parse_u64(&p, end, &v))
			return false;
		/* in the resume layout: nresume active slots, then nresume idle ones */
		d.total[s < nz ? s : l->nresume + (s - nz)] = v;
	}
	if (k == KEPLER_KIND_PROCESS && (p == end || *p++ != '\t' || !parse_u64(&p, end, &d.count_total)))
		return false;
	if (p != end || !l->tombs[k])
		return false;
	merge(l, (enum kepler_kind)k, &d);
	return true;
}

/* The header's zones: NZONES names matching the resumed snapshot's, in order. */
static bool load_header(const struct kepler_ledger *l, const char **p, const char *end, unsigned *ret_nz,
			bool *ret_idle)
{
	const char *nl = memchr(*p, '\n', (size_t)(end - *p)), *q;
	unsigned nz, idle;
	char head[64];

	if (!nl || (size_t)(nl - *p) >= sizeof(head))
		return false;
	memcpy(head, *p, (size_t)(nl - *p));
	head[nl - *p] = '\0';
	if (sscanf(head, MEMORY_MAGIC " %u %u", &nz, &idle) != 2 || nz != l->nresume || idle > 1)
		return false;
	q = nl + 1;
	for (unsigned z = 0; z < nz; z++) {
		size_t n = strlen(l->resume_names[z]);

		if ((size_t)(end - q) < n + 1 || memcmp(q, l->resume_names[z], n) != 0 ||
		    q[n] != (z + 1 < nz ? '\t' : '\n'))
			return false;
		q += n + 1;
	}
	*p = q;
	*ret_nz = nz;
	*ret_idle = idle;
	return true;
}

int kepler_ledger_memory_load(struct kepler_ledger *l, const char *text, size_t len, size_t *ret_skipped,
			      struct kepler_error *err)
{
	const char *p = text, *end = text + len;
	unsigned nz;
	bool idle;

	*ret_skipped = 0;
	if (!l->nresume || l->nzones)
		return kepler_error_set(err, -EINVAL,
					"the memory is loaded after a resume, before the first build");
	if (!load_header(l, &p, end, &nz, &idle))
		return kepler_error_set(err, -EBADMSG,
					"the collector's memory does not match the resumed snapshot's zones");
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *line_end = nl ? nl : end;

		if (!load_line(l, p, line_end, nz, idle))
			++*ret_skipped;
		p = nl ? nl + 1 : end;
	}
	return 0;
}
