#!/usr/bin/env bash
# tools/fuzz.sh [SECONDS]: build the libFuzzer targets with clang in
# build-fuzz/ and fuzz, for SECONDS in all (default 60), the snapshot
# decoder (half, from a seed corpus of encoded snapshots), the collector's
# parsers of host input (a quarter): sysfs numbers, power model files,
# /proc/stat, /proc/PID/stat, cgroup and cmdline files, /proc/cpuinfo and
# the store's CPU list; kepler-train's dataset CSV reader (a quarter less
# the kube share) and the Kubernetes names: the kubelet's PodList and its log
# links (a tenth); then Redfish, memory, DCMI, the store's history, and
# kepler-push's series keys and request builders with an OTLP
# receiver's answer (a twentieth each, the history a tenth).
# Exit status non-zero on any crash.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}

CC=clang cmake -S . -B build-fuzz -DKEPLER_FUZZ=ON -DKEPLER_BPF=OFF -DKEPLER_TESTS=OFF \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-fuzz -j"$(nproc 2>/dev/null || echo 2)" >/dev/null

# fuzz TARGET SECONDS CORPUS MAX_LEN
fuzz() {
	local log=build-fuzz/$1.log rc
	echo "fuzz.sh: fuzzing $1 for ${2}s"
	set +e
	build-fuzz/tests/fuzz/$1 -max_total_time="$2" -max_len="$4" -print_final_stats=1 \
		-artifact_prefix=build-fuzz/ "$3" >"$log" 2>&1
	rc=$?
	set -e
	# libFuzzer's progress lines stay in the log; show the outcome.
	grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+ +DONE)|ERROR|SUMMARY' "$log" || true
	[ $rc -eq 0 ] || echo "fuzz.sh: $1 failed (status $rc); see $log and build-fuzz/crash-*" >&2
	return $rc
}

corpus=build-fuzz/corpus/decode
mkdir -p "$corpus"
build-fuzz/tests/fuzz/make_seeds "$corpus"
cp tests/golden/snapshot-200-1.6.plain tests/golden/snapshot-200-4.1.packed "$corpus/" # formats before 1.7 / 4.2
host=build-fuzz/corpus/host
mkdir -p "$host"
printf '\x00240422366267\n' >"$host/energy_uj"
{ printf '\x01'; cat collectd/models/generic-vm.yaml; } >"$host/generic-vm.yaml"
printf '\x0277 (a) (b) R 1 77 77 -1 -1 4194304 0 0 0 0 3 4 0 0 20 0 1 0 555 0 0\n' >"$host/pid-stat"
printf '\x03cpu  100 5 50 800 20 3 2 10 0 0\ncpu0 50 2 25 400 10 1 1 5 0 0\n' >"$host/stat"
printf '\x040::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod8d6f1b0e_3c2a_4e57_9a1d_0b2c3d4e5f60.slice/cri-containerd-2a7d6c3b9e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f70819aab.scope\n' >"$host/cgroup"
printf '\x06processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R)\nphysical id\t: 0\ncore id\t\t: 0\n\n' >"$host/cpuinfo"
printf '\x07v1\n0\tGenuineIntel\tIntel(R) Xeon(R)\t0\t0\n1\tGenuineIntel\tIntel(R) Xeon(R)\t0\t1\n' >"$host/cpus"
printf '\x05/usr/bin/qemu-system-x86_64\0-name\0guest=vm1,debug-threads=on\0-uuid\0abc\0' >"$host/cmdline"
csv=build-fuzz/corpus/csv
mkdir -p "$csv"
printf 'timestamp,wall_ns,node,cpu_usage_ratio,package_source,package_watts
2026-01-01T00:00:00Z,1,"a ""b"", c",0.5,rapl,12.5

2026-01-01T00:00:01Z,2,"x
y",,model,
' >"$csv/seed.csv"
kube=build-fuzz/corpus/kube
mkdir -p "$kube"
{ printf '\x00'; cat tests/data/kubelet/podlist.json; } >"$kube/podlist"
printf '\x01web-1_shop_nginx-2a7d6c3b9e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f70819aab.log\t/var/log/pods/shop_web-1_0b6e5a4c-1f2d-4e3a-9b8c-7d6e5f4a3b21/nginx/0.log\n' >"$kube/links"
redfish=build-fuzz/corpus/redfish
mkdir -p "$redfish"
printf '\x00{"Members": [{"@odata.id": "/redfish/v1/Chassis/1U"}], "Members@odata.count": 1}' >"$redfish/members"
printf '\x01{"Id": "1U", "EnvironmentMetrics": {"@odata.id": "/redfish/v1/Chassis/1U/EnvironmentMetrics"}, "Power": {"@odata.id": "/redfish/v1/Chassis/1U/Power"}}' >"$redfish/chassis"
printf '\x02{"PowerWatts": {"Reading": 312.5, "DataSourceUri": "/redfish/v1/Chassis/1U/Sensors/PS"}}' >"$redfish/env"
printf '\x03{"PowerControl": [{"MemberId": "0", "PowerConsumedWatts": 298, "PowerMetrics": {"AverageConsumedWatts": 290}}]}' >"$redfish/power"
dcmi=build-fuzz/corpus/dcmi
mkdir -p "$dcmi"
printf '\x00\xdc\xfa\x00\xf0\x00\x10\x01\xfa\x00\x59\x18\x09\x6b\xe8\x03\x00\x00\x40' >"$dcmi/reading"
printf '\xd4' >"$dcmi/privilege"
memory=build-fuzz/corpus/memory
mkdir -p "$memory"
printf 'kepler-memory 1 3 0\npackage\tcore\tdram\ncontainer\t0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\t1000000000\t100000000 0 0\npod\t8d6f1b0e-3c2a-4e57-9a1d-0b2c3d4e5f60\t1000000000\t100000000 0 0\nfold\tv:5a6b7c8d-0000-4000-8000-00000000beef\t2000000\t300 0 0\t7\n' >"$memory/seed"
history=build-fuzz/corpus/history
mkdir -p "$history"
build-fuzz/tests/fuzz/make_seeds --history "$history"
cp tests/golden/history-1.1.record "$history/" # a record of the format before 1.2
rc=0
fuzz fuzz_decode $((secs / 2)) "$corpus" 65536 || rc=$?
fuzz fuzz_host_input $((secs / 4)) "$host" 8192 || rc=$?
fuzz fuzz_dataset_csv $((secs - secs / 2 - secs / 4 - secs / 5)) "$csv" 16384 || rc=$?
fuzz fuzz_kube_names $((secs / 20)) "$kube" 65536 || rc=$?
fuzz fuzz_redfish $((secs / 20)) "$redfish" 16384 || rc=$?
fuzz fuzz_memory $((secs / 20)) "$memory" 16384 || rc=$?
fuzz fuzz_dcmi $((secs / 20)) "$dcmi" 256 || rc=$?
fuzz fuzz_history $((secs / 10)) "$history" 65536 || rc=$?
push=build-fuzz/corpus/push
mkdir -p "$push"
printf '\x00kepler_info\nkepler_node_cpu_joules_total{node_name="n\\"1",zone="package"}\nkepler_node_cpu_watts{node_name="n\\\\",zone="core"}\nbad{key\n' >"$push/keys"
printf '\x01\x0a\x0a\x08\x03\x12\x06refuse' >"$push/answer"
printf '\x02\x01\x00web\t/bin/web\t\t\n\x01\x08db "q"\t/bin/\xff\tc1\tvm\n\x02\x11a\\b\t\t\t\n\x01\x90web\t/bin/web2\t\t\n' >"$push/ids"
fuzz fuzz_push $((secs / 20)) "$push" 65536 || rc=$?
carbon=build-fuzz/corpus/carbon
mkdir -p "$carbon"
printf '\x00{"zone":"DE","carbonIntensity":302,"datetime":"2018-04-25T18:07:00.350Z","updatedAt":"2018-04-25T18:07:01.000Z"}' >"$carbon/emaps"
printf '\x00{"zone":"DE","history":[{"carbonIntensity":312,"datetime":"2018-04-25T17:00:00.000Z","isEstimated":true}]}' >"$carbon/emaps-history"
printf '\x01{"data":[{"from":"2018-01-20T12:00Z","to":"2018-01-20T12:30Z","intensity":{"forecast":266,"actual":263,"index":"moderate"}}]}' >"$carbon/uk"
printf '\x01{"data":[{"regionid":3,"shortname":"North West England","data":[{"from":"2018-01-20T12:00Z","intensity":{"forecast":266,"index":"moderate"}}]}]}' >"$carbon/uk-region"
printf '\x02{"data":[{"point_time":"2026-04-01T00:00:00+00:00","value":412.5}],"meta":{"units":"lbs_co2_per_mwh"}}' >"$carbon/watttime"
printf '\x03{"token":"eyJhbGciOiJSUzI1NiJ9.e30.sig"}' >"$carbon/login"
printf '\x04# k\ngcp:europe-west1,212,Google,n.d.\n' >"$carbon/table"
fuzz fuzz_carbon $((secs / 20)) "$carbon" 65536 || rc=$?
exit $rc
