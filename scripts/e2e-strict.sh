#!/bin/sh
# End-to-end run against a real gateway (make e2e-strict): nginx limit_req
# in front of the model API, one `sluice run` with a config that names only
# the source and the target (every limiter option at its default).
#
#   - nginx (Debian's nginx-light; make e2e-strict installs it when missing)
#     runs as the current user with its own config, prefix and pid file in a
#     temporary directory, on a free loopback port: limit_req at RATE
#     requests/s with burst BURST, answering 429 with Retry-After: 1 beyond
#     it, and proxying the rest to
#   - sluice testserver with a quota it never reaches, which counts every
#     accepted job id (a job answered 200 twice shows as a duplicate);
#   - JOBS jobs of cost 1, enqueued (into the embedded NATS JetStream
#     store) before `sluice run` starts.
#
# The drain time runs from the first call the testserver accepts to the
# last, by its own clock (--log-time), so that neither the start of
# `sluice run` nor this script's polls (slow on a loaded machine) count;
# the run ends once the testserver has accepted every job id and the queue
# is empty. Ideal = JOBS / RATE seconds. Pass: every job answered 200
# exactly once, at most MAX_THROTTLED 429s, drain time <= MAX_RATIO x
# ideal. The figures end with a markdown table (docs/tuning.md, written
# from it by make docs-e2e); the last line printed is the ratio drain /
# ideal.
#
# Environment: GO (go), NGINX (nginx), JOBS (2000), RATE (20), BURST (5),
# MAX_THROTTLED (10), MAX_RATIO (1.20), KEEP=1 keeps the work directory.
set -eu
# sluice reads these as overrides of its config file; the runs here are
# configured by their files and flags alone.
unset NATS_URL SLUICE_CONFIG GOOGLE_CLOUD_PROJECT OTEL_EXPORTER_OTLP_ENDPOINT

GO=${GO:-go}
NGINX=${NGINX:-nginx}
JOBS=${JOBS:-2000}
RATE=${RATE:-20}
BURST=${BURST:-5}
MAX_THROTTLED=${MAX_THROTTLED:-10}
MAX_RATIO=${MAX_RATIO:-1.20}

command -v "$NGINX" >/dev/null 2>&1 || [ -x "$NGINX" ] || {
	echo "e2e-strict: $NGINX not found (make e2e-strict installs nginx-light)" >&2
	exit 1
}
cd "$(dirname "$0")/.."
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-e2e-strict.XXXXXX")
pids=""

. scripts/e2e-lib.sh

cleanup() {
	status=$?
	trap - EXIT INT TERM
	for pid in $pids; do
		stop "$pid"
	done
	if [ "${KEEP:-}" = 1 ]; then
		echo "e2e-strict: work directory kept: $work" >&2
	else
		rm -rf "$work"
	fi
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

started() { pids="$1 $pids"; }

wait_log() { # wait_log FILE PATTERN WHAT: up to 30 s
	i=0
	until grep -q "$2" "$1" 2>/dev/null; do
		i=$((i + 1))
		if [ "$i" -gt 300 ]; then
			echo "e2e-strict: $3 did not start within 30 s; its log:" >&2
			tail -n 20 "$1" >&2
			exit 1
		fi
		sleep 0.1
	done
}

now() { date +%s.%N; }
field() { printf '%s' "$2" | sed -n "s/.*\"$1\":\([0-9.e+-]*\).*/\1/p"; }

echo "e2e-strict: building bin/sluice"
CGO_ENABLED=0 "$GO" build -trimpath -o bin/sluice ./cmd/sluice
cp bin/sluice "$work/sluice"
bin=$work/sluice

# The upstream: the model API with a quota far above the gateway's rate.
"$bin" testserver --quota 1000000 --listen 127.0.0.1:0 --log "$work/accepted.log" --log-time \
	>"$work/testserver.out" 2>"$work/testserver.log" &
started $!
wait_log "$work/testserver.log" "listening on http://" "the testserver"
api=$(sed -n 's|.*listening on \(http://[0-9.:]*\).*|\1|p' "$work/testserver.log" | head -n 1)

# The gateway, on the first free port it can bind.
start_nginx "$work/nginx" "$RATE" "$BURST" "$api" started || exit 1

# A config that names only the source and the target.
cat >"$work/sluice.yaml" <<EOF
source:
  jetstream:
    url: embedded
    embedded:
      store_dir: $work/nats
      port: -1
target:
  base_url: $gw
EOF

awk -v n="$JOBS" 'BEGIN {
	for (i = 1; i <= n; i++) {
		id = sprintf("strict-%06d", i)
		printf "{\"id\":\"%s\",\"headers\":{\"Sluice-Job-Id\":\"%s\"},\"body\":{\"n\":%d}}\n", id, id, i
	}
}' >"$work/jobs.jsonl"
ideal=$(awk -v n="$JOBS" -v r="$RATE" 'BEGIN { printf "%.1f", n / r }')
echo "e2e-strict: nginx limit_req $gw ($RATE r/s, burst $BURST) -> testserver $api; $JOBS jobs of cost 1; ideal drain $ideal s"
"$bin" enqueue -c "$work/sluice.yaml" "$work/jobs.jsonl" >"$work/enqueue.log" 2>&1

t0=$(now)
"$bin" run -c "$work/sluice.yaml" 2>"$work/run.log" &
started $!
deadline=$(awk -v i="$ideal" 'BEGIN { printf "%d", i * 4 + 60 }')
drained=""
while :; do
	distinct=$(field distinct "$(curl -fsS "$api/stats")")
	if [ "${distinct:-0}" -ge "$JOBS" ]; then
		st=$("$bin" status -c "$work/sluice.yaml" --json 2>/dev/null || true)
		if [ "$(field pending "$st")" = 0 ] && [ "$(field ack_pending "$st")" = 0 ]; then
			drained=$(now)
			break
		fi
	fi
	if [ "$(awk -v a="$(now)" -v b="$t0" -v d="$deadline" 'BEGIN { print (a - b > d) }')" = 1 ]; then
		echo "e2e-strict: not drained after $deadline s: ${distinct:-0} of $JOBS jobs done" >&2
		break
	fi
	sleep 0.25
done

stats=$(curl -fsS "$api/stats")
distinct=$(field distinct "$stats")
duplicates=$(field duplicates "$stats")
accepted=$(field accepted_requests "$stats")
throttled=$(awk '$1 == 429 { n++ } END { print n + 0 }' "$work/nginx/logs/access.log")
echo
echo "jobs            $distinct of $JOBS answered 200 ($duplicates answered twice or more), $accepted calls reached the API"
echo "throttled       $throttled (429 from nginx; limit $MAX_THROTTLED)"
fail=""
if [ -z "$drained" ]; then
	echo "FAIL: not drained"
	echo "ratio n/a"
	exit 1
fi
drain=$(awk 'NR == 1 { f = $1 } { l = $1 } END { printf "%.1f", l - f }' "$work/accepted.log")
ratio=$(awk -v d="$drain" -v i="$ideal" 'BEGIN { printf "%.3f", d / i }')
echo "drain time      $drain s from the first accepted call to the last; ideal $ideal s"
echo
echo "| jobs | answered 200 | answered twice or more | calls that reached the API | 429s | drain | ideal | ratio |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|"
echo "| $JOBS | $distinct | $duplicates | $accepted | $throttled | $drain s | $ideal s | $ratio |"
echo
[ "$distinct" -ge "$JOBS" ] || fail="$fail; $distinct of $JOBS jobs done"
[ "$duplicates" = 0 ] || fail="$fail; $duplicates jobs answered more than once"
[ "$throttled" -le "$MAX_THROTTLED" ] || fail="$fail; throttled $throttled > $MAX_THROTTLED"
awk -v r="$ratio" -v m="$MAX_RATIO" 'BEGIN { exit !(r <= m) }' || fail="$fail; drain $drain s > $MAX_RATIO x ideal"
if [ -n "$fail" ]; then
	echo "FAIL${fail}"
else
	echo "PASS: every job answered 200 once, throttled <= $MAX_THROTTLED, drain <= $MAX_RATIO x ideal"
fi
echo "ratio $ratio"
[ -z "$fail" ]
