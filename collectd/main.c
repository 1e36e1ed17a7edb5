// SPDX-License-Identifier: Apache-2.0
#include <stdio.h>

#include "kepler/config.h"
#include "kepler/log.h"

static const struct kepler_program program = {
	.name = "kepler-collectd",
	.prog = KEPLER_PROG_COLLECTD,
	.args = "",
	.summary = "Measures the node's energy every interval, attributes it to the processes, containers, VMs and pods that used the CPU, and commits one immutable snapshot per interval to the store. Needs root (or CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE and read access to energy_uj); opens no network port.",
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
