#!/bin/sh
# End-to-end run of the fleet controller (docs/scaling.md, "One rate for the
# fleet"): `sluice testserver --quota 6000` (units per minute, sliding 60 s
# window) and 6 `sluice run` processes in limiter.share.mode members with
# the default limiter settings (no initial rate named), on one embedded
# JetStream server.
#
#   phase 1: 18,000 jobs of cost 1 are enqueued before the workers start;
#            one worker is SIGKILLed 60 s after the first one joined the
#            bucket and a new one starts at 90 s.
#            Pass: every job accepted by the API, none twice except the
#            killed worker's in-flight jobs (at most worker.max_in_flight),
#            throttled <= 1% of requests, drain <= 1.30 x ideal (180 s).
#   phase 2: every worker stops; 6,000 more jobs; 3 workers start again.
#            Pass: they start at the fleet's remembered rate, and in their
#            first 30 s they use >= 90% of the quota.
#
# Both rates are timed by the API's own clock (testserver --log-time), so
# that the time a loaded machine takes to start the processes, and to run
# this script's polls, is not counted against the fleet: the drain runs
# from the first accepted call to the last, and phase 2's 30 s from its
# first accepted call.
#
# Then a markdown table of both phases (docs/scaling.md, written from it
# by make docs-e2e). The last line is the drain ratio of phase 1
# ("e2e-fleet: PASS ..." or "e2e-fleet: FAIL ..." before it). Environment: GO (go), JOBS (18000),
# QUOTA (6000), KEEP (1: keep the temporary directory).
set -eu
# sluice reads these as overrides of its config file; the runs here are
# configured by their files and flags alone.
unset NATS_URL SLUICE_CONFIG GOOGLE_CLOUD_PROJECT OTEL_EXPORTER_OTLP_ENDPOINT

GO=${GO:-go}
JOBS=${JOBS:-18000}
QUOTA=${QUOTA:-6000}
MORE=$((JOBS / 3))
INFLIGHT=64

tmp=$(mktemp -d)
pids=""
cleanup() {
	for p in $pids; do kill -TERM "$p" 2>/dev/null || true; done
	for p in $pids; do wait "$p" 2>/dev/null || true; done
	if [ "${KEEP:-}" = 1 ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT INT TERM

"$GO" build -o "$tmp/sluice" ./cmd/sluice
bin="$tmp/sluice"

jobs() { # jobs FIRST COUNT: cost-1 jobs with ids FIRST.. 
	awk -v f="$1" -v n="$2" 'BEGIN {
		for (i = f; i < f + n; i++)
			printf "{\"id\":\"job-%06d\",\"type\":\"call\",\"headers\":{\"Sluice-Job-Id\":\"job-%06d\"},\"body\":{\"n\":%d}}\n", i, i, i
	}'
}
jobs 1 "$JOBS" >"$tmp/jobs1.jsonl"
jobs $((JOBS + 1)) "$MORE" >"$tmp/jobs2.jsonl"

"$bin" testserver --quota "$QUOTA" --window 1m --listen 127.0.0.1:0 --log "$tmp/accepted.log" --log-time \
	>"$tmp/testserver.json" 2>"$tmp/testserver.err" &
ts=$!
pids="$pids $ts"
i=0
until addr=$(sed -n 's|.*listening on \(http://[^ ]*\).*|\1|p' "$tmp/testserver.err" 2>/dev/null) && [ -n "$addr" ]; do
	i=$((i + 1)); [ $i -lt 100 ] || { echo "testserver did not start"; exit 1; }
	sleep 0.1
done
cat >"$tmp/sluice.yaml" <<EOF
source:
  jetstream:
    embedded:
      store_dir: $tmp/data
      port: -1
    fetch_wait: 250ms
target:
  base_url: $addr/
  allow_job_headers: [Sluice-Job-Id]
jobs:
  types:
    call: {path: /calls, cost: 1}
limiter:
  share:
    mode: members
    ttl: 6s
worker:
  max_in_flight: $INFLIGHT
  shutdown_timeout: 5s
metrics:
  listen: "off"
log:
  format: json
EOF

stat() { # stat FIELD: a number from the test server's GET /stats
	curl -fsS "$addr/stats" | sed "s/.*\"$1\":\([0-9.]*\).*/\1/"
}
queue() { # queue FIELD: pending or ack_pending
	"$bin" status -c "$tmp/sluice.yaml" --json | sed "s/.*\"$1\":\([0-9]*\).*/\1/"
}
worker() { # worker NAME: start a worker, its pid in $w
	"$bin" run -c "$tmp/sluice.yaml" 2>"$tmp/$1.log" &
	w=$!
	pids="$pids $w"
}
joined() { # joined NAME: wait until a worker has joined the bucket
	i=0
	until grep -q '"cluster: joined"' "$tmp/$1.log" 2>/dev/null; do
		i=$((i + 1)); [ $i -lt 300 ] || { echo "$1 did not start"; cat "$tmp/$1.log"; exit 1; }
		sleep 0.1
	done
}
elapsed() { awk -v s="$1" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }'; }
# The API's log of accepted calls: "UNIX-TIME JOB-ID" per line.
accepted_after() { # accepted_after N: wait for a line after the first N; print its time
	i=0
	until t=$(sed -n "$(($1 + 1)){s/ .*//p;q}" "$tmp/accepted.log") && [ -n "$t" ]; do
		i=$((i + 1)); [ $i -lt 600 ] || { echo "no call accepted within 60 s"; exit 1; }
		sleep 0.1
	done
	echo "$t"
}

# Phase 1. enqueue runs the embedded server of its own; the first worker
# then runs it for the others, and stops last.
"$bin" enqueue -c "$tmp/sluice.yaml" "$tmp/jobs1.jsonl" >/dev/null
worker w1; w1=$w
joined w1
start=$(date +%s.%N) # the scenario's clock: kill at 60 s, start at 90 s
for n in 2 3 4 5 6; do worker "w$n"; eval "w$n=\$w"; done
killed="" restarted=""
while :; do
	sleep 1
	t=$(elapsed "$start")
	if [ -z "$killed" ] && awk -v t="$t" 'BEGIN { exit !(t >= 60) }'; then
		kill -KILL "$w6"; wait "$w6" 2>/dev/null || true
		killed="w6 SIGKILLed at ${t}s"
		echo "phase 1: $killed, $(queue pending) pending"
	fi
	if [ -z "$restarted" ] && awk -v t="$t" 'BEGIN { exit !(t >= 90) }'; then
		worker w7; w7=$w
		restarted="w7 started at ${t}s"
		echo "phase 1: $restarted"
	fi
	[ "$(queue pending)" -eq 0 ] && [ "$(queue ack_pending)" -eq 0 ] && break
	awk -v t="$t" 'BEGIN { exit !(t > 900) }' && { echo "phase 1: not drained after 15 minutes"; exit 1; }
done
[ -n "$restarted" ] || { worker w7; w7=$w; }
accepted=$(stat accepted_requests)
throttled=$(stat throttled)
lines1=$(wc -l <"$tmp/accepted.log" | tr -d ' ')
distinct=$(cut -d' ' -f2 "$tmp/accepted.log" | sort -u | wc -l | tr -d ' ')
dups=$((lines1 - distinct))
drain=$(awk 'NR == 1 { f = $1 } { l = $1 } END { printf "%.1f", l - f }' "$tmp/accepted.log")
ideal=$(awk -v j="$JOBS" -v q="$QUOTA" 'BEGIN { printf "%.1f", j / q * 60 }')
ratio=$(awk -v d="$drain" -v i="$ideal" 'BEGIN { printf "%.3f", d / i }')
share=$(awk -v a="$accepted" -v t="$throttled" 'BEGIN { printf "%.4f", t / (a + t) }')
rate=$(grep -h '"cluster: fleet state"' "$tmp"/w*.log | head -1 | sed 's/.*"rate":\([0-9.]*\).*/\1/')
echo "phase 1: $JOBS jobs drained in ${drain}s (first to last accepted call), ideal ${ideal}s, ratio $ratio; requests accepted $accepted, throttled $throttled ($share); distinct jobs accepted $distinct, accepted twice $dups"
ok=1
[ "$distinct" -eq "$JOBS" ] || { echo "e2e-fleet: FAIL: $distinct of $JOBS jobs reached the API"; ok=0; }
[ "$dups" -le "$INFLIGHT" ] || { echo "e2e-fleet: FAIL: $dups jobs accepted twice, more than the killed worker's $INFLIGHT in flight"; ok=0; }
awk -v s="$share" 'BEGIN { exit !(s <= 0.01) }' || { echo "e2e-fleet: FAIL: throttled $share > 1%"; ok=0; }
awk -v r="$ratio" 'BEGIN { exit !(r <= 1.3) }' || { echo "e2e-fleet: FAIL: drain ratio $ratio > 1.30"; ok=0; }

# Phase 2: stop every worker (the server's host last), let the window
# empty, enqueue more, start 3 workers.
for p in $w7 $w5 $w4 $w3 $w2 $w1; do kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
sleep 62
"$bin" enqueue -c "$tmp/sluice.yaml" "$tmp/jobs2.jsonl" >/dev/null
n1=$(wc -l <"$tmp/accepted.log" | tr -d ' ')
worker v1; v1=$w
joined v1
worker v2; v2=$w
worker v3; v3=$w
first2=$(accepted_after "$n1")
# Wait out the 30 s after the first call of phase 2 (and 1 s for the calls
# in flight at its end to be logged), then count the calls in it: cost 1
# each, so units.
sleep $(awk -v s="$first2" -v e="$(date +%s.%N)" 'BEGIN { w = 31 - (e - s); printf "%.2f", (w > 0 ? w : 0) }')
used=$(awk -v n="$n1" -v s="$first2" 'NR > n && $1 < s + 30 { u++ } END { print u + 0 }' "$tmp/accepted.log")
rate2=$(sed -n 's/.*"cluster: fleet state".*"rate":\([0-9.]*\).*"remembered":true.*/\1/p' "$tmp/v1.log" | head -1)
[ -n "$rate2" ] || { echo "e2e-fleet: FAIL: the workers of phase 2 did not start at a remembered fleet rate"; ok=0; }
frac=$(awk -v u="$used" -v q="$QUOTA" 'BEGIN { printf "%.3f", u / (q / 2) }')
echo "phase 2: 3 workers started at the remembered fleet rate ${rate2:-none}/min; first 30 s from the first accepted call: $used units accepted, $frac of the quota"
awk -v f="$frac" 'BEGIN { exit !(f >= 0.9) }' || { echo "e2e-fleet: FAIL: the first 30 s used $frac < 0.90 of the quota"; ok=0; }
for p in $v3 $v2 $v1; do kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
kill -TERM "$ts"; wait "$ts" 2>/dev/null || true
pids=""
echo
echo "| phase | figure |"
echo "|---|---|"
echo "| 1: $JOBS jobs, 6 workers, one SIGKILLed 60 s after the first joined, one added at 90 s | drained in $drain s from the first accepted call to the last, ideal $ideal s, ratio $ratio; $accepted requests accepted, $throttled throttled ($share of the requests); $distinct distinct jobs reached the API, $dups twice |"
echo "| 2: 3 workers started again | at the remembered ${rate2:-(none)} units/min; $used units accepted in the first 30 s from the first accepted call, $frac of the quota |"
echo
if [ $ok = 1 ]; then
	echo "e2e-fleet: PASS (throttled $share, $dups accepted twice, phase 2 used $frac of the quota in its first 30 s; first worker started at $rate/min)"
else
	echo "e2e-fleet: FAIL"
fi
echo "$ratio"
[ $ok = 1 ]
