#!/bin/sh
# The `sluice status` transcripts of docs/ui.md, docs/scaling.md and
# docs/sources.md, written
# by `make docs` (wall clock): `sluice testserver` (the model API) on a
# free port, then, a few seconds after a drain:
#
#   worker   one `sluice run` with its metrics on a free port, 2,000 jobs of
#            1 unit, quota 3,000 units a minute: the worker's lines of
#            status (what it reads from the worker's /state);
#   members  3 `sluice run` in limiter.share.mode members on one embedded
#            JetStream server, 3,000 jobs of 1 unit, quota 6,000 units a
#            minute: status and status --json, the fleet and its members;
#   paused   one `sluice run` (worker.id w1) with its metrics on a free port,
#            2,000 jobs, against a fixed window of 100 units a minute
#            (--api fixed): status 2 s after the API's 429 paused the worker.
#
# All use the limiter's defaults. It runs bin/sluice (make build) in a
# temporary directory. The figures depend on the timing of the run.
# Usage: scripts/docs-status-rates.sh worker|members|paused
set -eu
unset NATS_URL SLUICE_CONFIG SLUICE_TARGET GOOGLE_CLOUD_PROJECT OTEL_EXPORTER_OTLP_ENDPOINT

mode=${1:-}
case $mode in
worker) quota=3000 jobs=2000 workers=1 ;;
members) quota=6000 jobs=3000 workers=3 ;;
paused) quota=100 jobs=2000 workers=1 ;;
*) echo "docs-status-rates: want worker, members or paused" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
. scripts/e2e-lib.sh
built_sluice
in_work sluice-docs

cd "$work"
api_kind=window
[ "$mode" = paused ] && api_kind=fixed
"$bin" testserver --api "$api_kind" --quota "$quota" --window 60s --listen 127.0.0.1:0 >testserver.out 2>testserver.log &
pids="$! $pids"
wait_log testserver.log "listening on http://"
api=$(sed -n 's|.*listening on \(http://[0-9.:]*\).*|\1|p' testserver.log | head -n 1)

metrics='"off"'
extra=""
if [ "$mode" != members ]; then
	metrics=127.0.0.1:$((20000 + $$ % 10000))
fi
if [ "$mode" = paused ]; then
	extra="worker:
  id: w1"
elif [ "$mode" = members ]; then
	extra="limiter:
  share:
    mode: members"
fi
cat >sluice.yaml <<EOF
source:
  jetstream:
    embedded:
      store_dir: $work/data
      port: -1
target:
  base_url: $api/
$extra
metrics:
  listen: $metrics
log:
  format: json
EOF
"$bin" run -c sluice.yaml 2>w1.log &
pids="$! $pids"
wait_log w1.log "sluice running"
awk -v n="$jobs" 'BEGIN { for (i = 1; i <= n; i++) printf "{\"id\":\"job-%d\",\"path\":\"/items/%d\"}\n", i, i }' >jobs.jsonl
"$bin" enqueue -c sluice.yaml jobs.jsonl >/dev/null 2>&1
w=2
while [ "$w" -le "$workers" ]; do
	"$bin" run -c sluice.yaml 2>"w$w.log" &
	pids="$! $pids"
	w=$((w + 1))
done

say() { printf '$ %s\n' "$*"; }
if [ "$mode" = paused ]; then
	# Until the API's 429 pauses the worker (at most 2 minutes).
	i=0
	until "$bin" status -c sluice.yaml >status.txt 2>&1 && grep -q 'paused by the API' status.txt; do
		i=$((i + 1))
		[ "$i" -le 1200 ] || { echo "docs-status-rates: the worker was not paused in 2 minutes" >&2; cat status.txt >&2; exit 1; }
		sleep 0.1
	done
	sleep 2 # status measures the throughput over a span: all of it paused
	say 'sluice status -c sluice.yaml'
	"$bin" status -c sluice.yaml
	exit 0
fi

# Until the queue is drained (at most 5 minutes), then a few seconds.
i=0
until "$bin" status -c sluice.yaml --json 2>/dev/null | grep -q '"pending":0,"ack_pending":0,'; do
	i=$((i + 1))
	[ "$i" -le 300 ] || { echo "docs-status-rates: not drained after 5 minutes" >&2; exit 1; }
	sleep 1
done
sleep 3

say 'sluice status -c sluice.yaml'
"$bin" status -c sluice.yaml
if [ "$mode" = members ]; then
	say 'sluice status -c sluice.yaml --json'
	"$bin" status -c sluice.yaml --json
fi
