#!/bin/sh
# One controller for the fleet against one of its own per instance
# (docs/simulator.md, "One controller for the fleet"): `sluice simulate
# --instances N --seed S --json` with --share local and --share fleet, a
# markdown table with a line per N and seed, and the fleet's targets:
# utilization_steady >= 0.92 at every N; at N = 50, at most 40 throttles
# and at most twice those of N = 2 (the same seed; NS must list 2 before
# 50). The targets are first-throttle's: another SCENARIO marks none (–).
# Settings, from the environment or as NAME=VALUE arguments: SLUICE (a
# built binary; default: build ./cmd/sluice), NS ("2 10 50"), SEEDS ("1 7
# 23 2 3 42"), SCENARIO (first-throttle), MODE (aimd), DURATION (15m).
set -eu

for arg in "$@"; do
	case $arg in
	SLUICE=* | NS=* | SEEDS=* | SCENARIO=* | MODE=* | DURATION=*) export "$arg" ;;
	*)
		echo "fleet-table.sh: unknown argument $arg (want NAME=VALUE: NS, SEEDS, SCENARIO, MODE, DURATION, SLUICE)" >&2
		exit 2
		;;
	esac
done

GO=${GO:-go}
NS=${NS:-"2 10 50"}
SEEDS=${SEEDS:-"1 7 23 2 3 42"}
SCENARIO=${SCENARIO:-first-throttle}
MODE=${MODE:-aimd}
DURATION=${DURATION:-15m}

if [ -z "${SLUICE:-}" ]; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT INT TERM
	"$GO" build -o "$tmp/sluice" ./cmd/sluice
	SLUICE="$tmp/sluice"
fi

# field NAME JSON: a field of sluice simulate --json, – for null.
field() { printf '%s' "$2" | sed -n "s/.*\"$1\":\([0-9.e+-]*\|null\).*/\1/p" | sed 's/^null$/–/'; }

echo "| N | seed | local throttled | local utilization_steady | fleet throttled | fleet utilization_steady | fleet time_to_90_s | fleet target |"
echo "|---:|---:|---:|---:|---:|---:|---:|---|"
for n in $NS; do
	for seed in $SEEDS; do
		run() { "$SLUICE" simulate --scenario "$SCENARIO" --mode "$MODE" --instances "$n" --seed "$seed" --duration "$DURATION" --share "$1" --json; }
		local_=$(run local)
		fleet=$(run fleet)
		thr=$(field throttled "$fleet")
		util=$(field utilization_steady "$fleet")
		[ "$n" = 2 ] && eval "two_$seed=\$thr"
		two=$(eval "echo \${two_$seed:-}")
		mark=–
		[ "$SCENARIO" = first-throttle ] && mark=$(awk -v n="$n" -v thr="$thr" -v util="$util" -v two="$two" 'BEGIN {
			ok = util != "–" && util + 0 >= 0.92
			if (n == 50) ok = ok && thr + 0 <= 40 && (two == "" || thr + 0 <= 2 * two)
			print ok ? "ok" : "MISS"
		}')
		echo "| $n | $seed | $(field throttled "$local_") | $(field utilization_steady "$local_") | $thr | $util | $(field time_to_90_s "$fleet") | $mark |"
	done
done
