/* SPDX-License-Identifier: Apache-2.0 */
/*
 * readers/push/push_state.h: the last snapshot a destination acknowledged,
 * kept in push.state-dir/NAME.state ("SEQ\n"), replaced
 * atomically (written aside, synced, renamed) so that a crash keeps the
 * old or the new, never half of one.
 */
#ifndef KEPLER_PUSH_STATE_H
#define KEPLER_PUSH_STATE_H

#include <stdint.h>

#include "kepler/error.h"

/* The acknowledged seq in *@ret (0: none yet, or the file is unreadable: said in @err). -errno. */
int push_state_load(const char *dir, const char *name, uint64_t *ret, struct kepler_error *err);
/* Record @seq. -errno with a message. */
int push_state_save(const char *dir, const char *name, uint64_t seq, struct kepler_error *err);

#endif
