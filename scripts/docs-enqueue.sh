#!/bin/sh
# The transcript of docs/sources.md's `sluice enqueue` and `sluice status`
# on a queue no worker drains, written by `make docs`: 10,000 job lines,
# line 17 of them bad, enqueued into the embedded NATS server on port
# 4300, in a temporary directory. It runs bin/sluice (make build).
set -eu
unset NATS_URL SLUICE_CONFIG GOOGLE_CLOUD_PROJECT OTEL_EXPORTER_OTLP_ENDPOINT

cd "$(dirname "$0")/.."
bin=$(pwd)/bin/sluice
[ -x "$bin" ] || { echo "docs-enqueue: $bin is missing: make build" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-docs.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
awk 'BEGIN { for (n = 1; n <= 10000; n++)
	if (n == 17) printf "{\"id\":\"job-%d\",\"path\":\"/items/%d\",\"cost\":-2}\n", n, n
	else printf "{\"id\":\"job-%d\",\"path\":\"/items/%d\"}\n", n, n }' >jobs.jsonl

say() { printf '$ %s\n' "$*"; }
say 'sluice enqueue --nats-port 4300 jobs.jsonl'
status=0
"$bin" enqueue --nats-port 4300 jobs.jsonl 2>&1 || status=$?
[ "$status" = 1 ] || { echo "docs-enqueue: enqueue exited $status, want 1 (a bad line)" >&2; exit 1; }
say 'sluice status --nats-port 4300'
"$bin" status --nats-port 4300
say 'sluice status --nats-port 4300 --json'
"$bin" status --nats-port 4300 --json
