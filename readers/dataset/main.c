// SPDX-License-Identifier: Apache-2.0
#include <stdio.h>

#include "kepler/config.h"
#include "kepler/log.h"

static const struct kepler_program program = {
	.name = "kepler-dataset",
	.prog = KEPLER_PROG_DATASET,
	.args = "",
	.summary = "Extracts training data (resource features and measured power) from the store as CSV or JSON lines, for kepler-train.",
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
