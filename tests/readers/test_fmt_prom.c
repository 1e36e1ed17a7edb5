// SPDX-License-Identifier: Apache-2.0
/* The Prometheus formatter: exact numbers, escaping, levels, zones, duplicates, a golden text. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kepler_test.h"

#include "kepler/fmt.h"
#include "kepler/version.h"
#include "snapshot_fixture.h"

static const char *fixed(unsigned __int128 v, unsigned digits)
{
	static struct kepler_buf b;

	kepler_buf_reset(&b);
	kepler_buf_fixed(&b, v, digits);
	return kepler_buf_cstr(&b);
}

/* Fixed-point decimals of integers (joules from microjoules, seconds from ns). */
static void test_fixed(void **state)
{
	static const struct {
		const char *name;
		unsigned __int128 v;
		unsigned digits;
		const char *want;
	} cases[] = {
		{ "fraction, trailing zeros dropped", 1500000, 6, "1.5" },
		{ "below one, leading zeros kept", 7, 6, "0.000007" },
		{ "zero", 0, 6, "0" },
		{ "whole number: no point", 42000000, 6, "42" },
		{ "no digits", 123456789, 0, "123456789" },
		{ "largest microjoule counter", UINT64_MAX, 6, "18446744073709.551615" },
		{ "twelve digits", 1, 12, "0.000000000001" },
		{ "beyond 64 bits", (unsigned __int128)UINT64_MAX * 1000, 3, "18446744073709551615" },
		{ "beyond 64 bits, a fraction", (unsigned __int128)UINT64_MAX * 1000 + 5, 3,
		  "18446744073709551615.005" },
		{ "nineteen digits", 1, 19, "0.0000000000000000001" },
		{ "the largest", ~(unsigned __int128)0, 19, "34028236692093846346.3374607431768211455" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (strcmp(fixed(cases[i].v, cases[i].digits), cases[i].want))
			fail_msg("fixed \"%s\": got '%s', want '%s'", cases[i].name,
				 fixed(cases[i].v, cases[i].digits), cases[i].want);
}

static const char *escaped(const char *s)
{
	static struct kepler_buf b;

	kepler_buf_reset(&b);
	kepler_fmt_prom_label_value(&b, s);
	return kepler_buf_cstr(&b);
}

static const char *json_escaped(const char *s)
{
	static struct kepler_buf b;

	kepler_buf_reset(&b);
	kepler_fmt_json_string(&b, s);
	return kepler_buf_cstr(&b);
}

static const char *csv_escaped(const char *s)
{
	static struct kepler_buf b;

	kepler_buf_reset(&b);
	kepler_fmt_csv_field(&b, s);
	return kepler_buf_cstr(&b);
}

/* One input, escaped for a Prometheus label value, a JSON string and a CSV field. */
static void test_escaping(void **state)
{
	static const struct {
		const char *name, *in, *prom, *json, *csv;
	} cases[] = {
		{ "plain", "plain", "plain", "\"plain\"", "plain" },
		{ "quote", "a\"b", "a\\\"b", "\"a\\\"b\"", "\"a\"\"b\"" },
		{ "backslash", "a\\b", "a\\\\b", "\"a\\\\b\"", "a\\b" },
		{ "newline", "a\nb", "a\\nb", "\"a\\u000ab\"", "\"a\nb\"" },
		{ "comma", "a,b", "a,b", "\"a,b\"", "\"a,b\"" },
		{ "tab and control", "a\tb\x01", "a\tb\x01", "\"a\\u0009b\\u0001\"", "a\tb\x01" },
		{ "snowman kept", "\xe2\x98\x83", "\xe2\x98\x83", "\"\xe2\x98\x83\"", "\xe2\x98\x83" },
		{ "stray byte",
		  "x\xff"
		  "y",
		  "x\xef\xbf\xbdy", "\"x\xef\xbf\xbdy\"", "x\xef\xbf\xbdy" },
		{ "overlong NUL", "\xc0\x80", "\xef\xbf\xbd\xef\xbf\xbd", "\"\xef\xbf\xbd\xef\xbf\xbd\"",
		  "\xef\xbf\xbd\xef\xbf\xbd" },
		{ "surrogate", "\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd",
		  "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },
		{ "cut short", "\xe2\x98", "\xef\xbf\xbd\xef\xbf\xbd", "\"\xef\xbf\xbd\xef\xbf\xbd\"",
		  "\xef\xbf\xbd\xef\xbf\xbd" },
		{ "above U+10FFFF", "\xf4\x90\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd",
		  "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"",
		  "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },
		{ "empty", "", "", "\"\"", "" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *name = cases[i].name;

		if (strcmp(escaped(cases[i].in), cases[i].prom))
			fail_msg("case \"%s\": Prometheus label '%s', want '%s'", name, escaped(cases[i].in),
				 cases[i].prom);
		if (strcmp(json_escaped(cases[i].in), cases[i].json))
			fail_msg("case \"%s\": JSON '%s', want '%s'", name, json_escaped(cases[i].in),
				 cases[i].json);
		if (strcmp(csv_escaped(cases[i].in), cases[i].csv))
			fail_msg("case \"%s\": CSV '%s', want '%s'", name, csv_escaped(cases[i].in),
				 cases[i].csv);
	}
}

/* A small snapshot built by hand: one zone, two processes, one container, one pod, one VM. */
struct tiny {
	struct kepler_snapshot s;
	struct kepler_energy e[5];
	struct kepler_process p[2];
	struct kepler_container c;
	struct kepler_vm v;
	struct kepler_pod pod;
};

static void tiny_build(struct tiny *t)
{
	memset(t, 0, sizeof(*t));
	t->s.seq = 7;
	t->s.wall_ns = 1700000000500000000ULL;
	t->s.interval_ns = 2000000000ULL;
	t->s.cpu_usage_ratio = 0.25;
	t->s.nzones = 1;
	t->s.zones[0] = (struct kepler_zone){ "package",
					      "/sys/class/powercap/intel-rapl:0",
					      KEPLER_SOURCE_RAPL,
					      { 10000000, 4000000 },
					      { 3000000, 1000000 },
					      { 7000000, 3000000 },
					      { 0, 0, 0, 0 },
					      2,
					      5,
					      { 0, 0 },
					      { 0, "", "", "" } };
	t->e[0] = (struct kepler_energy){ 2500000, 750000 };
	t->e[1] = (struct kepler_energy){ 500000, 250000 };
	t->e[2] = (struct kepler_energy){ 500000, 250000 };
	t->e[3] = (struct kepler_energy){ 2500000, 750000 };
	t->e[4] = (struct kepler_energy){ 500000, 250000 };
	t->p[0] = (struct kepler_process){ .pid = 42,
					   .start_time_ns = 1,
					   .comm = "web \"srv\"",
					   .exe = "/usr/bin/web",
					   .type = KEPLER_PROC_REGULAR,
					   .container_id = "",
					   .vm_id = "",
					   .usage = { KEPLER_STATE_RUNNING, 1500000000, 600000000, &t->e[0],
						      NULL } };
	t->p[1] = (struct kepler_process){ .pid = 43,
					   .start_time_ns = 2,
					   .comm = "ctr",
					   .exe = "/bin/ctr",
					   .type = KEPLER_PROC_CONTAINER,
					   .container_id = "abc",
					   .vm_id = "",
					   .usage = { KEPLER_STATE_TERMINATED, 200000000, 200000000, &t->e[1],
						      NULL } };
	t->c = (struct kepler_container){ "abc",
					  "app",
					  "containerd",
					  "uid-1",
					  { KEPLER_STATE_TERMINATED, 200000000, 200000000, &t->e[2], NULL },
					  0 };
	t->v = (struct kepler_vm){
		"vm-1", "guest", "kvm", { KEPLER_STATE_RUNNING, 1500000000, 600000000, &t->e[3], NULL }
	};
	t->pod = (struct kepler_pod){ "uid-1",
				      "web-0",
				      "default",
				      { KEPLER_STATE_TERMINATED, 200000000, 200000000, &t->e[4], NULL },
				      "StatefulSet",
				      "web",
				      "team=shop,app.kubernetes.io/name=web" };
	t->s.nprocesses = 2;
	t->s.processes = t->p;
	t->s.ncontainers = 1;
	t->s.containers = &t->c;
	t->s.nvms = 1;
	t->s.vms = &t->v;
	t->s.npods = 1;
	t->s.pods = &t->pod;
}

static const char *render(const struct kepler_snapshot *s, unsigned levels,
			  const struct kepler_strlist *zones)
{
	static struct kepler_buf b;
	struct kepler_prom_options o = { .levels = levels, .zones = zones, .node_name = "n1" };

	kepler_buf_reset(&b);
	assert_int_equal(kepler_fmt_prom(s, &o, &b), 0);
	return kepler_buf_cstr(&b);
}

static const char golden_head[] =
	"# HELP kepler_node_cpu_joules_total Energy consumption of cpu at node level in joules (a model estimate, not a measurement, for a zone where kepler_node_zone_source_info has source=\"model\")\n"
	"# TYPE kepler_node_cpu_joules_total counter\n"
	"kepler_node_cpu_joules_total{node_name=\"n1\",path=\"/sys/class/powercap/intel-rapl:0\",zone=\"package\"} 10\n"
	"# HELP kepler_node_cpu_watts Power consumption of cpu at node level in watts (a model estimate, not a measurement, for a zone where kepler_node_zone_source_info has source=\"model\")\n"
	"# TYPE kepler_node_cpu_watts gauge\n"
	"kepler_node_cpu_watts{node_name=\"n1\",path=\"/sys/class/powercap/intel-rapl:0\",zone=\"package\"} 2\n"
	"# HELP kepler_node_cpu_active_joules_total Energy consumption of cpu in active state at node level in joules (a model estimate, not a measurement, for a zone where kepler_node_zone_source_info has source=\"model\")\n"
	"# TYPE kepler_node_cpu_active_joules_total counter\n"
	"kepler_node_cpu_active_joules_total{node_name=\"n1\",path=\"/sys/class/powercap/intel-rapl:0\",zone=\"package\"} 3\n"
	"# HELP kepler_node_cpu_active_watts Power consumption of cpu in active state at node level in watts (a model estimate, not a measurement, for a zone where kepler_node_zone_source_info has source=\"model\")\n"
	"# TYPE kepler_node_cpu_active_watts gauge\n"
	"kepler_node_cpu_active_watts{node_name=\"n1\",path=\"/sys/class/powercap/intel-rapl:0\",zone=\"package\"} 0.5\n"
	"# HELP kepler_node_cpu_idle_joules_total Energy consumption of cpu in idle state at node level in joules (a model estimate, not a measurement, for a zone where kepler_node_zone_source_info has source=\"model\")\n"
	"# TYPE kepler_node_cpu_idle_joules_total counter\n"
	"kepler_node_cpu_idle_joules_total{node_name=\"n1\",path=\"/sys/class/powercap/intel-rapl:0\",zone=\"package\"} 7\n"
	"# HELP kepler_node_cpu_idle_watts Power consumption of cpu in idle state at node level in watts (a model estimate, not a measurement, for a zone where kepler_node_zone_source_info has source=\"model\")\n"
	"# TYPE kepler_node_cpu_idle_watts gauge\n"
	"kepler_node_cpu_idle_watts{node_name=\"n1\",path=\"/sys/class/powercap/intel-rapl:0\",zone=\"package\"} 1.5\n"
	"# HELP kepler_node_cpu_unattributed_joules_total Energy of cpu at node level that no process took (CPU time no listed process accounts for; idle energy attribution.idle gave to no workload) in joules (a model estimate, not a measurement, for a zone where kepler_node_zone_source_info has source=\"model\")\n"
	"# TYPE kepler_node_cpu_unattributed_joules_total counter\n"
	"kepler_node_cpu_unattributed_joules_total{node_name=\"n1\",path=\"/sys/class/powercap/intel-rapl:0\",zone=\"package\"} 0\n"
	"# HELP kepler_node_cpu_unattributed_watts Power of cpu at node level that no process took in watts (a model estimate, not a measurement, for a zone where kepler_node_zone_source_info has source=\"model\")\n"
	"# TYPE kepler_node_cpu_unattributed_watts gauge\n"
	"kepler_node_cpu_unattributed_watts{node_name=\"n1\",path=\"/sys/class/powercap/intel-rapl:0\",zone=\"package\"} 0\n"
	"# HELP kepler_node_cpu_usage_ratio CPU usage ratio of a node (value between 0.0 and 1.0)\n"
	"# TYPE kepler_node_cpu_usage_ratio gauge\n"
	"kepler_node_cpu_usage_ratio{node_name=\"n1\"} 0.250000\n"
	"# HELP kepler_process_cpu_joules_total Energy consumption of cpu at process level in joules (a model estimate, not a measurement, for a zone where kepler_node_zone_source_info has source=\"model\")\n"
	"# TYPE kepler_process_cpu_joules_total counter\n"
	"kepler_process_cpu_joules_total{comm=\"web \\\"srv\\\"\",container_id=\"\",exe=\"/usr/bin/web\",node_name=\"n1\",pid=\"42\",state=\"running\",type=\"regular\",vm_id=\"\",zone=\"package\"} 2.5\n"
	"kepler_process_cpu_joules_total{comm=\"ctr\",container_id=\"abc\",exe=\"/bin/ctr\",node_name=\"n1\",pid=\"43\",state=\"terminated\",type=\"container\",vm_id=\"\",zone=\"package\"} 0.5\n"
	"# HELP kepler_process_cpu_watts Power consumption of cpu at process level in watts (a model estimate, not a measurement, for a zone where kepler_node_zone_source_info has source=\"model\")\n"
	"# TYPE kepler_process_cpu_watts gauge\n"
	"kepler_process_cpu_watts{comm=\"web \\\"srv\\\"\",container_id=\"\",exe=\"/usr/bin/web\",node_name=\"n1\",pid=\"42\",state=\"running\",type=\"regular\",vm_id=\"\",zone=\"package\"} 0.375\n"
	"kepler_process_cpu_watts{comm=\"ctr\",container_id=\"abc\",exe=\"/bin/ctr\",node_name=\"n1\",pid=\"43\",state=\"terminated\",type=\"container\",vm_id=\"\",zone=\"package\"} 0.125\n"
	"# HELP kepler_process_cpu_seconds_total Total user and system time of cpu at process level in seconds\n"
	"# TYPE kepler_process_cpu_seconds_total counter\n"
	"kepler_process_cpu_seconds_total{comm=\"web \\\"srv\\\"\",container_id=\"\",exe=\"/usr/bin/web\",node_name=\"n1\",pid=\"42\",type=\"regular\",vm_id=\"\"} 1.5\n"
	"kepler_process_cpu_seconds_total{comm=\"ctr\",container_id=\"abc\",exe=\"/bin/ctr\",node_name=\"n1\",pid=\"43\",type=\"container\",vm_id=\"\"} 0.2\n"
	"# HELP kepler_container_cpu_joules_total Energy consumption of cpu at container level in joules (a model estimate, not a measurement, for a zone where kepler_node_zone_source_info has source=\"model\")\n"
	"# TYPE kepler_container_cpu_joules_total counter\n"
	"kepler_container_cpu_joules_total{container_id=\"abc\",container_name=\"app\",node_name=\"n1\",pod_id=\"uid-1\",runtime=\"containerd\",state=\"terminated\",zone=\"package\"} 0.5\n"
	"# HELP kepler_container_cpu_watts Power consumption of cpu at container level in watts (a model estimate, not a measurement, for a zone where kepler_node_zone_source_info has source=\"model\")\n"
	"# TYPE kepler_container_cpu_watts gauge\n"
	"kepler_container_cpu_watts{container_id=\"abc\",container_name=\"app\",node_name=\"n1\",pod_id=\"uid-1\",runtime=\"containerd\",state=\"terminated\",zone=\"package\"} 0.125\n"
	"# HELP kepler_container_cpu_seconds_total Total user and system time of cpu at container level in seconds\n"
	"# TYPE kepler_container_cpu_seconds_total counter\n"
	"kepler_container_cpu_seconds_total{container_id=\"abc\",container_name=\"app\",node_name=\"n1\",pod_id=\"uid-1\",runtime=\"containerd\",state=\"terminated\"} 0.2\n"
	"# HELP kepler_vm_cpu_joules_total Energy consumption of cpu at vm level in joules (a model estimate, not a measurement, for a zone where kepler_node_zone_source_info has source=\"model\")\n"
	"# TYPE kepler_vm_cpu_joules_total counter\n"
	"kepler_vm_cpu_joules_total{hypervisor=\"kvm\",node_name=\"n1\",state=\"running\",vm_id=\"vm-1\",vm_name=\"guest\",zone=\"package\"} 2.5\n"
	"# HELP kepler_vm_cpu_watts Power consumption of cpu at vm level in watts (a model estimate, not a measurement, for a zone where kepler_node_zone_source_info has source=\"model\")\n"
	"# TYPE kepler_vm_cpu_watts gauge\n"
	"kepler_vm_cpu_watts{hypervisor=\"kvm\",node_name=\"n1\",state=\"running\",vm_id=\"vm-1\",vm_name=\"guest\",zone=\"package\"} 0.375\n"
	"# HELP kepler_pod_cpu_joules_total Energy consumption of cpu at pod level in joules (a model estimate, not a measurement, for a zone where kepler_node_zone_source_info has source=\"model\")\n"
	"# TYPE kepler_pod_cpu_joules_total counter\n"
	"kepler_pod_cpu_joules_total{node_name=\"n1\",pod_id=\"uid-1\",pod_name=\"web-0\",pod_namespace=\"default\",state=\"terminated\",zone=\"package\"} 0.5\n"
	"# HELP kepler_pod_cpu_watts Power consumption of cpu at pod level in watts (a model estimate, not a measurement, for a zone where kepler_node_zone_source_info has source=\"model\")\n"
	"# TYPE kepler_pod_cpu_watts gauge\n"
	"kepler_pod_cpu_watts{node_name=\"n1\",pod_id=\"uid-1\",pod_name=\"web-0\",pod_namespace=\"default\",state=\"terminated\",zone=\"package\"} 0.125\n"
	"# HELP kepler_pod_info Pod owner (its controller: a ReplicaSet's Deployment, a Job's CronJob) and the pod labels kube.pod-labels records, value 1, for joins\n"
	"# TYPE kepler_pod_info gauge\n"
	"kepler_pod_info{label_app_kubernetes_io_name=\"web\",label_team=\"shop\",node_name=\"n1\",owner_kind=\"StatefulSet\",owner_name=\"web\",pod_id=\"uid-1\",pod_name=\"web-0\",pod_namespace=\"default\"} 1\n"
	"# HELP kepler_node_zone_source_info Energy source of each zone: rapl, hwmon, nvml (a GPU), model (an estimate, not a measurement) or fake\n"
	"# TYPE kepler_node_zone_source_info gauge\n"
	"kepler_node_zone_source_info{node_name=\"n1\",path=\"/sys/class/powercap/intel-rapl:0\",source=\"rapl\",zone=\"package\"} 1\n"
	"# HELP kepler_node_meter_resets_total Energy counter resets of a zone since the collector started (the counter went back or jumped implausibly; that step is not counted as energy)\n"
	"# TYPE kepler_node_meter_resets_total counter\n"
	"kepler_node_meter_resets_total{node_name=\"n1\",path=\"/sys/class/powercap/intel-rapl:0\",zone=\"package\"} 2\n"
	"# HELP kepler_node_meter_wraps_total Energy counter wraparounds of a zone since the collector started (normal; counted across)\n"
	"# TYPE kepler_node_meter_wraps_total counter\n"
	"kepler_node_meter_wraps_total{node_name=\"n1\",path=\"/sys/class/powercap/intel-rapl:0\",zone=\"package\"} 5\n"
	"# HELP kepler_snapshot_seq Sequence number of the snapshot these metrics come from\n"
	"# TYPE kepler_snapshot_seq gauge\n"
	"kepler_snapshot_seq{node_name=\"n1\"} 7\n"
	"# HELP kepler_snapshot_timestamp_seconds Wall-clock time at the end of the snapshot's interval\n"
	"# TYPE kepler_snapshot_timestamp_seconds gauge\n"
	"kepler_snapshot_timestamp_seconds{node_name=\"n1\"} 1700000000.5\n";

static void test_golden(void **state)
{
	struct tiny t;
	const char *out;

	(void)state;
	tiny_build(&t);
	out = render(&t.s, KEPLER_LEVEL_ALL, NULL);
	assert_memory_equal(out, golden_head, sizeof(golden_head) - 1);
	assert_non_null(strstr(out, "kepler_snapshot_interval_seconds{node_name=\"n1\"} 2\n"));
	assert_non_null(strstr(out, "# TYPE kepler_build_info gauge\nkepler_build_info{arch=\""));
	assert_non_null(strstr(out, ",version=\"" KEPLER_VERSION "\"} 1\n"));
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

static void test_levels_and_zones(void **state)
{
	struct fixture f;
	char *items[] = { "DRAM" };
	struct kepler_strlist dram = { items, 1 };
	const char *out;

	(void)state;
	fixture_build(&f, 20, 1);
	out = render(&f.snap, KEPLER_LEVEL_NODE, NULL);
	assert_null(strstr(out, "kepler_process_"));
	assert_null(strstr(out, "kepler_container_"));
	assert_non_null(strstr(out, "kepler_node_cpu_joules_total{"));
	assert_non_null(strstr(out, "kepler_build_info{"));
	out = render(&f.snap, KEPLER_LEVEL_PROCESS | KEPLER_LEVEL_POD, &dram);
	assert_null(strstr(out, "kepler_node_cpu_joules_total"));
	assert_null(strstr(out, "kepler_vm_"));
	assert_null(strstr(out, "zone=\"package\""));
	assert_int_equal(count(out, "kepler_process_cpu_joules_total{"), 20);
	assert_int_equal(count(out, "kepler_pod_cpu_watts{"), 1);
	/* HELP and TYPE once per family */
	assert_int_equal(count(out, "# TYPE kepler_process_cpu_joules_total "), 1);
	fixture_free(&f);
}

static void test_reused_pid_is_one_series(void **state)
{
	struct tiny t;
	struct kepler_process p[4];
	const char *out;

	(void)state;
	tiny_build(&t);
	/* pid 42 three times: running (newest), terminated, terminated (oldest) */
	p[0] = t.p[0];
	p[1] = t.p[0];
	p[1].start_time_ns = 0;
	p[1].usage.state = KEPLER_STATE_TERMINATED;
	p[2] = p[1];
	p[2].start_time_ns = 0;
	p[3] = t.p[1];
	t.s.processes = p;
	t.s.nprocesses = 4;
	out = render(&t.s, KEPLER_LEVEL_PROCESS, NULL);
	/* joules: one running + one terminated for pid 42, one for pid 43 */
	assert_int_equal(count(out, "kepler_process_cpu_joules_total{comm=\"web"), 2);
	assert_int_equal(count(out, "kepler_process_cpu_seconds_total{comm=\"web"), 1);
	assert_int_equal(count(out, "kepler_process_cpu_seconds_total{"), 2);
	/* the one kept for seconds is the running one */
	assert_non_null(strstr(out, "pid=\"42\",type=\"regular\",vm_id=\"\"} 1.5\n"));
}

/* Σ process watts == node active watts, to the picowatt per process. */
static void test_watts_sum(void **state)
{
	enum { N = 500 };
	static struct kepler_process p[N];
	static struct kepler_energy e[N];
	struct kepler_snapshot s = { .seq = 1, .interval_ns = 4999999937ULL, .nzones = 1 };
	uint64_t active = 0;
	double sum = 0, node = 0;
	unsigned seed = 3;
	const char *out, *q;

	(void)state;
	for (int i = 0; i < N; i++) {
		e[i] = (struct kepler_energy){ 0, (uint64_t)rand_r(&seed) % 100000 };
		active += e[i].delta_uj;
		p[i] = (struct kepler_process){ .pid = (uint32_t)i + 1,
						.comm = "w",
						.exe = "",
						.container_id = "",
						.vm_id = "",
						.usage = { .zones = &e[i] } };
	}
	s.zones[0] = (struct kepler_zone){
		"package", "", KEPLER_SOURCE_FAKE, { 0, active },    { 0, active }, { 0, 0 }, { 0, 0, 0, 0 },
		0,         0,  { 0, 0 },           { 0, "", "", "" }
	};
	s.processes = p;
	s.nprocesses = N;
	out = render(&s, KEPLER_LEVEL_ALL, NULL);
	for (q = out; (q = strstr(q, "\nkepler_process_cpu_watts{")); q++)
		sum += strtod(strstr(q, "} ") + 2, NULL);
	node = strtod(strstr(strstr(out, "\nkepler_node_cpu_active_watts{"), "} ") + 2, NULL);
	assert_true(node > 0);
	assert_true(sum <= node && node - sum < N * 1e-12 + 1e-9);
}

/* The lines of @out that start with @prefix and contain @needle (NULL: any): their count and the sum of their values. */
static size_t scan_lines(const char *out, const char *prefix, const char *needle, double *ret_sum)
{
	size_t n = 0, pl = strlen(prefix);
	double sum = 0;

	for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *eol = strchr(l, '\n');
		size_t len = eol ? (size_t)(eol - l) : strlen(l);
		char line[4096];

		if (len >= sizeof(line) || strncmp(l, prefix, pl))
			continue;
		memcpy(line, l, len);
		line[len] = '\0';
		if (needle && !strstr(line, needle))
			continue;
		n++;
		sum += strtod(strstr(line, "} ") + 2, NULL);
	}
	if (ret_sum)
		*ret_sum = sum;
	return n;
}

static size_t count_lines(const char *out, const char *prefix, const char *needle)
{
	return scan_lines(out, prefix, needle, NULL);
}

/*
 * metrics.process.top 5 of 500 processes in 2 zones: per zone 5 processes
 * (those with the most energy in that zone) and one "other" whose watts are
 * the rest's: the zone's process watts add up to the node's active watts.
 */
static void test_process_top(void **state)
{
	enum { N = 500, TOP = 5 };
	static struct kepler_process p[N];
	static struct kepler_energy e[N][2];
	struct kepler_snapshot s = { .seq = 1, .interval_ns = 4999999937ULL, .nzones = 2 };
	struct kepler_prom_options o = { .levels = KEPLER_LEVEL_ALL, .node_name = "n1", .process_top = TOP };
	struct kepler_buf b = KEPLER_BUF_INIT;
	uint64_t active[2] = { 0, 0 };
	unsigned seed = 7;
	const char *out;

	(void)state;
	for (int i = 0; i < N; i++) {
		for (int z = 0; z < 2; z++) {
			e[i][z] = (struct kepler_energy){ (uint64_t)rand_r(&seed) % 1000000000,
							  (uint64_t)rand_r(&seed) % 100000 };
			active[z] += e[i][z].delta_uj;
		}
		p[i] = (struct kepler_process){ .pid = (uint32_t)i + 1,
						.comm = "w",
						.exe = "",
						.container_id = "",
						.vm_id = "",
						.usage = { .zones = e[i] } };
	}
	e[42][0].total_uj = 2000000000; /* the most energy in package, none in this interval */
	active[0] -= e[42][0].delta_uj;
	e[42][0].delta_uj = 0;
	for (int z = 0; z < 2; z++)
		s.zones[z] = (struct kepler_zone){ z ? "dram" : "package",
						   "",
						   KEPLER_SOURCE_FAKE,
						   { 0, active[z] },
						   { 0, active[z] },
						   { 0, 0 },
						   { 0, 0, 0, 0 },
						   0,
						   0,
						   { 0, 0 },
						   { 0, "", "", "" } };
	s.processes = p;
	s.nprocesses = N;
	assert_int_equal(kepler_fmt_prom(&s, &o, &b), 0);
	out = kepler_buf_cstr(&b);
	for (int z = 0; z < 2; z++) {
		char zone[32];
		double sum = 0, node = 0;

		snprintf(zone, sizeof(zone), "zone=\"%s\"", z ? "dram" : "package");
		assert_int_equal(count_lines(out, "kepler_process_cpu_watts{", zone), TOP + 1);
		assert_int_equal(count_lines(out, "kepler_process_cpu_joules_total{", zone), TOP);
		scan_lines(out, "kepler_process_cpu_watts{", zone, &sum);
		assert_int_equal(scan_lines(out, "kepler_node_cpu_active_watts{", zone, &node), 1);
		assert_true(node > 0);
		assert_true(sum <= node && node - sum < (TOP + 1) * 1e-12 + 1e-9);
	}
	assert_int_equal(count_lines(out, "kepler_process_cpu_watts{comm=\"other\"", NULL), 2);
	assert_true(
		count_lines(out, "kepler_process_cpu_joules_total{",
			    "pid=\"43\",state=\"running\",type=\"regular\",vm_id=\"\",zone=\"package\"") ==
		1);
	assert_true(count_lines(out, "kepler_process_cpu_seconds_total{", NULL) <= 2 * TOP);
	print_message("metrics.process.top %d of %d processes, 2 zones: %zu process series instead of %d\n",
		      TOP, N, count_lines(out, "kepler_process_cpu_", NULL), N * 5);
	kepler_buf_free(&b);
}

/*
 * metrics.process.fold: of 200 processes, the 100 folded (half in a
 * container, half the node's) are two series type="folded" per zone
 * instead of 100, whose counters are the folds' totals; the zone's process
 * watts still add up to the node's active watts; with the top, the folded
 * are not in "other"; off: every process its own series.
 */
static void test_process_fold(void **state)
{
	enum { N = 200 };
	static struct kepler_process p[N];
	static struct kepler_energy e[N][2], fe[2][2];
	struct kepler_snapshot s = { .seq = 1, .interval_ns = 5000000000ULL, .nzones = 2 };
	struct kepler_fold folds[2] = {
		{ .container_id = "", .vm_id = "", .processes = 900, .usage = { .zones = fe[0] } },
		{ .container_id = "c1", .vm_id = "", .processes = 7, .usage = { .zones = fe[1] } },
	};
	struct kepler_prom_options o = { .levels = KEPLER_LEVEL_ALL,
					 .node_name = "n1",
					 .process_fold = true };
	struct kepler_buf b = KEPLER_BUF_INIT;
	uint64_t active[2] = { 0, 0 };
	unsigned seed = 9;
	size_t lines[3];
	const char *out;

	(void)state;
	for (int i = 0; i < N; i++) {
		bool folded = i % 2, in_c1 = i % 4 == 3;

		for (int z = 0; z < 2; z++) {
			e[i][z] = (struct kepler_energy){ 0, (uint64_t)rand_r(&seed) % 100000 };
			e[i][z].total_uj = e[i][z].delta_uj + (folded ? 0 : 5000000);
			active[z] += e[i][z].delta_uj;
			if (folded) {
				fe[in_c1][z].delta_uj += e[i][z].delta_uj;
				fe[in_c1][z].total_uj = 1234567890 + (uint64_t)z;
			}
		}
		p[i] = (struct kepler_process){ .pid = (uint32_t)i + 1,
						.comm = "w",
						.exe = "",
						.container_id = in_c1 ? "c1" : "",
						.vm_id = "",
						.flags = folded ? KEPLER_PROCESS_FOLDED : 0,
						.usage = { .zones = e[i],
							   .state = folded ? KEPLER_STATE_TERMINATED
									   : KEPLER_STATE_RUNNING } };
	}
	for (int z = 0; z < 2; z++)
		s.zones[z] = (struct kepler_zone){ .name = z ? "dram" : "package",
						   .path = "",
						   .source = KEPLER_SOURCE_FAKE,
						   .energy = { 0, active[z] },
						   .active = { 0, active[z] },
						   .device = { 0, "", "", "" } };
	s.processes = p;
	s.nprocesses = N;
	s.folds = folds;
	s.nfolds = 2;
	for (int pass = 0; pass < 3; pass++) {
		o.process_fold = pass < 2;
		o.process_top = pass == 1 ? 5 : 0;
		kepler_buf_reset(&b);
		assert_int_equal(kepler_fmt_prom(&s, &o, &b), 0);
		out = kepler_buf_cstr(&b);
		lines[pass] = count_lines(out, "kepler_process_cpu_", NULL);
		for (int z = 0; z < 2; z++) {
			char zone[32];
			double sum = 0, node = 0;
			size_t series = pass == 0 ? N / 2 + 2 : pass == 1 ? 5 + 1 + 2 : N;

			snprintf(zone, sizeof(zone), "zone=\"%s\"", z ? "dram" : "package");
			assert_int_equal(scan_lines(out, "kepler_process_cpu_watts{", zone, &sum), series);
			assert_int_equal(scan_lines(out, "kepler_node_cpu_active_watts{", zone, &node), 1);
			assert_true(fabs(sum - node) < (double)N * 1e-12 + 1e-9);
		}
		assert_int_equal(
			count_lines(out,
				    "kepler_process_cpu_joules_total{comm=\"\",container_id=\"c1\",exe=\"\","
				    "node_name=\"n1\",pid=\"\",state=\"terminated\",type=\"folded\"",
				    "1234.567891"),
			pass < 2 ? 1 : 0);
		assert_int_equal(count_lines(out, "kepler_process_cpu_seconds_total{", "type=\"folded\""),
				 pass < 2 ? 2 : 0);
	}
	print_message(
		"metrics.process.fold: %d processes, %d folded into 2: %zu process series instead of %zu\n",
		N, N / 2, lines[0], lines[2]);
	kepler_buf_free(&b);
}

/* metrics.container.top 3: per zone 3 containers and "other"; the zone's container watts keep their sum. */
static void test_container_top(void **state)
{
	struct kepler_prom_options all = { .levels = KEPLER_LEVEL_ALL, .node_name = "n1" };
	struct kepler_prom_options top = all;
	struct kepler_buf a = KEPLER_BUF_INIT, b = KEPLER_BUF_INIT;
	struct fixture f;

	(void)state;
	fixture_build(&f, 300, 1);
	assert_true(f.snap.ncontainers > 10);
	top.container_top = 3;
	assert_int_equal(kepler_fmt_prom(&f.snap, &all, &a), 0);
	assert_int_equal(kepler_fmt_prom(&f.snap, &top, &b), 0);
	for (size_t z = 0; z < f.snap.nzones; z++) {
		char zone[64];
		double whole = 0, kept = 0;

		snprintf(zone, sizeof(zone), "zone=\"%s\"", f.snap.zones[z].name);
		assert_int_equal(scan_lines(kepler_buf_cstr(&a), "kepler_container_cpu_watts{", zone, &whole),
				 f.snap.ncontainers);
		assert_int_equal(scan_lines(kepler_buf_cstr(&b), "kepler_container_cpu_watts{", zone, &kept),
				 3 + 1);
		assert_int_equal(count_lines(kepler_buf_cstr(&b), "kepler_container_cpu_joules_total{", zone),
				 3);
		assert_true(fabs(whole - kept) < (double)f.snap.ncontainers * 1e-12 + 1e-9);
	}
	assert_int_equal(count_lines(kepler_buf_cstr(&b),
				     "kepler_container_cpu_watts{container_id=\"\",container_name=\"other\"",
				     NULL),
			 f.snap.nzones);
	/* pods are whole: the top is the containers' only */
	assert_int_equal(count_lines(kepler_buf_cstr(&a), "kepler_pod_cpu_watts{", NULL),
			 count_lines(kepler_buf_cstr(&b), "kepler_pod_cpu_watts{", NULL));
	kepler_buf_free(&a);
	kepler_buf_free(&b);
	fixture_free(&f);
}

/* The store's CPU list into kepler_node_cpu_info, one series per logical CPU. */
static void test_cpu_info(void **state)
{
	struct kepler_cpu cpus[] = {
		{ "0", "AuthenticAMD", "AMD EPYC 7B13", "0", "0" },
		{ "1", "AuthenticAMD", "Odd \"quoted\" \\ name", "0", "1" },
		{ "2", "", "", "", "" }, /* arm64: no vendor_id, model name, physical or core id */
	};
	struct kepler_cpuinfo ci = { cpus, 3 };
	struct kepler_buf b = KEPLER_BUF_INIT;

	(void)state;
	kepler_fmt_prom_cpu_info(&b, &ci);
	kepler_buf_addc(&b, '\0');
	assert_string_equal(
		b.data,
		"# HELP kepler_node_cpu_info CPU information from procfs\n"
		"# TYPE kepler_node_cpu_info gauge\n"
		"kepler_node_cpu_info{core_id=\"0\",model_name=\"AMD EPYC 7B13\",physical_id=\"0\",processor=\"0\","
		"vendor_id=\"AuthenticAMD\"} 1\n"
		"kepler_node_cpu_info{core_id=\"1\",model_name=\"Odd \\\"quoted\\\" \\\\ name\",physical_id=\"0\","
		"processor=\"1\",vendor_id=\"AuthenticAMD\"} 1\n"
		"kepler_node_cpu_info{core_id=\"\",model_name=\"\",physical_id=\"\",processor=\"2\","
		"vendor_id=\"\"} 1\n");
	/* no CPU at all: no family */
	ci.n = 0;
	kepler_buf_reset(&b);
	kepler_fmt_prom_cpu_info(&b, &ci);
	assert_int_equal(b.len, 0);
	kepler_buf_free(&b);
}

/*
 * Two GPU zones beside the CPU zone: Kepler's GPU families with their
 * labels, workloads summed over the GPUs, nothing for a workload that never
 * used one, and no GPU zone in the CPU families.
 */
static void test_gpu_families(void **state)
{
	struct kepler_energy e[5][3];
	struct kepler_process p[2];
	struct kepler_container c;
	struct kepler_pod pod;
	struct kepler_snapshot s = { .seq = 3, .interval_ns = 1000000000ULL, .nzones = 3 };
	const char *out;

	(void)state;
	s.zones[0] = (struct kepler_zone){ .name = "package",
					   .path = "p",
					   .source = KEPLER_SOURCE_RAPL,
					   .energy = { 10, 10 },
					   .active = { 5, 5 },
					   .idle = { 5, 5 },
					   .device = { 0, "", "", "" } };
	for (int g = 1; g < 3; g++)
		s.zones[g] = (struct kepler_zone){ .name = g == 1 ? "gpu0" : "gpu1",
						   .path = g == 1 ? "GPU-a" : "GPU-b",
						   .source = KEPLER_SOURCE_NVML,
						   .energy = { 300000000, 300000000 },
						   .active = { 260000000, 260000000 },
						   .idle = { 40000000, 40000000 },
						   .unattributed = { 60000000, 60000000 },
						   .device = { (uint32_t)(g - 1), g == 1 ? "GPU-a" : "GPU-b",
							       "NVIDIA \"H100\"", "nvidia" } };
	for (int i = 0; i < 5; i++)
		for (int z = 0; z < 3; z++)
			e[i][z] = (struct kepler_energy){ 0, 0 };
	e[0][1] =
		(struct kepler_energy){ 150000000, 150000000 }; /* process 42: 150 J on gpu0, 50 J on gpu1 */
	e[0][2] = (struct kepler_energy){ 50000000, 50000000 };
	e[2][1] = e[0][1], e[2][2] = e[0][2]; /* its container and pod */
	e[3][1] = e[0][1], e[3][2] = e[0][2];
	p[0] = (struct kepler_process){ .pid = 42,
					.comm = "train",
					.exe = "/bin/train",
					.type = KEPLER_PROC_CONTAINER,
					.container_id = "c1",
					.vm_id = "",
					.usage = { KEPLER_STATE_RUNNING, 1, 1, e[0], NULL } };
	p[1] = (struct kepler_process){ .pid = 43,
					.comm = "idle",
					.exe = "/bin/idle",
					.type = KEPLER_PROC_REGULAR,
					.container_id = "",
					.vm_id = "",
					.usage = { KEPLER_STATE_RUNNING, 1, 1, e[1], NULL } };
	c = (struct kepler_container){
		"c1", "trainer", "containerd", "uid-1", { KEPLER_STATE_RUNNING, 1, 1, e[2], NULL }, 0
	};
	pod = (struct kepler_pod){ "uid-1", "job-0", "ml", { KEPLER_STATE_RUNNING, 1, 1, e[3], NULL },
				   "",      "",      "" };
	s.processes = p;
	s.nprocesses = 2;
	s.containers = &c;
	s.ncontainers = 1;
	s.pods = &pod;
	s.npods = 1;
	out = render(&s, KEPLER_LEVEL_ALL, NULL);
	assert_non_null(strstr(
		out, "kepler_node_gpu_info{gpu=\"1\",gpu_name=\"NVIDIA \\\"H100\\\"\",gpu_uuid=\"GPU-b\","
		     "node_name=\"n1\",vendor=\"nvidia\"} 1\n"));
	assert_non_null(strstr(out, "kepler_node_gpu_active_watts{gpu=\"0\",gpu_name=\"NVIDIA \\\"H100\\\"\","
				    "gpu_uuid=\"GPU-a\",node_name=\"n1\",vendor=\"nvidia\"} 260\n"));
	assert_non_null(strstr(out, "kepler_node_gpu_idle_joules_total{gpu=\"0\""));
	assert_non_null(strstr(out, "kepler_node_gpu_unattributed_watts{gpu=\"1\""));
	assert_non_null(strstr(out, "kepler_process_gpu_joules_total{comm=\"train\",container_id=\"c1\","
				    "exe=\"/bin/train\",node_name=\"n1\",pid=\"42\",state=\"running\","
				    "type=\"container\",vm_id=\"\"} 200\n"));
	assert_non_null(strstr(
		out, "kepler_container_gpu_watts{container_id=\"c1\",container_name=\"trainer\","
		     "node_name=\"n1\",pod_id=\"uid-1\",runtime=\"containerd\",state=\"running\"} 200\n"));
	assert_non_null(strstr(
		out, "kepler_pod_gpu_joules_total{node_name=\"n1\",pod_id=\"uid-1\",pod_name=\"job-0\","
		     "pod_namespace=\"ml\",state=\"running\"} 200\n"));
	assert_null(strstr(out, "kepler_process_gpu_joules_total{comm=\"idle\""));
	for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *end = strchr(l, '\n'), *z = strstr(l, "zone=\"gpu");

		if (z && (!end || z < end) && strncmp(l, "kepler_node_zone_source_info", 28) &&
		    strncmp(l, "kepler_node_meter_", 18))
			fail_msg("a GPU zone outside the GPU families: %.*s", (int)(end ? end - l : 80), l);
	}
	assert_non_null(strstr(
		out,
		"kepler_node_zone_source_info{node_name=\"n1\",path=\"GPU-a\",source=\"nvml\",zone=\"gpu0\"} 1\n"));
	assert_non_null(strstr(
		out, "kepler_node_meter_resets_total{node_name=\"n1\",path=\"GPU-b\",zone=\"gpu1\"} 0\n"));
	/* a top of 1 that process 43 leads: 42's CPU series go, its GPU series stay, whole */
	{
		struct kepler_buf b = KEPLER_BUF_INIT;
		struct kepler_prom_options o = { .levels = KEPLER_LEVEL_ALL,
						 .node_name = "n1",
						 .process_top = 1 };

		e[1][0] = (struct kepler_energy){ 9000000, 9000000 };
		assert_int_equal(kepler_fmt_prom(&s, &o, &b), 0);
		out = kepler_buf_cstr(&b);
		assert_non_null(strstr(out, "kepler_process_cpu_joules_total{comm=\"idle\""));
		assert_null(strstr(out, "kepler_process_cpu_joules_total{comm=\"train\""));
		assert_non_null(strstr(out,
				       "kepler_process_gpu_joules_total{comm=\"train\",container_id=\"c1\","
				       "exe=\"/bin/train\",node_name=\"n1\",pid=\"42\",state=\"running\","
				       "type=\"container\",vm_id=\"\"} 200\n"));
		kepler_buf_free(&b);
		e[1][0] = (struct kepler_energy){ 0, 0 };
	}
	/* the node level alone: no workload GPU family */
	out = render(&s, KEPLER_LEVEL_NODE, NULL);
	assert_non_null(strstr(out, "kepler_node_gpu_watts{"));
	assert_null(strstr(out, "kepler_process_gpu"));
}

/* What a flush (kepler_prom_samples.flush) was handed, gathered: keys copied into one text. */
struct gathered {
	struct kepler_buf keys;
	struct kepler_prom_samples all;
	size_t calls;
	int fail_at; /* the call that fails (-ENOSPC), 0: none */
};

static int gather(void *ctx, const char *text, const struct kepler_prom_samples *s)
{
	struct gathered *g = ctx;

	if (++g->calls == (size_t)g->fail_at)
		return -ENOSPC;
	for (size_t i = 0; i < s->n; i++) {
		struct kepler_prom_sample x = s->v[i];

		if (g->all.n == g->all.cap) {
			g->all.cap = g->all.cap ? 2 * g->all.cap : 64;
			g->all.v = realloc(g->all.v, g->all.cap * sizeof(*g->all.v));
			assert_non_null(g->all.v);
		}
		kepler_buf_add(&g->keys, text + x.key_at, x.key_len);
		x.key_at = g->keys.len - x.key_len;
		g->all.v[g->all.n++] = x;
	}
	return 0;
}

/*
 * Rendered with a flush every @at bytes, the samples handed over and those
 * left at the end are @want's (keys in @keys), in order; a flush that fails
 * ends the rendering with its error.
 */
static void check_flushed(const struct kepler_snapshot *snap, const struct kepler_prom_options *o, size_t at,
			  const struct kepler_prom_samples *want, const struct kepler_buf *keys)
{
	struct gathered g = { .keys = KEPLER_BUF_INIT };
	struct kepler_prom_samples s = {
		.keys_only = true, .flush = gather, .flush_ctx = &g, .flush_at = at
	};
	struct kepler_buf text = KEPLER_BUF_INIT;

	assert_int_equal(kepler_fmt_prom_samples(snap, o, &text, &s), 0);
	assert_int_equal(gather(&g, text.data, &s), 0); /* what is left */
	assert_true(at > 1024 || want->n < 2 || g.calls > 2);
	assert_true(text.len <= at + 4096); /* (a line's length at most beyond) */
	assert_int_equal(g.all.n, want->n);
	for (size_t i = 0; i < want->n; i++) {
		const struct kepler_prom_sample *a = &want->v[i], *b = &g.all.v[i];

		if (a->key_len != b->key_len ||
		    memcmp(keys->data + a->key_at, g.keys.data + b->key_at, a->key_len) ||
		    a->name_len != b->name_len || a->counter != b->counter ||
		    memcmp(&a->value, &b->value, sizeof(a->value)))
			fail_msg("sample %zu flushed every %zu bytes: '%.*s' %.17g, whole '%.*s' %.17g", i,
				 at, (int)b->key_len, g.keys.data + b->key_at, b->value, (int)a->key_len,
				 keys->data + a->key_at, a->value);
	}
	if (at <= 300 && want->n > 1) { /* (two flushes at least before the end) */
		kepler_buf_reset(&text);
		g.fail_at = 2;
		g.calls = 0;
		assert_int_equal(kepler_fmt_prom_samples(snap, o, &text, &s), -ENOSPC);
		assert_int_equal(g.calls, 2);
	}
	kepler_prom_samples_free(&s);
	kepler_prom_samples_free(&g.all);
	kepler_buf_free(&g.keys);
	kepler_buf_free(&text);
}

/*
 * The samples kepler-push sends (kepler_fmt_prom_samples()) are the text's
 * samples: one per sample line, in order, each key the line up to its value,
 * each value strtod()'s of the value written, counter where # TYPE says so;
 * and the text is byte for byte kepler_fmt_prom()'s. Keys only (as
 * kepler-push renders, values not written): the same keys and values.
 */
static void check_samples(const struct kepler_snapshot *snap, const struct kepler_prom_options *o)
{
	struct kepler_buf text = KEPLER_BUF_INIT, with = KEPLER_BUF_INIT, keys = KEPLER_BUF_INIT;
	struct kepler_prom_samples got = { 0 }, only = { 0 };
	const char *p, *end;
	bool counter = false;
	size_t i = 0;

	assert_int_equal(kepler_fmt_prom(snap, o, &text), 0);
	assert_int_equal(kepler_fmt_prom_samples(snap, o, &with, &got), 0);
	assert_int_equal(with.len, text.len);
	assert_memory_equal(with.data, text.data, text.len);
	for (p = with.data, end = with.data + with.len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *sp = nl;
		const struct kepler_prom_sample *x = &got.v[i];
		char num[64];

		assert_non_null(nl);
		if (*p == '#') {
			if (!strncmp(p, "# TYPE ", 7))
				counter = nl - p > 8 && !memcmp(nl - 8, " counter", 8);
			p = nl + 1;
			continue;
		}
		while (sp[-1] != ' ')
			sp--;
		assert_true(i < got.n);
		if (x->key_len != (size_t)(sp - 1 - p) || memcmp(with.data + x->key_at, p, x->key_len))
			fail_msg("sample %zu: key '%.*s', line '%.*s'", i, (int)x->key_len,
				 with.data + x->key_at, (int)(nl - p), p);
		assert_int_equal(x->name_len, strcspn(p, "{ "));
		snprintf(num, sizeof(num), "%.*s", (int)(nl - sp), sp);
		if (x->value != strtod(num, NULL))
			fail_msg("sample %zu (%.*s): value %.17g, text %s", i, (int)x->key_len, p, x->value,
				 num);
		assert_int_equal(x->counter, counter);
		i++;
		p = nl + 1;
	}
	assert_int_equal(i, got.n);
	only.keys_only = true;
	assert_int_equal(kepler_fmt_prom_samples(snap, o, &keys, &only), 0);
	assert_int_equal(only.n, got.n);
	for (i = 0; i < got.n; i++) {
		const struct kepler_prom_sample *a = &got.v[i], *b = &only.v[i];

		if (a->key_len != b->key_len ||
		    memcmp(with.data + a->key_at, keys.data + b->key_at, a->key_len) ||
		    a->name_len != b->name_len || a->counter != b->counter ||
		    memcmp(&a->value, &b->value, sizeof(a->value)))
			fail_msg("sample %zu keys only: '%.*s' %.17g, in full '%.*s' %.17g", i,
				 (int)b->key_len, keys.data + b->key_at, b->value, (int)a->key_len,
				 with.data + a->key_at, a->value);
	}
	assert_true(keys.len < with.len || got.n == 0);
	check_flushed(snap, o, 1, &only, &keys);
	check_flushed(snap, o, 300, &only, &keys);
	check_flushed(snap, o, 1 << 20, &only, &keys);
	kepler_prom_samples_free(&got);
	kepler_prom_samples_free(&only);
	kepler_buf_free(&text);
	kepler_buf_free(&with);
	kepler_buf_free(&keys);
}

static void test_samples_are_the_text(void **state)
{
	struct kepler_strlist none = { 0 };
	struct kepler_prom_options o = { .levels = KEPLER_LEVEL_ALL, .zones = &none, .node_name = "n1" };
	struct tiny t;

	(void)state;
	tiny_build(&t);
	check_samples(&t.s, &o);
	/* a top (the "other" series), values past 10^15 µJ and odd watts, an idle policy, no node name */
	o.process_top = 1;
	o.container_top = 1;
	o.node_name = NULL;
	t.e[0] = (struct kepler_energy){ 123456789012345678ULL, 333333333 };
	t.s.zones[0].energy.total_uj = 9007199254740993ULL;
	t.s.interval_ns = 3000000007ULL;
	t.s.idle_policy = KEPLER_IDLE_CPU;
	t.p[0].usage.idle = &t.e[3];
	check_samples(&t.s, &o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixed),
		cmocka_unit_test(test_escaping),
		cmocka_unit_test(test_golden),
		cmocka_unit_test(test_levels_and_zones),
		cmocka_unit_test(test_reused_pid_is_one_series),
		cmocka_unit_test(test_watts_sum),
		cmocka_unit_test(test_process_top),
		cmocka_unit_test(test_process_fold),
		cmocka_unit_test(test_container_top),
		cmocka_unit_test(test_cpu_info),
		cmocka_unit_test(test_gpu_families),
		cmocka_unit_test(test_samples_are_the_text),
	};

	return kepler_test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
