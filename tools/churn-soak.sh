#!/usr/bin/env bash
# The churn test for five minutes (or MINUTES): hundreds of short processes
# per interval and a container that empties, is forgotten and fills again,
# against the real collector; every snapshot's energy and CPU windows must
# agree and no cumulative counter of any identity may ever go down.
#   tools/churn-soak.sh [BUILD_DIR] [MINUTES]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
minutes=${2:-5}
[ -x "$build/collectd/kepler-collectd" ] || { echo "churn-soak.sh: build first (cmake -S . -B $build && cmake --build $build)" >&2; exit 2; }
start=$(date +%s)
bash tests/collectd/test_churn.sh "$build" $((minutes * 15))
echo "churn-soak.sh: $minutes min requested, $(( $(date +%s) - start )) s run"
