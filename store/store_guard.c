// SPDX-License-Identifier: Apache-2.0
/*
 * Faults on the store's mapped pages turned into errors.
 *
 * LMDB hands out pointers into a mapping of data.mdb. Touching a page past
 * the end of the file (truncated while mapped) raises SIGBUS; following a
 * page number read from a torn meta page (readers take no lock: see
 * docs/store.md) can touch an address past the mapping, SIGSEGV. Inside a
 * guarded store operation such a fault jumps back to the operation's start,
 * which ends its transaction and returns an error (retried a few times, since
 * a torn read is transient); outside one, the handler that was there before
 * (the default, or a sanitizer's) gets the fault as if this one did not exist.
 * LMDB's own assertions, which a damaged page can fail (a page's bounds
 * crossed in mdb_node_add), are the same kind of fault: inside a guarded
 * operation they jump back too, instead of abort().
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"

#define GUARD_ATTEMPTS 3

static __thread struct store_guard *current;
static struct sigaction previous_bus, previous_segv;
static pthread_mutex_t install_lock = PTHREAD_MUTEX_INITIALIZER;

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	struct store_guard *g = current;

	(void)si;
	(void)uc;
	if (g) {
		current = g->prev;
		g->fault = sig;
		siglongjmp(g->jb, 1);
	}
	/* not a store operation's: the previous handler takes the fault when the access runs again */
	sigaction(sig, sig == SIGBUS ? &previous_bus : &previous_segv, NULL);
}

static void install_one(int sig, struct sigaction *previous)
{
	struct sigaction sa, now;

	if (sigaction(sig, NULL, &now) == 0 && (now.sa_flags & SA_SIGINFO) && now.sa_sigaction == on_fault)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, previous);
}

/*
 * Checked at every guarded operation, not once: a program (or a test
 * harness) that sets its own handler later would otherwise take the fault
 * instead. One sigaction() call when nothing changed.
 */
static void install(void)
{
	pthread_mutex_lock(&install_lock);
	install_one(SIGBUS, &previous_bus);
	install_one(SIGSEGV, &previous_segv);
	pthread_mutex_unlock(&install_lock);
}

void store_guard_lmdb_assert(MDB_env *env, const char *msg)
{
	struct store_guard *g = current;

	(void)env;
	if (!g)
		return; /* not a store operation's: LMDB aborts, as without this */
	current = g->prev;
	g->fault = SIGABRT;
	snprintf(g->assertion, sizeof(g->assertion), "%s", msg ? msg : "");
	siglongjmp(g->jb, 1);
}

/* @slot in @slots: the first empty one (@item NULL: forget @old there). */
static void put(void **slots, void *old, void *item)
{
	for (size_t i = 0; i < STORE_GUARD_HELD; i++)
		if (slots[i] == old) {
			slots[i] = item;
			return;
		}
}

bool store_value_fits(struct kepler_store *s, const MDB_val *v)
{
	MDB_envinfo info;

	return mdb_env_info(s->env, &info) == 0 && v->mv_size <= info.me_mapsize;
}

int store_cursor_open(MDB_txn *txn, MDB_dbi dbi, MDB_cursor **ret)
{
	int rc = mdb_cursor_open(txn, dbi, ret);

	if (!rc && current)
		put((void **)current->cursors, NULL, *ret);
	return rc;
}

void store_cursor_close(MDB_cursor *c)
{
	if (current)
		put((void **)current->cursors, c, NULL);
	mdb_cursor_close(c);
}

void store_guard_hold(void *buf)
{
	if (current && buf)
		put(current->buffers, NULL, buf);
}

void store_guard_release(void *buf)
{
	if (current && buf)
		put(current->buffers, buf, NULL);
}

void store_guard_writing(void)
{
	if (current)
		current->writes = true;
}

void store_guard_enter(struct store_guard *g)
{
	install();
	g->fault = 0;
	g->txn = NULL;
	g->writes = false;
	memset(g->cursors, 0, sizeof(g->cursors));
	memset(g->buffers, 0, sizeof(g->buffers));
	g->prev = current;
	current = g;
}

void store_guard_leave(struct store_guard *g)
{
	if (current == g)
		current = g->prev;
}

void store_guard_track(MDB_txn *txn)
{
	if (current)
		current->txn = txn;
}

int store_guard_fault(struct kepler_store *s, struct store_guard *g, struct kepler_error *err)
{
	bool mended;
	int r;

	/* lock.mdb cut short: its size back first, as ending the transaction touches its map */
	mended = kepler_store_mend_lock(s);
	if (g->writes)
		s->write_faulted = true; /* its transaction is left as it is: ending it may fault again */
	else if (g->txn)
		mdb_txn_abort(g->txn); /* a read transaction holds nothing but itself */
	g->txn = NULL;
	for (size_t i = 0; i < STORE_GUARD_HELD;
	     i++) { /* a read cursor may be closed after its transaction */
		if (g->cursors[i] && !g->writes)
			mdb_cursor_close(g->cursors[i]);
		free(g->buffers[i]);
		g->cursors[i] = NULL;
		g->buffers[i] = NULL;
	}
	if (mended) {
		g->attempts = GUARD_ATTEMPTS; /* the store must be opened again */
		return kepler_error_set(
			err, -EAGAIN,
			"the store '%s': lock.mdb was cut short under this process; the store is "
			"opened again",
			s->path);
	}
	r = kepler_store_check_size(s, err);
	if (r < 0) {
		g->attempts = GUARD_ATTEMPTS; /* damaged: no retry mends it */
		return r;
	}
	if (g->writes)
		g->attempts = GUARD_ATTEMPTS; /* the write lock may be held: not again in this environment */
	if (g->fault == SIGABRT)
		return kepler_error_set(
			err, -EUCLEAN,
			"the store '%s': LMDB found a damaged page (%s) (if it persists, the store "
			"is damaged: stop kepler-collectd, move '%s' aside and start it again, or "
			"start it with --store.move-damaged)",
			s->path, g->assertion, s->path);
	return kepler_error_set(err, -EUCLEAN,
				"the store '%s': %s reading data.mdb (the file changed under this "
				"process; if it persists, the store is damaged: stop kepler-collectd, "
				"move '%s' aside and start it again)",
				s->path, g->fault == SIGBUS ? "a bus error" : "an invalid page", s->path);
}

bool store_guard_retry(struct store_guard *g, int r)
{
	/* a torn read (a page reused under a reader slower than the pinned window) is transient */
	if ((r != -EUCLEAN && r != -EPROTO) || ++g->attempts >= GUARD_ATTEMPTS)
		return false;
	return true;
}
