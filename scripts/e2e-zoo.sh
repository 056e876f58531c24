#!/bin/sh
# Real gateways (make e2e-zoo): one `sluice run` per target, with a config
# that names only the source and the target (every limiter option at its
# default), drains a backlog through a real rate-limiting gateway in front
# of the model API. The targets (rows):
#
#   nginx-R-bB     nginx limit_req at R requests/s with burst B, for R in
#                  20, 75, 200 and B in 5, 10, 20; 429 with Retry-After: 1
#                  beyond it (as make e2e-strict configures it);
#   haproxy-R      Debian's haproxy with the usual stick-table recipe:
#                  track-sc0 src with http_req_rate(10s) before the deny, so
#                  refused requests count too; deny_status 429 (no
#                  Retry-After) above 10 x R requests in 10 s;
#   fixed-Q/W      sluice testserver --api fixed --window W --quota Q
#                  (a fixed window that resets, GitHub-style), with no
#                  gateway in front; skipped, with a message, by a
#                  testserver that has no --api fixed;
#   nginx-20-b5-idle  nginx at 20 requests/s, burst 5, with the worker
#                  started IDLE_LEAD seconds before IDLE_JOBS jobs are
#                  enqueued (`sluice enqueue` while it runs).
#
# Each row has its own temporary directory, its own embedded NATS
# JetStream server (port -1), its own gateway process on a free loopback
# port with its own config, and its own `sluice testserver` upstream with
# a quota far above the gateway's rate, which counts every accepted job id
# (a job answered 200 twice shows as a duplicate). The worker's metrics
# listen on a free port (metrics.listen: 127.0.0.1:0), so that rows can
# run side by side; PARALLEL rows run at a time.
#
# Jobs and the ideal time: a row's gateway rate G is R requests/s for
# nginx and haproxy and Q/W for the fixed window. The backlog is
# G x IDEAL_S jobs of cost 1 (the idle row: IDLE_JOBS), queued before
# `sluice run` starts. Ideal = jobs / G: the gateway's burst (nginx's
# burst, haproxy's 10 s of credit, the fixed window's first window) is not
# counted, so a drain may beat it by at most burst / G (nginx: 0.25 s at
# 20/s burst 5; haproxy: 10 s; fixed: one window).
#
# The drain time runs from the start of `sluice run` (the idle row: from
# the start of the enqueue) to the moment the upstream has accepted every
# job id and the queue is empty. A row passes when every job was answered
# 200 exactly once, drain <= MAX_RATIO x ideal, and the gateway's 429s are
# at most MAX_429 + MAX_429_SHARE x requests. Each row also shows the
# limiter's rate when the backlog was drained (the worker's
# sluice_limiter_rate_units_per_minute) against the gateway's. The rows
# are printed as a markdown table (docs/tuning.md, written from it by make
# docs-e2e); the last line printed is the worst row's ratio. A row still draining after
# MAX_WAIT x ideal + 30 s is stopped, and shows its drain and ratio as
# lower bounds (">").
#
# Environment: GO (go), NGINX (nginx), HAPROXY (haproxy), ROWS (the names
# of the rows to run, separated by spaces; default all), PARALLEL (4),
# IDEAL_S (240), IDLE_JOBS (2000), IDLE_LEAD (10), HAPROXY_RATE (50),
# FIXED_QUOTA (3000), FIXED_WINDOW (60, seconds), MAX_RATIO (1.08),
# MAX_WAIT (1.5), MAX_429 (15), MAX_429_SHARE (0.001), KEEP=1 keeps the
# work directory.
set -eu
# sluice reads these as overrides of its config file; the runs here are
# configured by their files and flags alone.
unset NATS_URL SLUICE_CONFIG GOOGLE_CLOUD_PROJECT OTEL_EXPORTER_OTLP_ENDPOINT

GO=${GO:-go}
NGINX=${NGINX:-nginx}
HAPROXY=${HAPROXY:-haproxy}
ROWS=${ROWS:-}
PARALLEL=${PARALLEL:-4}
IDEAL_S=${IDEAL_S:-240}
IDLE_JOBS=${IDLE_JOBS:-2000}
IDLE_LEAD=${IDLE_LEAD:-10}
HAPROXY_RATE=${HAPROXY_RATE:-50}
FIXED_QUOTA=${FIXED_QUOTA:-3000}
FIXED_WINDOW=${FIXED_WINDOW:-60}
MAX_RATIO=${MAX_RATIO:-1.08}
MAX_WAIT=${MAX_WAIT:-1.5}
MAX_429=${MAX_429:-15}
MAX_429_SHARE=${MAX_429_SHARE:-0.001}

# name kind rate burst: the 200/s rows in different waves, so that at most
# one of them runs at a time with PARALLEL=4.
all_rows="nginx-200-b5 nginx 200 5
nginx-75-b10 nginx 75 10
haproxy-$HAPROXY_RATE haproxy $HAPROXY_RATE -
nginx-20-b5 nginx 20 5
nginx-200-b10 nginx 200 10
nginx-75-b5 nginx 75 5
fixed-$FIXED_QUOTA/${FIXED_WINDOW}s fixed - -
nginx-20-b10 nginx 20 10
nginx-200-b20 nginx 200 20
nginx-75-b20 nginx 75 20
nginx-20-b20 nginx 20 20
nginx-20-b5-idle idle 20 5"

for tool in "$NGINX" "$HAPROXY"; do
	command -v "$tool" >/dev/null 2>&1 || [ -x "$tool" ] || {
		echo "e2e-zoo: $tool not found (make e2e-zoo installs nginx-light and haproxy)" >&2
		exit 1
	}
done
case $PARALLEL in '' | *[!0-9]* | 0) echo "e2e-zoo: PARALLEL: want a whole number >= 1, got '$PARALLEL'" >&2; exit 2 ;; esac
if [ -n "$ROWS" ]; then
	for r in $ROWS; do
		printf '%s\n' "$all_rows" | awk -v r="$r" '$1 == r { f = 1 } END { exit !f }' || {
			echo "e2e-zoo: ROWS: unknown row '$r'; the rows are: $(printf '%s\n' "$all_rows" | awk '{ printf "%s ", $1 }')" >&2
			exit 2
		}
	done
fi
cd "$(dirname "$0")/.."
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-e2e-zoo.XXXXXX")

now() { date +%s.%N; }
clock() { date +%H:%M:%S; }
field() { printf '%s' "$2" | sed -n "s/.*\"$1\":\([0-9.e+-]*\).*/\1/p"; }
calc() { awk "BEGIN { $1 }"; }

# --- One row, run in a subshell of its own -----------------------------

# Every process a row starts is listed in its pids file; the row stops
# them when it ends, and the main shell once more on its way out.
row_started() { echo "$1" >>"$dir/pids"; }

. scripts/e2e-lib.sh

row_cleanup() {
	status=$?
	trap - EXIT INT TERM
	if [ -f "$dir/pids" ]; then
		# The worker first (it settles its jobs), then the gateway and the API.
		for pid in $(cat "$dir/pids"); do
			stop "$pid"
		done
	fi
	echo "$status" >"$dir/rc"
	exit "$status"
}

wait_log() { # wait_log FILE PATTERN WHAT PID: up to 30 s, or until PID exits
	i=0
	until grep -q "$2" "$1" 2>/dev/null; do
		i=$((i + 1))
		if [ "$i" -gt 300 ] || ! kill -0 "$4" 2>/dev/null; then
			echo "$3 did not start; its log:" >&2
			tail -n 20 "$1" >&2
			return 1
		fi
		sleep 0.1
	done
}

pick_port() { # pick_port TRY: a port below the usual ephemeral range
	awk -v s="$$$row_index$1$(date +%N)" 'BEGIN { srand(s % 2147483647); printf "%d", 20000 + int(rand() * 12000) }'
}

start_testserver() { # start_testserver ARGS...: sets api
	"$bin" testserver --listen 127.0.0.1:0 "$@" >"$dir/testserver.out" 2>"$dir/testserver.log" &
	tpid=$!
	row_started $tpid
	wait_log "$dir/testserver.log" "listening on http://" "the testserver" $tpid || return 1
	api=$(sed -n 's|.*listening on \(http://[0-9.:]*\).*|\1|p' "$dir/testserver.log" | head -n 1)
}

start_row_nginx() { # start_row_nginx RATE BURST: sets gw and access_log
	start_nginx "$dir/nginx" "$1" "$2" "$api" row_started || return 1
	access_log=$dir/nginx/logs/access.log
}

start_haproxy() { # start_haproxy RATE: sets gw
	mkdir -p "$dir/haproxy"
	gw=""
	for try in 1 2 3 4 5 6 7 8 9 10; do
		port=$(pick_port $try)
		cat >"$dir/haproxy/haproxy.cfg" <<EOF
global
    log stdout format raw local0
    maxconn 1024

defaults
    mode http
    log global
    log-format "%ST %HU"
    timeout connect 5s
    timeout client 60s
    timeout server 60s

frontend api
    bind 127.0.0.1:$port
    stick-table type ip size 100k expire 30s store http_req_rate(10s)
    http-request track-sc0 src
    http-request deny deny_status 429 if { sc_http_req_rate(0) gt $(($1 * 10)) }
    default_backend upstream

backend upstream
    server api ${api#http://}
EOF
		"$HAPROXY" -db -f "$dir/haproxy/haproxy.cfg" >"$dir/haproxy/access.log" 2>>"$dir/haproxy/stderr.log" &
		hpid=$!
		sleep 0.5
		if kill -0 "$hpid" 2>/dev/null && curl -fsS -o /dev/null "http://127.0.0.1:$port/stats" 2>/dev/null; then
			row_started $hpid
			gw=http://127.0.0.1:$port
			break
		fi
		stop "$hpid"
	done
	[ -n "$gw" ] || { echo "haproxy did not start; its log:" >&2; tail -n 20 "$dir/haproxy/stderr.log" >&2; return 1; }
	access_log=$dir/haproxy/access.log
}

row_main() { # row_main NAME KIND RATE BURST
	name=$1 kind=$2 rate=$3 burst=$4
	trap row_cleanup EXIT
	trap 'exit 143' TERM
	trap 'exit 130' INT
	access_log=""
	case $kind in
	fixed)
		rate=$(calc "printf \"%g\", $FIXED_QUOTA / $FIXED_WINDOW")
		"$bin" testserver --listen 127.0.0.1:0 --api fixed --window "${FIXED_WINDOW}s" --quota "$FIXED_QUOTA" \
			>"$dir/testserver.out" 2>"$dir/testserver.log" &
		tpid=$!
		row_started $tpid
		if ! wait_log "$dir/testserver.log" "listening on http://" "the testserver" $tpid 2>"$dir/start.err"; then
			if grep -q -- '--api' "$dir/testserver.log"; then
				echo "skip|testserver has no --api fixed ($(grep -m 1 -- '--api' "$dir/testserver.log"))" >"$dir/result"
				return 0
			fi
			cat "$dir/start.err" >&2
			return 1
		fi
		api=$(sed -n 's|.*listening on \(http://[0-9.:]*\).*|\1|p' "$dir/testserver.log" | head -n 1)
		gw=$api
		;;
	*)
		start_testserver --quota 1000000
		case $kind in
		haproxy) start_haproxy "$rate" ;;
		*) start_row_nginx "$rate" "$burst" ;;
		esac
		;;
	esac

	if [ "$kind" = idle ]; then
		jobs=$IDLE_JOBS
	else
		jobs=$(calc "printf \"%d\", $rate * $IDEAL_S + 0.999")
	fi
	ideal=$(calc "printf \"%.1f\", $jobs / $rate")

	cat >"$dir/sluice.yaml" <<EOF
source:
  jetstream:
    url: embedded
    embedded:
      store_dir: $dir/nats
      port: -1
target:
  base_url: $gw
metrics:
  listen: 127.0.0.1:0
EOF
	awk -v n="$jobs" -v p="$name" 'BEGIN {
		gsub(/[^A-Za-z0-9-]/, "-", p)
		for (i = 1; i <= n; i++) {
			id = sprintf("%s-%06d", p, i)
			printf "{\"id\":\"%s\",\"headers\":{\"Sluice-Job-Id\":\"%s\"},\"body\":{\"n\":%d}}\n", id, id, i
		}
	}' >"$dir/jobs.jsonl"

	if [ "$kind" = idle ]; then
		"$bin" run -c "$dir/sluice.yaml" 2>"$dir/run.log" &
		wpid=$!
		row_started $wpid
		wait_log "$dir/run.log" '"msg":"sluice running"' "the worker" $wpid
		sleep "$IDLE_LEAD"
		t0=$(now)
		"$bin" enqueue -c "$dir/sluice.yaml" "$dir/jobs.jsonl" >"$dir/enqueue.log" 2>&1 &
		epid=$!
		wait $epid || { echo "the enqueue failed:" >&2; tail -n 5 "$dir/enqueue.log" >&2; return 1; }
	else
		"$bin" enqueue -c "$dir/sluice.yaml" "$dir/jobs.jsonl" >"$dir/enqueue.log" 2>&1 &
		epid=$!
		wait $epid || { echo "the enqueue failed:" >&2; tail -n 5 "$dir/enqueue.log" >&2; return 1; }
		t0=$(now)
		"$bin" run -c "$dir/sluice.yaml" 2>"$dir/run.log" &
		wpid=$!
		row_started $wpid
		wait_log "$dir/run.log" '"msg":"sluice running"' "the worker" $wpid
	fi
	ops=$(sed -n 's|.*"msg":"ops endpoints listening","addr":"\([^"]*\)".*|\1|p' "$dir/run.log" | head -n 1)

	deadline=$(calc "printf \"%d\", $ideal * $MAX_WAIT + 30")
	drained=""
	lrate=""
	while :; do
		distinct=$(field distinct "$(curl -fsS "$api/stats" 2>/dev/null || true)")
		if [ "${distinct:-0}" -ge "$jobs" ]; then
			[ -n "$lrate" ] || lrate=$(curl -fsS "http://$ops/metrics" 2>/dev/null |
				awk '/^sluice_limiter_rate_units_per_minute/ { printf "%.0f", $NF }' || true)
			st=$("$bin" status -c "$dir/sluice.yaml" --json 2>/dev/null || true)
			if [ "$(field pending "$st")" = 0 ] && [ "$(field ack_pending "$st")" = 0 ]; then
				drained=$(now)
				break
			fi
		fi
		if [ "$(calc "print ($(now) - $t0 > $deadline)")" = 1 ]; then
			lrate=$(curl -fsS "http://$ops/metrics" 2>/dev/null |
				awk '/^sluice_limiter_rate_units_per_minute/ { printf "%.0f", $NF }' || true)
			break
		fi
		sleep 0.5
	done

	stats=$(curl -fsS "$api/stats")
	distinct=$(field distinct "$stats")
	duplicates=$(field duplicates "$stats")
	if [ "$kind" = fixed ]; then
		throttled=$(field throttled "$stats")
		requests=$(($(field accepted_requests "$stats") + throttled))
	else
		sleep 0.5 # the gateway's last log lines
		throttled=$(awk '$1 == 429 && $2 != "/stats" { n++ } END { print n + 0 }' "$access_log")
		requests=$(awk '$2 != "/stats" { n++ } END { print n + 0 }' "$access_log")
	fi
	grate=$(calc "printf \"%.0f\", $rate * 60")
	fail=""
	if [ -n "$drained" ]; then
		drain=$(calc "printf \"%.1f\", $drained - $t0")
		ratio=$(calc "printf \"%.3f\", $drain / $ideal")
		calc "exit !($ratio <= $MAX_RATIO)" || fail="$fail; drain > $MAX_RATIO x ideal"
	else
		drain=">$deadline"
		ratio=">$(calc "printf \"%.3f\", $deadline / $ideal")"
		fail="$fail; not drained: $distinct of $jobs jobs done"
	fi
	max429=$(calc "printf \"%d\", $MAX_429 + $MAX_429_SHARE * $requests")
	[ "$throttled" -le "$max429" ] || fail="$fail; 429s $throttled > $max429"
	[ "$distinct" -ge "$jobs" ] || [ -z "$drained" ] || fail="$fail; $distinct of $jobs jobs done"
	[ "$duplicates" = 0 ] || fail="$fail; $duplicates jobs answered 200 more than once"
	share=$(calc "printf \"%.3f\", ${lrate:-0} / $grate")
	verdict=PASS
	[ -z "$fail" ] || verdict="FAIL${fail}"
	echo "row|$jobs|$ideal|$drain|$ratio|$throttled|$requests|$max429|${lrate:-?}|$grate|$share|$verdict" >"$dir/result"
}

# --- The main shell: a pool of PARALLEL rows -----------------------------

main_cleanup() {
	status=$?
	trap - EXIT INT TERM
	for d in "$work"/row*; do
		[ -f "$d/subpid" ] && [ ! -f "$d/rc" ] && kill -TERM "$(cat "$d/subpid")" 2>/dev/null || true
	done
	# Each row stops its own processes; wait for them (a row's worker
	# may take a few seconds to settle its jobs), then kill what is left.
	i=0
	for d in "$work"/row*; do
		[ -f "$d/subpid" ] || continue
		while [ ! -f "$d/rc" ] && kill -0 "$(cat "$d/subpid")" 2>/dev/null && [ "$i" -lt 400 ]; do
			i=$((i + 1))
			sleep 0.1
		done
		[ -f "$d/pids" ] && for pid in $(cat "$d/pids"); do kill -KILL "$pid" 2>/dev/null || true; done
		wait "$(cat "$d/subpid")" 2>/dev/null || true
	done
	if [ "${KEEP:-}" = 1 ]; then
		echo "e2e-zoo: work directory kept: $work" >&2
	else
		rm -rf "$work"
	fi
	exit "$status"
}
trap main_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "e2e-zoo: building bin/sluice"
CGO_ENABLED=0 "$GO" build -trimpath -o bin/sluice ./cmd/sluice
cp bin/sluice "$work/sluice"
bin=$work/sluice

# running prints the number of rows still running, and a line for each
# row that ended since the last call.
running() {
	n=0
	for d in "$work"/row*; do
		[ -f "$d/subpid" ] || continue
		if [ ! -f "$d/rc" ]; then
			n=$((n + 1))
		elif [ ! -f "$d/reported" ]; then
			: >"$d/reported"
			if [ -f "$d/result" ]; then
				IFS='|' read -r kind jobs ideal drain ratio throttled rest <"$d/result"
				if [ "$kind" = skip ]; then
					echo "e2e-zoo: $(clock) skip  $(cat "$d/name"): $jobs" >&2
				else
					echo "e2e-zoo: $(clock) done  $(cat "$d/name"): $jobs jobs, drain $drain s, ratio $ratio, $throttled 429s" >&2
				fi
			else
				echo "e2e-zoo: $(clock) error $(cat "$d/name"): $(tail -n 1 "$d/row.err")" >&2
			fi
		fi
	done
	echo "$n"
}
load() { cut -d ' ' -f 1-3 /proc/loadavg 2>/dev/null || echo "?"; }

t_start=$(now)
echo "e2e-zoo: ideal $IDEAL_S s of backlog per row, $PARALLEL rows at a time; pass: ratio <= $MAX_RATIO, 429s <= $MAX_429 + $MAX_429_SHARE x requests; load average $(load)"
row_index=0
selected=""
while read -r name kind rate burst; do
	if [ -n "$ROWS" ]; then
		case " $ROWS " in *" $name "*) ;; *) continue ;; esac
	fi
	row_index=$((row_index + 1))
	selected="$selected $row_index"
	while [ "$(running)" -ge "$PARALLEL" ]; do sleep 1; done
	dir=$work/row$(printf '%02d' $row_index)
	mkdir -p "$dir"
	echo "$name" >"$dir/name"
	echo "e2e-zoo: $(clock) start $name" >&2
	(row_main "$name" "$kind" "$rate" "$burst") >"$dir/row.out" 2>"$dir/row.err" </dev/null &
	echo $! >"$dir/subpid"
done <<EOF
$all_rows
EOF
while [ "$(running)" -gt 0 ]; do sleep 1; done
for i in $selected; do wait "$(cat "$work/row$(printf '%02d' "$i")/subpid")" 2>/dev/null || true; done

echo
echo "e2e-zoo: $(clock) all rows done in $(calc "printf \"%.0f\", $(now) - $t_start") s; load average $(load)"
echo
echo "| row | jobs | ideal | drain | ratio | 429s | requests | limiter at the end, /min | gateway, /min | limiter / gateway | verdict |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
failed=0
worst=""
worst_name=""
: >"$work/errors"
for i in $selected; do
	d=$work/row$(printf '%02d' "$i")
	name=$(cat "$d/name")
	if [ ! -f "$d/result" ]; then
		failed=1
		echo "| $name | | | | | | | | | | ERROR: the row did not finish |"
		{ echo "$name:"; sed 's/^/    /' "$d/row.err" | tail -n 20; } >>"$work/errors"
		continue
	fi
	IFS='|' read -r kind jobs ideal drain ratio throttled requests max429 lrate grate share verdict <"$d/result"
	if [ "$kind" = skip ]; then
		echo "| $name | | | | | | | | | | SKIP: $jobs |"
		continue
	fi
	echo "| $name | $jobs | $ideal s | $drain s | $ratio | $throttled | $requests | $lrate | $grate | $share | $verdict |"
	case $verdict in PASS) ;; *) failed=1 ;; esac
	# A row stopped before it drained shows its ratio as ">N": compare N.
	r=$(printf '%s' "$ratio" | tr -d '>')
	wr=$(printf '%s' "$worst" | tr -d '>')
	if [ -z "$worst" ] || calc "exit !($r > $wr)"; then
		worst=$ratio
		worst_name=$name
	fi
done
if [ -s "$work/errors" ]; then
	echo
	echo "rows that did not finish:"
	cat "$work/errors"
fi
echo
echo "ideal = jobs / the gateway's rate (its burst not counted); drain from the start of sluice run (idle row: of the enqueue)"
echo "limiter at the end: the limiter's rate when the backlog was drained (or the row stopped); gateway: the gateway's rate"
echo "ratio ${worst:-n/a} (worst row: ${worst_name:-none})"
[ "$failed" = 0 ]
