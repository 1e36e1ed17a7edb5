// SPDX-License-Identifier: Apache-2.0
/* Stopping on SIGTERM and SIGINT (see kepler/signals.h). */
#include <string.h>

#include "kepler/signals.h"

volatile sig_atomic_t kepler_stop_signal;

static void on_stop(int sig)
{
	kepler_stop_signal = sig;
}

void kepler_stop_on_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}
