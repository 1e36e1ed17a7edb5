/* SPDX-License-Identifier: Apache-2.0 */
/*
 * readers/common/drop.h: a reader started as root becomes its user: the
 * exporter exporter.user, kepler-push push.user (see drop.c).
 */
#ifndef KEPLER_READERS_DROP_H
#define KEPLER_READERS_DROP_H

#include <stdbool.h>

#include "kepler/error.h"

/*
 * When root: become @user (named by option @key) with the store's group (of
 * @store_path, else 'kepler') as the one supplementary group, no
 * capability, no_new_privs. 1: switched; 0: not root, nothing to do; < 0:
 * refused (@user missing, root, or the store's owner) or failed, with the reason.
 */
int kepler_reader_drop_root(const char *key, const char *user, const char *store_path,
			    struct kepler_error *err);

/* no_new_privs for this thread and every one it starts after: call before the server's threads. */
int kepler_reader_no_new_privs(struct kepler_error *err);

#endif /* KEPLER_READERS_DROP_H */
