// SPDX-License-Identifier: Apache-2.0
/*
 * The process label text kept from one rendering to the next
 * (kepler_prom_samples.stable_ids, fmt_internal.h): a process whose
 * strings, pid and type are those its text was written from has the same
 * text, so it is copied, not escaped again, and keeps its version, the
 * high bits of its samples' ids. Compared in full: process names are
 * anyone's, and a hash could be made to collide.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fmt_internal.h"
#include "kepler/fmt.h"

static uint64_t last_version;

uint64_t prom_memo_version(void)
{
	return __atomic_add_fetch(&last_version, 1, __ATOMIC_RELAXED);
}

static int grow(void **p, size_t n, size_t size)
{
	void *q = realloc(*p, n * size);

	if (!q)
		return -ENOMEM;
	*p = q;
	return 0;
}

int prom_proc_text_begin(struct prom_proc_text *t, size_t n, bool stable_ids)
{
	kepler_buf_reset(&t->text);
	kepler_buf_reset(&t->fixed);
	kepler_buf_reset(&t->node);
	kepler_buf_reset(&t->raw);
	t->n = 0;
	memset(t->state_at, 0, sizeof(t->state_at));
	memset(t->zone_at, 0, sizeof(t->zone_at));
	if (n > t->cap || !t->a) {
		t->cap = 0;
		if (grow((void **)&t->a, n + 1, sizeof(*t->a)) < 0 ||
		    grow((void **)&t->b, n + 1, sizeof(*t->b)) < 0)
			return -ENOMEM;
		if (stable_ids && (grow((void **)&t->ver, n + 1, sizeof(*t->ver)) < 0 ||
				   grow((void **)&t->pid, n + 1, sizeof(*t->pid)) < 0 ||
				   grow((void **)&t->type, n + 1, sizeof(*t->type)) < 0 ||
				   grow((void **)&t->raw_at, n + 1, sizeof(*t->raw_at)) < 0))
			return -ENOMEM;
		t->cap = n;
	}
	if (stable_ids && t->raw_at)
		t->raw_at[0] = 0;
	return 0;
}

void prom_proc_text_free(struct prom_proc_text *t)
{
	kepler_buf_free(&t->text);
	kepler_buf_free(&t->fixed);
	kepler_buf_free(&t->node);
	kepler_buf_free(&t->raw);
	free(t->a);
	free(t->b);
	free(t->ver);
	free(t->pid);
	free(t->type);
	free(t->raw_at);
	memset(t, 0, sizeof(*t));
}

static bool same_buf(const struct kepler_buf *x, const struct kepler_buf *y)
{
	return x->len == y->len && (!x->len || !memcmp(x->data, y->data, x->len));
}

bool prom_memo_same_context(const struct prom_proc_text *prev, const struct prom_proc_text *t)
{
	return prev->ver && same_buf(&prev->fixed, &t->fixed) && same_buf(&prev->node, &t->node) &&
	       !memcmp(prev->state_at, t->state_at, sizeof(t->state_at)) &&
	       !memcmp(prev->zone_at, t->zone_at, sizeof(t->zone_at));
}

/* Whether @raw (NUL-ended strings, @end its end) holds @p's strings. */
static bool same_strings(const char *raw, const char *end, const struct kepler_process *p)
{
	const char *s[4] = { p->comm, p->container_id, p->exe, p->vm_id };

	for (int k = 0; k < 4; k++) {
		size_t n = strlen(s[k]);

		if ((size_t)(end - raw) < n + 1 || memcmp(raw, s[k], n + 1))
			return false;
		raw += n + 1;
	}
	return raw == end;
}

size_t prom_memo_find(const struct prom_proc_text *prev, size_t *cursor, const struct kepler_process *p)
{
	size_t j = *cursor;

	while (j < prev->n && prev->pid[j] < p->pid)
		j++;
	*cursor = j;
	for (; j < prev->n && prev->pid[j] == p->pid; j++)
		if (prev->ver[j] && prev->type[j] == (uint32_t)p->type &&
		    same_strings(prev->raw.data + prev->raw_at[j], prev->raw.data + prev->raw_at[j + 1], p))
			return j;
	return SIZE_MAX;
}

void prom_memo_record(struct prom_proc_text *t, size_t i, const struct kepler_process *p,
		      const struct prom_proc_text *prev, size_t from)
{
	t->pid[i] = p->pid;
	t->type[i] = (uint32_t)p->type;
	if (from != SIZE_MAX) {
		kepler_buf_add(&t->raw, prev->raw.data + prev->raw_at[from],
			       prev->raw_at[from + 1] - prev->raw_at[from]);
	} else {
		kepler_buf_add(&t->raw, p->comm, strlen(p->comm) + 1);
		kepler_buf_add(&t->raw, p->container_id, strlen(p->container_id) + 1);
		kepler_buf_add(&t->raw, p->exe, strlen(p->exe) + 1);
		kepler_buf_add(&t->raw, p->vm_id, strlen(p->vm_id) + 1);
	}
	t->raw_at[i + 1] = t->raw.len;
}
