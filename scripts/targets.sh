#!/bin/sh
# The limiter's discovery targets in the simulator (docs/simulator.md,
# "Discovery targets"): every row, mode and seed, with its figures and
# whether it meets its target, as a markdown table.
#   ramp family: --scenario ramp --quota Q --demand 2Q/3
#                time_to_90_s <= 120, utilization_steady >= 0.93,
#                throttled <= 60 + 0.05% of requests
#   strict:      --scenario strict
#                time_to_90_s <= 60, utilization_steady >= 0.93, throttled <= 20
#   no regression: first-throttle, noisy-neighbor, three-instances
#                utilization_steady >= 0.95, throttled <= 30 (aimd and cubic),
#                noisy-neighbor recovery_s <= 90
#   custom:      the flags of FLAGS, with no target
# Settings, from the environment or as NAME=VALUE arguments (the docs'
# regions use these): SLUICE (a built binary; default: build ./cmd/sluice),
# SEEDS ("1 7 23"), QUOTAS ("3000 6000 30000 300000"), MODES ("aimd
# cubic"), ROWS ("ramp strict regression"; custom too),
# FLAGS (the custom row's flags), DURATION (15m),
# EXTRA (more flags for every run, e.g. "--slow-start=false --initial-fill
# 1"), FORMAT (seeds: a line per row, mode and seed; ranges: a line per
# row, each figure's range over the seeds, AIMD / CUBIC; both: the two
# tables, a blank line between them), MISS_OK (1: exit 0 when a row misses
# its target, for the docs, which show the misses).
# A run the binary refuses (a scenario it does not know) prints "n/a".
# Exit status 1 if any row misses its target (unless MISS_OK=1).
set -eu

for arg in "$@"; do
	case $arg in
	SLUICE=* | SEEDS=* | QUOTAS=* | MODES=* | ROWS=* | DURATION=* | EXTRA=* | FLAGS=* | FORMAT=* | MISS_OK=*)
		export "$arg"
		;;
	*)
		echo "targets.sh: unknown argument $arg (want NAME=VALUE: SEEDS, QUOTAS, MODES, ROWS, DURATION, EXTRA, FLAGS, FORMAT, MISS_OK, SLUICE)" >&2
		exit 2
		;;
	esac
done

GO=${GO:-go}
SEEDS=${SEEDS:-"1 7 23"}
QUOTAS=${QUOTAS:-"3000 6000 30000 300000"}
MODES=${MODES:-"aimd cubic"}
ROWS=${ROWS:-"ramp strict regression"}
DURATION=${DURATION:-15m}
EXTRA=${EXTRA:-}
FORMAT=${FORMAT:-seeds}
MISS_OK=${MISS_OK:-0}
case $FORMAT in seeds | ranges | both) ;; *)
	echo "targets.sh: FORMAT=$FORMAT (want seeds, ranges or both)" >&2
	exit 2
	;;
esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
if [ -z "${SLUICE:-}" ]; then
	"$GO" build -o "$tmp/sluice" ./cmd/sluice
	SLUICE="$tmp/sluice"
fi
results=$tmp/results

# row NAME TARGET FLAGS...: one result per mode and seed, in $results as
# name|mode|seed|t90|util|thr|rec|mark. TARGET is "t90 util thr rec
# [share]" (- for no bound): throttled is bounded by thr + share ×
# requests (share 0 when absent).
row() {
	name=$1 target=$2
	shift 2
	for mode in $MODES; do
		for seed in $SEEDS; do
			# shellcheck disable=SC2086
			out=$("$SLUICE" simulate "$@" --mode "$mode" --seed "$seed" --duration "$DURATION" --json $EXTRA 2>/dev/null) || out=""
			printf '%s\n' "$out" | awk -v name="$name" -v mode="$mode" -v seed="$seed" -v target="$target" '
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
						printf "%s|%s|%s|n/a|n/a|n/a|n/a|n/a\n", name, mode, seed
						exit 0
					}
					split(target, b, " ")
					t90 = field("time_to_90_s"); u = field("utilization_steady")
					thr = field("throttled"); rec = field("recovery_s")
					thrmax = b[3]
					if (thrmax != "-" && b[5] != "") thrmax = b[3] + b[5] * field("requests")
					ok = le(t90, b[1]) && ge(u, b[2]) && le(thr, thrmax) && le(rec, b[4])
					mark = ok ? "ok" : "MISS"
					if (target == "- - - -") mark = "–"
					printf "%s|%s|%s|%s|%s|%s|%s|%s\n", name, mode, seed, t90, u, thr, rec, mark
				}' >>"$results"
		done
	done
}

: >"$results"
for r in $ROWS; do
	case $r in
	ramp)
		for q in $QUOTAS; do
			d=$(awk -v q="$q" 'BEGIN { printf "%.10g", 2 * q / 3 }')
			row "ramp Q=$q" "120 0.93 60 - 0.0005" --scenario ramp --quota "$q" --demand "$d"
		done
		;;
	strict)
		row strict "60 0.93 20 -" --scenario strict
		;;
	regression)
		for sc in first-throttle noisy-neighbor three-instances; do
			rec=-
			[ "$sc" = noisy-neighbor ] && rec=90
			row "$sc" "- 0.95 30 $rec" --scenario "$sc"
		done
		;;
	custom)
		# shellcheck disable=SC2086
		row "\`${FLAGS:?custom: FLAGS names the flags}\`" "- - - -" $FLAGS
		;;
	*)
		echo "unknown row $r (want ramp, strict, regression, custom)" >&2
		exit 2
		;;
	esac
done

seeds_table() {
	echo "| row | mode | seed | time_to_90_s | utilization_steady | throttled | recovery_s | target |"
	echo "|---|---|---:|---:|---:|---:|---:|---|"
	awk -F'|' '{ for (i = 4; i <= 7; i++) if ($i == "null") $i = "–"; printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8 }' "$results"
}

# ranges_table: a line per row; each figure's range over the seeds (null:
# never for time_to_90_s, – for recovery_s), one range per mode in the
# order of MODES, separated by " / "; the target's mark, ok when every
# seed meets it.
ranges_table() {
	echo "| row | time_to_90_s | utilization_steady | throttled | recovery_s | target |"
	echo "|---|---|---|---|---|---|"
	awk -F'|' -v modes="$MODES" '
		function fmt(v, col) { return col == 5 ? sprintf("%.3f", v) : v }
		function range(key, col,   lo, hi, nulls, n, s, v) {
			n = cnt[key]; nulls = 0; lo = ""; hi = ""
			for (s = 1; s <= n; s++) {
				v = val[key, s, col]
				if (v == "null" || v == "n/a") { nulls++; continue }
				if (lo == "" || v + 0 < lo + 0) lo = v
				if (hi == "" || v + 0 > hi + 0) hi = v
			}
			nv = col == 4 ? "never" : "–"
			if (lo == "") return nv
			lo = fmt(lo, col); hi = fmt(hi, col)
			s = lo == hi ? lo : lo "–" hi
			if (nulls > 0) s = s "–" nv
			return s
		}
		{
			if (!($1 in seen)) { seen[$1] = 1; order[++rows] = $1 }
			key = $1 SUBSEP $2
			n = ++cnt[key]
			for (c = 4; c <= 7; c++) val[key, n, c] = $c
			if ($8 == "MISS" || $8 == "n/a") miss[$1] = 1
			if ($8 == "–") none[$1] = 1
		}
		END {
			nm = split(modes, m, " ")
			for (r = 1; r <= rows; r++) {
				name = order[r]
				line = "| " name
				for (c = 4; c <= 7; c++) {
					cell = ""
					for (i = 1; i <= nm; i++) {
						key = name SUBSEP m[i]
						if (!(key in cnt)) continue
						cell = cell (cell == "" ? "" : " / ") range(key, c)
					}
					line = line " | " cell
				}
				mark = none[name] ? "–" : (miss[name] ? "MISS" : "ok")
				print line " | " mark " |"
			}
		}' "$results"
}

case $FORMAT in
seeds) seeds_table ;;
ranges) ranges_table ;;
both)
	seeds_table
	echo
	ranges_table
	;;
esac
if grep -q '|MISS$\||n/a$' "$results" && [ "$MISS_OK" != 1 ]; then
	exit 1
fi
exit 0
