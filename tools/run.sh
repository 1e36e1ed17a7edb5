#!/usr/bin/env bash
# tools/run.sh: install what is needed, build in build/, and run the main
# job: kepler-collectd writing ./var/store and kepler-exporter serving it on
# http://127.0.0.1:28282/metrics. Ctrl-C stops both.
# Environment: KEPLER_LISTEN (default 127.0.0.1:28282), KEPLER_STORE
# (default ./var/store); extra arguments go to kepler-collectd.
set -euo pipefail
cd "$(dirname "$0")/.."

listen=${KEPLER_LISTEN:-127.0.0.1:28282}
store=${KEPLER_STORE:-./var/store}

bash tools/setup.sh
echo "run.sh: building in build/ (about 4 minutes the first time on 2 cores; progress every 15 s)..." >&2
log=build/run-build.log
mkdir -p build
{ cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKEPLER_SANITIZE=OFF &&
	cmake --build build -j"$(nproc 2>/dev/null || echo 2)"; } >"$log" 2>&1 &
build_pid=$!
while kill -0 "$build_pid" 2>/dev/null; do
	for _ in $(seq 15); do kill -0 "$build_pid" 2>/dev/null && sleep 1; done
	kill -0 "$build_pid" 2>/dev/null &&
		echo "run.sh: building: $(grep -o '^\[ *[0-9]*%\]' "$log" | tail -1 | tr -d '[] ') done" >&2
done
if ! wait "$build_pid"; then
	echo "run.sh: the build failed; the errors (all of it in $log):" >&2
	grep -E -A3 'error|Error|CMake Error' "$log" | head -40 >&2
	exit 1
fi
echo "run.sh: built" >&2
# the collector makes the store directory itself, 0750 (readers join its group)
mkdir -p "$(dirname "$store")"

pids=()
stop() {
	trap - INT TERM EXIT
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap stop EXIT
trap 'echo "run.sh: stopping" >&2; stop; exit 0' INT TERM

build/collectd/kepler-collectd --store.path "$store" "$@" &
pids+=($!)
build/readers/exporter/kepler-exporter --store.path "$store" --web.listen-address "$listen" &
pids+=($!)

cat <<MSG

kepler-c is running.
  metrics:    http://$listen/metrics
  live view:  build/readers/top/kepler-top --store.path $store
  snapshot:   build/readers/stdout/kepler-stdout --store.path $store
Press Ctrl-C to stop.

MSG
# Exit as soon as either process ends, with its status.
set +e
wait -n "${pids[@]}"
rc=$?
echo "run.sh: a kepler process exited with status $rc; stopping the other" >&2
exit $rc
