#!/bin/sh
# The fault suite (docs/reliability.md) as the docs show it: builds sluice
# and the suite into a temporary directory, runs `faults` (every scenario
# but the flood, or the scenarios named: flood for the 1,000,000-job
# benchmark) and prints what it prints, then the suite's seed, the
# flood's publishing time, its last line ("N of M scenarios passed in
# T"), and the machine with its load average at the start and the end.
# `make docs-e2e E2E=faults` writes the suite's region of
# docs/reliability.md from it, `make docs-bench` the flood's.
# Usage: scripts/e2e-faults.sh [SCENARIO[,SCENARIO...]]. Environment: GO
# (go), JOBS (2000 jobs per scenario), FLOOD_JOBS (1000000).
set -eu
unset NATS_URL SLUICE_CONFIG SLUICE_TARGET GOOGLE_CLOUD_PROJECT OTEL_EXPORTER_OTLP_ENDPOINT

GO=${GO:-go}
scenario=${1:-}
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

CGO_ENABLED=0 "$GO" build -trimpath -o "$tmp/sluice" ./cmd/sluice
CGO_ENABLED=0 "$GO" build -trimpath -o "$tmp/faults" ./faults/cmd/faults

load() { cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo "?"; }
cpu=$(sed -n 's/^model name[[:space:]]*: *//p' /proc/cpuinfo 2>/dev/null | head -n 1)
start_load=$(load)

shown="make faults${scenario:+ SCENARIO=$scenario}"
[ "$scenario" = flood ] && shown="make flood"
printf '$ %s\n' "$shown"
status=0
"$tmp/faults" -sluice "$tmp/sluice" ${scenario:+-scenario "$scenario"} \
	-jobs "${JOBS:-2000}" -flood-jobs "${FLOOD_JOBS:-1000000}" 2>"$tmp/faults.err" || status=$?
sed -n 's/^faults: \(seed [0-9]*\),.*/\1/p; s/^[0-9:.]* flood: \([0-9]* jobs published in .*\)/\1/p; s/^faults: \([0-9]* of [0-9]* scenarios.*\)/\1/p' "$tmp/faults.err"
echo "machine: ${cpu:-unknown CPU}, $(nproc) cores, load average $start_load at the start and $(load) at the end"
if [ "$status" != 0 ]; then
	echo "faults exit status $status"
	exit "$status"
fi
