#!/bin/sh
# The limiter's discovery targets in the simulator (docs/tuning.md): every
# row, mode and seed, with its figures and whether it meets its target.
#   ramp family: --scenario ramp --quota Q --demand 2Q/3
#                time_to_90_s <= 120, utilization_steady >= 0.90, throttled <= 60
#   strict:      --scenario strict
#                time_to_90_s <= 60, utilization_steady >= 0.93, throttled <= 20
#   no regression: first-throttle, noisy-neighbor, three-instances
#                aimd utilization_steady >= 0.92, throttled <= 40, noisy-neighbor
#                recovery_s <= 90; cubic utilization_steady >= 0.94, throttled <= 40
# Environment: SLUICE (a built binary; default: build ./cmd/sluice), SEEDS
# ("1 7 23"), QUOTAS ("3000 6000 30000 300000"), MODES ("aimd cubic"),
# ROWS ("ramp strict regression"), DURATION (15m), EXTRA (more flags for
# every run, e.g. "--slow-start=false --initial-fill 1").
# A run the binary refuses (a scenario it does not know) prints "n/a".
# Exit status 1 if any row misses its target.
set -eu

GO=${GO:-go}
SEEDS=${SEEDS:-"1 7 23"}
QUOTAS=${QUOTAS:-"3000 6000 30000 300000"}
MODES=${MODES:-"aimd cubic"}
ROWS=${ROWS:-"ramp strict regression"}
DURATION=${DURATION:-15m}
EXTRA=${EXTRA:-}

if [ -z "${SLUICE:-}" ]; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT INT TERM
	"$GO" build -o "$tmp/sluice" ./cmd/sluice
	SLUICE="$tmp/sluice"
fi

fail=0
# row NAME TARGET FLAGS...: one line per mode and seed. TARGET is
# "t90 util thr rec" (- for no bound).
row() {
	name=$1 target=$2
	shift 2
	for mode in $MODES; do
		for seed in $SEEDS; do
			# shellcheck disable=SC2086
			out=$("$SLUICE" simulate "$@" --mode "$mode" --seed "$seed" --duration "$DURATION" --json $EXTRA 2>/dev/null) || out=""
			line=$(printf '%s\n' "$out" | awk -v name="$name" -v mode="$mode" -v seed="$seed" -v target="$target" '
				function field(name,   v) {
					if (!match($0, "\"" name "\":[^,}]*")) return "null"
					v = substr($0, RSTART, RLENGTH)
					sub(/^[^:]*:/, "", v)
					return v
				}
				function le(v, bound) { return bound == "-" || (v != "null" && v + 0 <= bound + 0) }
				function ge(v, bound) { return bound == "-" || (v != "null" && v + 0 >= bound + 0) }
				END {
					if (NR == 0 || $0 == "") {
						printf "| %s | %s | %s | n/a | n/a | n/a | n/a | n/a |\n", name, mode, seed
						exit 0
					}
					split(target, b, " ")
					t90 = field("time_to_90_s"); u = field("utilization_steady")
					thr = field("throttled"); rec = field("recovery_s")
					ok = le(t90, b[1]) && ge(u, b[2]) && le(thr, b[3]) && le(rec, b[4])
					printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", name, mode, seed, t90, u, thr, rec, ok ? "ok" : "MISS"
				}')
			echo "$line"
			case $line in *MISS*|*n/a*) fail=1 ;; esac
		done
	done
}

echo "| row | mode | seed | time_to_90_s | utilization_steady | throttled | recovery_s | target |"
echo "|---|---|---|---:|---:|---:|---:|---|"
for r in $ROWS; do
	case $r in
	ramp)
		for q in $QUOTAS; do
			d=$(awk -v q="$q" 'BEGIN { printf "%.10g", 2 * q / 3 }')
			row "ramp Q=$q" "120 0.90 60 -" --scenario ramp --quota "$q" --demand "$d"
		done
		;;
	strict)
		row strict "60 0.93 20 -" --scenario strict
		;;
	regression)
		for sc in first-throttle noisy-neighbor three-instances; do
			MODES_SAVED=$MODES
			for m in $MODES_SAVED; do
				u=0.92 rec=-
				[ "$sc" = noisy-neighbor ] && rec=90
				[ "$m" = cubic ] && u=0.94 rec=-
				MODES=$m row "$sc" "- $u 40 $rec" --scenario "$sc"
			done
			MODES=$MODES_SAVED
		done
		;;
	*)
		echo "unknown row $r (want ramp, strict, regression)" >&2
		exit 2
		;;
	esac
done
exit $fail
