#!/bin/sh
# The transcript of docs/sources.md's `sluice status` during a drain,
# written by `make docs`: `sluice testserver --quota 6000` on a free port,
# one `sluice run --rate 3000` on the embedded NATS server at port 14222,
# 3,000 jobs, and status 3 s after the enqueue. It runs bin/sluice (make
# build) in a temporary directory. The figures depend on the timing of the
# run.
set -eu
unset NATS_URL SLUICE_CONFIG SLUICE_TARGET GOOGLE_CLOUD_PROJECT OTEL_EXPORTER_OTLP_ENDPOINT

cd "$(dirname "$0")/.."
. scripts/e2e-lib.sh
built_sluice
in_work sluice-docs

cd "$work"
"$bin" testserver --quota 6000 --listen 127.0.0.1:0 >testserver.out 2>testserver.log &
pids="$! $pids"
wait_log testserver.log "listening on http://"
api=$(sed -n 's|.*listening on \(http://[0-9.:]*\).*|\1|p' testserver.log | head -n 1)
"$bin" run --target "$api" --rate 3000 --nats-port 14222 --metrics-listen off 2>run.log &
pids="$! $pids"
wait_log run.log "sluice running"
awk 'BEGIN { for (n = 1; n <= 3000; n++) printf "{\"id\":\"job-%d\",\"path\":\"/items/%d\"}\n", n, n }' >jobs.jsonl
"$bin" enqueue --nats-port 14222 jobs.jsonl >/dev/null 2>&1
sleep 3

say() { printf '$ %s\n' "$*"; }
say 'sluice status --nats-port 14222'
"$bin" status --nats-port 14222
say 'sluice status --nats-port 14222 --json'
"$bin" status --nats-port 14222 --json
