#!/bin/sh
# End-to-end run of limiter.share.mode "members": `sluice testserver` (the
# model API, hidden quota QUOTA units per minute) and 3 `sluice run`
# processes on one embedded JetStream server, each finding its share from
# the live heartbeats, drain a backlog of mixed cost (1 or 4 units), once
# for each size in JOBS:
#
#   run 1: all three drain the queue;
#          pass: every job accepted once or more, throttled <= 2% of the
#          requests, drain time <= 1.3 x ideal (ideal = total units / quota).
#   run 2: the same, and one worker is SIGKILLed mid-drain;
#          pass: no job lost (every job id accepted by the API), nothing
#          dead-lettered, throttled <= 2%, and the two others drain the
#          rest, each at half the budget (`sluice status` lists 2 members).
#
# 3000 jobs are less than one window's quota, so that ratio can be below 1
# (the window starts empty); 9000 span several windows.
#
# Then a markdown table of every run (docs/scaling.md, written from it by
# make docs-e2e), and the last line, "e2e-members: PASS ..." or FAIL.
# Environment: GO (go), JOBS (backlog sizes, "3000 9000"), QUOTA (6000),
# KEEP (1: keep the temporary directory).
set -eu
# sluice reads these as overrides of its config file; the runs here are
# configured by their files and flags alone.
unset NATS_URL SLUICE_CONFIG GOOGLE_CLOUD_PROJECT OTEL_EXPORTER_OTLP_ENDPOINT

GO=${GO:-go}
JOBS=${JOBS:-3000 9000}
QUOTA=${QUOTA:-6000}

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

# jobs N: N jobs, one in four costs 4 units, the rest 1; units N: their sum.
jobs() {
	awk -v n="$1" 'BEGIN {
		for (i = 1; i <= n; i++) {
			t = (i % 4 == 0) ? "large" : "small"; c = (t == "large") ? 4 : 1
			printf "{\"id\":\"job-%05d\",\"type\":\"%s\",\"headers\":{\"X-Cost\":\"%d\",\"Sluice-Job-Id\":\"job-%05d\"},\"body\":{\"n\":%d}}\n", i, t, c, i, i
		}
	}'
}
units() { awk -v n="$1" 'BEGIN { u = 0; for (i = 1; i <= n; i++) u += (i % 4 == 0) ? 4 : 1; print u }'; }

# run NAME KILL N: one drain of N jobs; KILL=1 SIGKILLs worker 3 mid-drain.
# It adds a row to the table and sets fail=1 when a check fails.
rows=""
fail=0
summary=""
run() {
	name=$1
	kill_one=$2
	n=$3
	units=$(units "$n")
	jobs "$n" >"$tmp/jobs.jsonl"
	dir="$tmp/$name-$n"
	mkdir -p "$dir"
	"$bin" testserver --quota "$QUOTA" --window 1m --listen 127.0.0.1:0 --log "$dir/accepted.log" \
		>"$dir/testserver.json" 2>"$dir/testserver.err" &
	ts=$!
	pids="$pids $ts"
	i=0
	until addr=$(sed -n 's|.*listening on \(http://[^ ]*\).*|\1|p' "$dir/testserver.err" 2>/dev/null) && [ -n "$addr" ]; do
		i=$((i + 1)); [ $i -lt 100 ] || { echo "testserver did not start"; exit 1; }
		sleep 0.1
	done
	cat >"$dir/sluice.yaml" <<EOF
source:
  jetstream:
    embedded:
      store_dir: $dir/data
      port: -1
    fetch_wait: 250ms
target:
  base_url: $addr/
  allow_job_headers: [X-Cost, Sluice-Job-Id]
jobs:
  types:
    small: {path: /calls, cost: 1}
    large: {path: /calls, cost: 4}
limiter:
  initial_units_per_minute: $((QUOTA * 4 / 5))
  max_units_per_minute: $((QUOTA * 3))
  share:
    mode: members
    ttl: 6s
worker:
  max_in_flight: 64
  shutdown_timeout: 5s
metrics:
  listen: "off"
log:
  format: json
EOF
	# The first worker runs the embedded server; the others and enqueue
	# join it through the store directory.
	"$bin" run -c "$dir/sluice.yaml" 2>"$dir/w1.log" &
	w1=$!
	pids="$pids $w1"
	i=0
	until grep -q '"cluster: joined"' "$dir/w1.log" 2>/dev/null; do
		i=$((i + 1)); [ $i -lt 300 ] || { echo "worker 1 did not start"; cat "$dir/w1.log"; exit 1; }
		sleep 0.1
	done
	"$bin" enqueue -c "$dir/sluice.yaml" "$tmp/jobs.jsonl" >/dev/null
	start=$(date +%s.%N)
	"$bin" run -c "$dir/sluice.yaml" 2>"$dir/w2.log" &
	w2=$!
	"$bin" run -c "$dir/sluice.yaml" 2>"$dir/w3.log" &
	w3=$!
	pids="$pids $w2 $w3"
	killed=""
	killed_at=""
	while :; do
		sleep 1
		st=$("$bin" status -c "$dir/sluice.yaml" --json)
		pending=$(echo "$st" | sed 's/.*"pending":\([0-9]*\).*/\1/')
		inflight=$(echo "$st" | sed 's/.*"ack_pending":\([0-9]*\).*/\1/')
		if [ "$kill_one" = 1 ] && [ -z "$killed" ] && [ "$pending" -lt $((n / 2)) ]; then
			kill -KILL "$w3"
			wait "$w3" 2>/dev/null || true
			killed="worker 3 killed with $pending pending, $inflight in flight"
			killed_at=$pending
			echo "$name: $killed"
		fi
		[ "$pending" -eq 0 ] && [ "$inflight" -eq 0 ] && break
		now=$(date +%s)
		if [ $((now - ${start%.*})) -gt 600 ]; then echo "$name: not drained after 10 minutes: $st"; exit 1; fi
	done
	end=$(date +%s.%N)
	"$bin" status -c "$dir/sluice.yaml" >"$dir/status.txt"
	# Worker 1 runs the server: it stops last.
	[ -n "$killed" ] || { kill -TERM "$w3"; wait "$w3" || true; }
	for p in $w2 $w1; do kill -TERM "$p"; wait "$p" || true; done
	kill -TERM "$ts"
	wait "$ts" || true
	pids=""

	stats=$(cat "$dir/testserver.json")
	num() { echo "$stats" | sed "s/.*\"$1\":\([0-9.]*\).*/\1/"; }
	accepted=$(num accepted_requests)
	throttled=$(num throttled)
	distinct=$(sort -u "$dir/accepted.log" | wc -l | tr -d ' ')
	dead=$(echo "$st" | sed 's/.*"dead_letters":\([0-9a-z]*\).*/\1/')
	ratio=$(awk -v s="$start" -v e="$end" -v u="$units" -v q="$QUOTA" 'BEGIN { printf "%.3f", (e - s) / (u / q * 60) }')
	share=$(awk -v a="$accepted" -v t="$throttled" 'BEGIN { printf "%.4f", ((a + t) > 0 ? t / (a + t) : 0) }')
	drain=$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.1f", e - s }')
	ideal=$(awk -v u="$units" -v q="$QUOTA" 'BEGIN { printf "%.1f", u / q * 60 }')
	echo "$name: $n jobs ($units units) drained in ${drain}s, ideal ${ideal}s, ratio $ratio; requests accepted $accepted, throttled $throttled ($share); distinct jobs accepted $distinct; dead letters $dead"
	cat "$dir/status.txt"
	ok=1
	[ "$distinct" -eq "$n" ] || { echo "$name: FAIL: $distinct of $n jobs reached the API"; ok=0; }
	[ "$dead" = 0 ] || [ "$dead" = null ] || { echo "$name: FAIL: $dead dead letters"; ok=0; }
	awk -v s="$share" 'BEGIN { exit !(s <= 0.02) }' || { echo "$name: FAIL: throttled $share > 2%"; ok=0; }
	if [ "$kill_one" = 1 ]; then
		grep -Eq '^members \(members\) +2$' "$dir/status.txt" || { echo "$name: FAIL: the two others do not share the budget"; ok=0; }
	else
		grep -Eq '^members \(members\) +3$' "$dir/status.txt" || { echo "$name: FAIL: status does not list 3 members"; ok=0; }
	fi
	if [ "$kill_one" = 0 ]; then
		awk -v r="$ratio" 'BEGIN { exit !(r <= 1.3) }' || { echo "$name: FAIL: drain ratio $ratio > 1.3"; ok=0; }
	fi
	what="3 workers"
	[ "$kill_one" = 0 ] || what="1 of 3 killed at $killed_at pending"
	[ "$kill_one" = 0 ] || [ -n "$killed_at" ] || what="1 of 3 to be killed, drained first"
	requests=$((accepted + throttled))
	pct=$(awk -v s="$share" 'BEGIN { printf "%.2f", s * 100 }')
	rows="$rows| $n ($units) | $what | $drain s | $ideal s | $ratio | $throttled of $requests ($pct %) | $distinct |
"
	[ $ok = 1 ] || fail=1
	summary="$summary; $n jobs, $name: ratio $ratio, throttled $share"
}

for n in $JOBS; do
	run drain 0 "$n"
	run kill 1 "$n"
done
echo
echo "| jobs (units) | run | drain | ideal | ratio | throttled | jobs that reached the API |"
echo "|---|---|---:|---:|---:|---:|---:|"
printf '%s' "$rows"
echo
if [ $fail = 0 ]; then
	echo "e2e-members: PASS${summary#;}, no job lost"
else
	echo "e2e-members: FAIL${summary#;}"
	exit 1
fi
