// SPDX-License-Identifier: Apache-2.0
#include <stdarg.h>
#include <stdio.h>

#include "kepler/error.h"

int kepler_error_set(struct kepler_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return code;
	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return code;
}

void kepler_error_clear(struct kepler_error *err)
{
	if (!err)
		return;
	err->code = 0;
	err->msg[0] = '\0';
}
