// SPDX-License-Identifier: Apache-2.0
#include <stdio.h>

#include "kepler/config.h"
#include "kepler/log.h"

static const struct kepler_program program = {
	.name = "kepler-top",
	.prog = KEPLER_PROG_TOP,
	.args = "",
	.summary = "An htop-like live view of node power and of the processes, containers, pods and VMs using it, read from the store.",
};

int main(int argc, char **argv)
{
	struct kepler_config cfg;

	kepler_config_parse_or_exit(&cfg, &program, argc, argv);
	kepler_log_setup(program.name, cfg.log_level, cfg.log_format);
	kepler_err("not implemented yet");
	kepler_config_done(&cfg);
	return 1;
}
