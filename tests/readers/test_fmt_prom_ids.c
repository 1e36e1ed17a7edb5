// SPDX-License-Identifier: Apache-2.0
/*
 * The renderer's stable ids (kepler_prom_samples.stable_ids, kepler-push's
 * way of knowing a series without reading its key): over renderings of
 * snapshots that change (names, exes, containers, types, a pid reused,
 * processes gone and come, zones renamed, another node), every sample's
 * key, written or kept (kepler_prom_sample_key()), is byte for byte the
 * exposition's; one id never names two keys; a process whose labels did
 * not change keeps its ids, one whose labels changed gets new ones; kept
 * keys of a rendering that is gone are refused; and without keys_only the
 * text is still kepler_fmt_prom()'s. Hostile names (quotes, backslashes,
 * newlines, invalid UTF-8) throughout.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kepler_test.h"

#include "kepler/buf.h"
#include "kepler/fmt.h"
#include "kepler/snapshot.h"

#define NPROC 40
#define NZONES 3

static const char *const names[] = { "web",       "db \"primary\"",    "back\\slash",
				     "new\nline", "bad \xff\xfe utf8", "näme",
				     "",          "x{y=\"z\"}",        "sh",
				     "a,b=c" };

/* A snapshot of NPROC processes in NZONES zones, all families on (an idle policy, terminated ones, a reused pid). */
struct fix {
	struct kepler_snapshot s;
	struct kepler_process p[NPROC];
	struct kepler_energy e[NPROC][NZONES], idle[NPROC][NZONES];
	char comm[NPROC][32], exe[NPROC][48], ctr[NPROC][16];
};

static void fix_build(struct fix *f)
{
	static const char *const zone[NZONES] = { "package", "core", "dram" };

	memset(f, 0, sizeof(*f));
	f->s.seq = 3;
	f->s.interval_ns = 5000000000ULL;
	f->s.nzones = NZONES;
	f->s.idle_policy = KEPLER_IDLE_CPU;
	for (int z = 0; z < NZONES; z++)
		f->s.zones[z] = (struct kepler_zone){ .name = zone[z], .source = KEPLER_SOURCE_RAPL };
	for (int i = 0; i < NPROC; i++) {
		snprintf(f->comm[i], sizeof(f->comm[i]), "%s", names[i % 10]);
		snprintf(f->exe[i], sizeof(f->exe[i]), "/usr/bin/%s%d", names[(i * 3) % 10], i);
		snprintf(f->ctr[i], sizeof(f->ctr[i]), "%s", i % 4 ? "" : "c0ffee");
		for (int z = 0; z < NZONES; z++) {
			f->e[i][z] =
				(struct kepler_energy){ 1000000ULL * (uint64_t)(i + 1) + (uint64_t)z, 1000 };
			f->idle[i][z] = (struct kepler_energy){ 5000ULL * (uint64_t)(i + 1), 10 };
		}
		f->p[i] = (struct kepler_process){
			.pid = (uint32_t)(100 + i),
			.start_time_ns = (uint64_t)i + 1,
			.comm = f->comm[i],
			.exe = f->exe[i],
			.type = i % 4 ? KEPLER_PROC_REGULAR : KEPLER_PROC_CONTAINER,
			.container_id = f->ctr[i],
			.vm_id = "",
			.usage = { i % 5 ? KEPLER_STATE_RUNNING : KEPLER_STATE_TERMINATED,
				   1000000000ULL * (uint64_t)i, 1000000, f->e[i], f->idle[i] }
		};
	}
	/* a pid reused: 110's predecessor, terminated, other labels */
	f->p[11].pid = 110;
	f->p[11].start_time_ns = 0;
	f->p[11].usage.state = KEPLER_STATE_TERMINATED;
	f->s.nprocesses = NPROC;
	f->s.processes = f->p;
}

/* Every id seen, with its key: one id, one key. */
struct seen {
	uint64_t id[1 << 14];
	char *key[1 << 14];
	size_t n;
};

static void seen_check(struct seen *s, uint64_t id, const char *key, size_t len)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->id[i] == id) {
			if (strlen(s->key[i]) != len || memcmp(s->key[i], key, len))
				fail_msg("id %#llx named '%s', now '%.*s'", (unsigned long long)id, s->key[i],
					 (int)len, key);
			return;
		}
	assert_true(s->n < sizeof(s->id) / sizeof(s->id[0]));
	s->id[s->n] = id;
	s->key[s->n] = malloc(len + 1); /* (@key is not NUL-terminated: no strndup(), which may read on) */
	assert_non_null(s->key[s->n]);
	memcpy(s->key[s->n], key, len);
	s->key[s->n][len] = '\0';
	s->n++;
}

static void seen_free(struct seen *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->key[i]);
	s->n = 0;
}

/*
 * @snap rendered into @k (stable ids, keys only): each sample's key, value,
 * name and kind are those of a plain rendering; ids checked against @seen.
 * Each sample's key into @keys (NUL-separated), its id into @ids. The
 * number of kept samples.
 */
static size_t render_ids(const struct kepler_snapshot *snap, const struct kepler_prom_options *o,
			 struct kepler_prom_samples *k, struct seen *seen, struct kepler_buf *keys,
			 uint64_t *ids)
{
	struct kepler_buf plain = KEPLER_BUF_INIT, text = KEPLER_BUF_INIT, key = KEPLER_BUF_INIT;
	struct kepler_prom_samples ref = { 0 };
	size_t kept = 0;

	assert_int_equal(kepler_fmt_prom_samples(snap, o, &plain, &ref), 0);
	k->keys_only = k->stable_ids = true;
	assert_int_equal(kepler_fmt_prom_samples(snap, o, &text, k), 0);
	assert_int_equal(k->n, ref.n);
	kepler_buf_reset(keys);
	for (size_t i = 0; i < k->n; i++) {
		const struct kepler_prom_sample *a = &ref.v[i], *b = &k->v[i];

		kepler_buf_reset(&key);
		kepler_prom_sample_key(k, text.data, b, &key);
		assert_int_equal(key.error, 0);
		if (key.len != a->key_len || memcmp(key.data, plain.data + a->key_at, a->key_len))
			fail_msg("sample %zu: '%.*s', the exposition's '%.*s'", i, (int)key.len, key.data,
				 (int)a->key_len, plain.data + a->key_at);
		assert_int_equal(b->key_len, a->key_len);
		assert_int_equal(b->name_len, a->name_len);
		assert_int_equal(b->counter, a->counter);
		assert_memory_equal(&b->value, &a->value, sizeof(a->value));
		assert_true(!b->kept || b->id); /* (kept: named by its id) */
		kept += b->kept;
		if (b->id)
			seen_check(seen, b->id, key.data, key.len);
		kepler_buf_add(keys, key.data, key.len);
		kepler_buf_addc(keys, 0);
		ids[i] = b->id;
	}
	assert_int_equal(keys->error, 0);
	kepler_prom_samples_free(&ref);
	kepler_buf_free(&plain);
	kepler_buf_free(&text);
	kepler_buf_free(&key);
	return kept;
}

/* How many of @n samples kept their id from the last rendering (@was, @ids), and how many have one. */
static size_t same_ids(const uint64_t *was, const uint64_t *ids, size_t n, size_t *with)
{
	size_t same = 0;

	*with = 0;
	for (size_t i = 0; i < n; i++) {
		*with += ids[i] != 0;
		same += ids[i] && ids[i] == was[i];
	}
	return same;
}

static void test_ids_name_keys(void **state)
{
	static struct fix f;
	static struct seen seen;
	static uint64_t ids[4096], was[4096];
	struct kepler_prom_options o = { .levels = KEPLER_LEVEL_ALL, .node_name = "n\"1" };
	struct kepler_prom_samples k = { 0 };
	struct kepler_buf keys = KEPLER_BUF_INIT;
	size_t n, with, kept, same;

	(void)state;
	fix_build(&f);
	kept = render_ids(&f.s, &o, &k, &seen, &keys, ids);
	n = k.n;
	/* 40 processes: joules and watts in 3 zones, idle joules and watts, seconds (the reused pid's once) */
	assert_true(kept >= NPROC * 13 - 20);
	assert_true(n < 4096);
	/* the same snapshot again: every id kept */
	memcpy(was, ids, n * sizeof(*ids));
	assert_int_equal(render_ids(&f.s, &o, &k, &seen, &keys, ids), kept);
	same = same_ids(was, ids, n, &with);
	assert_int_equal(same, with);
	assert_int_equal(with, kept);
	/* one process's name, another's exe, a third's container and type: their ids new, the rest kept */
	snprintf(f.comm[3], sizeof(f.comm[3]), "web2");
	snprintf(f.exe[7], sizeof(f.exe[7]), "/usr/bin/\"other\"");
	snprintf(f.ctr[9], sizeof(f.ctr[9]), "beef");
	f.p[9].type = KEPLER_PROC_CONTAINER;
	f.p[21].usage.state =
		KEPLER_STATE_TERMINATED; /* (a state is in the key, not in the process's text) */
	memcpy(was, ids, n * sizeof(*ids));
	render_ids(&f.s, &o, &k, &seen, &keys, ids);
	assert_int_equal(k.n, n);
	same = same_ids(was, ids, n, &with);
	assert_true(same >= with - 3 * 13 - 12);
	assert_true(same < with);
	/* a name changed back: a new id for the old key is fine, a key for an old id is not (seen_check) */
	snprintf(f.comm[3], sizeof(f.comm[3]), "%s", names[3]);
	render_ids(&f.s, &o, &k, &seen, &keys, ids);
	/* processes gone, come, out of pid order */
	f.s.processes = f.p + 5;
	f.s.nprocesses = NPROC - 10;
	render_ids(&f.s, &o, &k, &seen, &keys, ids);
	f.p[30].pid = 50;
	f.p[31].pid = 9999;
	f.s.processes = f.p;
	f.s.nprocesses = NPROC;
	render_ids(&f.s, &o, &k, &seen, &keys, ids);
	n = k.n;
	/* a zone renamed, then another node: no id kept */
	f.s.zones[1].name = "uncore";
	memcpy(was, ids, n * sizeof(*ids));
	render_ids(&f.s, &o, &k, &seen, &keys, ids);
	assert_int_equal(same_ids(was, ids, n, &with), 0);
	o.node_name = "n2";
	memcpy(was, ids, n * sizeof(*ids));
	render_ids(&f.s, &o, &k, &seen, &keys, ids);
	assert_int_equal(same_ids(was, ids, n, &with), 0);
	/* a top and the folds: fewer processes written, their keys still right */
	o.process_top = 5;
	o.process_fold = true;
	f.p[2].flags = KEPLER_PROCESS_FOLDED;
	render_ids(&f.s, &o, &k, &seen, &keys, ids);
	render_ids(&f.s, &o, &k, &seen, &keys, ids);
	kepler_prom_samples_free(&k);
	kepler_buf_free(&keys);
	seen_free(&seen);
}

/* What the flushes were handed, their keys written while they were (kept ones from the renderer's labels). */
struct gathered {
	struct kepler_buf keys;
	size_t samples, calls, kept;
};

static int gather(void *ctx, const char *text, const struct kepler_prom_samples *s)
{
	struct gathered *g = ctx;

	g->calls++;
	for (size_t i = 0; i < s->n; i++) {
		kepler_prom_sample_key(s, text, &s->v[i], &g->keys);
		kepler_buf_addc(&g->keys, 0);
		g->kept += s->v[i].kept;
	}
	g->samples += s->n;
	return 0;
}

static void test_kept_keys_flushed(void **state)
{
	static struct fix f;
	static struct seen seen;
	static uint64_t ids[4096];
	struct kepler_prom_options o = { .levels = KEPLER_LEVEL_ALL, .node_name = "n1" };
	struct kepler_prom_samples k = { 0 }, s = { 0 };
	struct kepler_buf keys = KEPLER_BUF_INIT, text = KEPLER_BUF_INIT;
	struct gathered g = { .keys = KEPLER_BUF_INIT };

	(void)state;
	fix_build(&f);
	render_ids(&f.s, &o, &k, &seen, &keys, ids);
	s.keys_only = s.stable_ids = true;
	s.flush = gather;
	s.flush_ctx = &g;
	s.flush_at = 2048; /* (kept keys are not in the text: flushed by their samples' bytes too) */
	for (int pass = 0; pass < 2; pass++) {
		kepler_buf_reset(&g.keys);
		g.samples = g.calls = g.kept = 0;
		kepler_buf_reset(&text);
		assert_int_equal(kepler_fmt_prom_samples(&f.s, &o, &text, &s), 0);
		assert_int_equal(gather(&g, text.data, &s), 0);
		assert_int_equal(g.samples, k.n);
		assert_true(g.kept > NPROC * 12);
		assert_true(g.calls >= g.kept * sizeof(*s.v) / 2048);
		assert_int_equal(g.keys.error, 0);
		assert_int_equal(g.keys.len, keys.len);
		assert_memory_equal(g.keys.data, keys.data, keys.len);
	}
	kepler_prom_samples_free(&s);
	kepler_prom_samples_free(&k);
	kepler_buf_free(&keys);
	kepler_buf_free(&text);
	kepler_buf_free(&g.keys);
	seen_free(&seen);
}

static void test_gone_rendering_refused(void **state)
{
	static struct fix f;
	struct kepler_prom_options o = { .levels = KEPLER_LEVEL_PROCESS, .node_name = "n1" };
	struct kepler_prom_samples k = { .keys_only = true, .stable_ids = true }, none = { 0 };
	struct kepler_buf text = KEPLER_BUF_INIT, key = KEPLER_BUF_INIT;
	struct kepler_prom_sample old, bad;

	(void)state;
	fix_build(&f);
	assert_int_equal(kepler_fmt_prom_samples(&f.s, &o, &text, &k), 0);
	old = k.v[0];
	assert_true(old.kept && old.proc == 0);
	/* its process's labels changed: the old sample's key is not written from the new labels */
	snprintf(f.comm[0], sizeof(f.comm[0]), "renamed");
	kepler_buf_reset(&text);
	assert_int_equal(kepler_fmt_prom_samples(&f.s, &o, &text, &k), 0);
	kepler_prom_sample_key(&k, text.data, &old, &key);
	assert_int_equal(key.error, -EINVAL);
	/* a process beyond the rendering's, a family, state or zone that is none */
	bad = k.v[0];
	bad.proc = NPROC + 1;
	kepler_buf_reset(&key);
	kepler_prom_sample_key(&k, text.data, &bad, &key);
	assert_int_equal(key.error, -EINVAL);
	bad = k.v[0];
	bad.id |= 63; /* zone 62 */
	kepler_buf_reset(&key);
	kepler_prom_sample_key(&k, text.data, &bad, &key);
	assert_int_equal(key.error, -EINVAL);
	bad = k.v[0];
	bad.id |= 15u << 12; /* family 15 */
	kepler_buf_reset(&key);
	kepler_prom_sample_key(&k, text.data, &bad, &key);
	assert_int_equal(key.error, -EINVAL);
	/* samples with no renderer's labels at all */
	kepler_buf_reset(&key);
	kepler_prom_sample_key(&none, text.data, &k.v[0], &key);
	assert_int_equal(key.error, -EINVAL);
	kepler_prom_samples_free(&k);
	kepler_buf_free(&text);
	kepler_buf_free(&key);
}

static void test_text_unchanged(void **state)
{
	static struct fix f;
	struct kepler_prom_options o = { .levels = KEPLER_LEVEL_ALL, .node_name = "n1" };
	struct kepler_prom_samples k = { .stable_ids = true };
	struct kepler_buf plain = KEPLER_BUF_INIT, text = KEPLER_BUF_INIT;

	(void)state;
	fix_build(&f);
	assert_int_equal(kepler_fmt_prom(&f.s, &o, &plain), 0);
	for (int pass = 0; pass < 3; pass++) { /* (the labels copied from the last rendering, from the 2nd) */
		size_t ided = 0;

		kepler_buf_reset(&text);
		assert_int_equal(kepler_fmt_prom_samples(&f.s, &o, &text, &k), 0);
		assert_int_equal(text.len, plain.len);
		assert_memory_equal(text.data, plain.data, plain.len);
		for (size_t i = 0; i < k.n; i++) {
			assert_false(k.v[i].kept);
			ided += k.v[i].id != 0;
		}
		assert_true(ided > NPROC * 12);
	}
	kepler_prom_samples_free(&k);
	kepler_buf_free(&plain);
	kepler_buf_free(&text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ids_name_keys),
		cmocka_unit_test(test_kept_keys_flushed),
		cmocka_unit_test(test_gone_rendering_refused),
		cmocka_unit_test(test_text_unchanged),
	};

	return kepler_test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
