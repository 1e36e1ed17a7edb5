/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kepler/signals.h: how the long-running programs stop. SIGTERM and SIGINT
 * set kepler_stop_signal; the main loop checks it and ends cleanly.
 */
#ifndef KEPLER_SIGNALS_H
#define KEPLER_SIGNALS_H

#include <signal.h>

/* The signal that asked the program to stop, or 0; a program may set it (-1) to stop itself. */
extern volatile sig_atomic_t kepler_stop_signal;

/*
 * SIGTERM and SIGINT set kepler_stop_signal, without SA_RESTART, so that a
 * blocking call (a sleep, a poll) returns early; SIGPIPE is ignored.
 */
void kepler_stop_on_signals(void);

#endif /* KEPLER_SIGNALS_H */
