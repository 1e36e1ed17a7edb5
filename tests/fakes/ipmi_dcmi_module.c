// SPDX-License-Identifier: Apache-2.0
/*
 * A module for OpenIPMI's ipmi_sim (loadlib in its lan.conf) that answers
 * DCMI Get Power Reading (NetFn 0x2C, command 0x02, group 0xDC), which
 * ipmi_sim lacks, from files in the directory given as its options:
 *   watts   the readings, one a line, answered in order (the last repeated)
 *   mode    how to answer: ok (default), cc HEX (that completion code),
 *           inactive (the power measurement is off), short (a truncated
 *           answer), hang SECONDS (answer that late: a BMC that hangs)
 *   served  appended: one line per reading answered, its watts
 * So tests/collectd/test_ipmi.sh drives a real RMCP+ BMC through the faults of a
 * real one. Built only where OpenIPMI's headers are (libopenipmi-dev).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <OpenIPMI/lanserv.h>
#include <OpenIPMI/mcserv.h>
#include <OpenIPMI/serv.h>

int ipmi_sim_module_print_version(sys_data_t *sys, char *options);
int ipmi_sim_module_init(sys_data_t *sys, const char *options);

static char dir[4096];
static unsigned long answered;

static void path_of(char *buf, size_t size, const char *name)
{
	snprintf(buf, size, "%s/%s", dir, name);
}

/* The @n-th watts of the sequence (the last one past its end), or 0 when there is none. */
static unsigned reading(unsigned long n)
{
	char p[4200], line[64];
	unsigned w = 0;
	FILE *f;

	path_of(p, sizeof(p), "watts");
	f = fopen(p, "r");
	if (!f)
		return 0;
	for (unsigned long i = 0; i <= n && fgets(line, sizeof(line), f); i++)
		w = (unsigned)strtoul(line, NULL, 10);
	fclose(f);
	return w;
}

static void mode(char *ret, size_t size)
{
	char p[4200];
	FILE *f;

	path_of(p, sizeof(p), "mode");
	snprintf(ret, size, "ok");
	f = fopen(p, "r");
	if (!f)
		return;
	if (!fgets(ret, (int)size, f))
		snprintf(ret, size, "ok");
	ret[strcspn(ret, "\n")] = '\0';
	fclose(f);
}

static void put16(unsigned char *p, unsigned v)
{
	p[0] = (unsigned char)(v & 0xff);
	p[1] = (unsigned char)((v >> 8) & 0xff);
}

static void put32(unsigned char *p, unsigned long v)
{
	put16(p, (unsigned)(v & 0xffff));
	put16(p + 2, (unsigned)((v >> 16) & 0xffff));
}

static void get_power_reading(lmc_data_t *mc, msg_t *msg, unsigned char *rdata, unsigned int *rdata_len,
			      void *cb_data)
{
	char m[64], p[4200];
	unsigned w;
	FILE *f;

	(void)mc, (void)cb_data;
	if (msg->cmd != 0x02) {
		rdata[0] = 0xc1;
		*rdata_len = 1;
		return;
	}
	mode(m, sizeof(m));
	if (!strncmp(m, "cc ", 3)) {
		rdata[0] = (unsigned char)strtoul(m + 3, NULL, 16);
		*rdata_len = 1;
		return;
	}
	if (!strncmp(m, "hang ", 5))
		sleep((unsigned)atoi(m + 5));
	w = reading(answered++);
	rdata[0] = 0;
	rdata[1] = 0xdc;
	put16(rdata + 2, w); /* current */
	put16(rdata + 4, w); /* minimum */
	put16(rdata + 6, w); /* maximum */
	put16(rdata + 8, w); /* average */
	put32(rdata + 10, (unsigned long)time(NULL));
	put32(rdata + 14, 1000); /* the statistics' period, ms */
	rdata[18] = strcmp(m, "inactive") ? 0x40 : 0x00;
	*rdata_len = strcmp(m, "short") ? 19 : 9;
	path_of(p, sizeof(p), "served");
	f = fopen(p, "a");
	if (f) {
		fprintf(f, "%u\n", w);
		fclose(f);
	}
}

int ipmi_sim_module_print_version(sys_data_t *sys, char *options)
{
	(void)sys, (void)options;
	printf("kepler-c DCMI power reading test module 1\n");
	return 0;
}

int ipmi_sim_module_init(sys_data_t *sys, const char *options)
{
	(void)sys;
	snprintf(dir, sizeof(dir), "%s", options ? options : ".");
	ipmi_emu_register_group_extension_handler(0xdc, get_power_reading, NULL);
	return 0;
}
