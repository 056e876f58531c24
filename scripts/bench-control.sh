#!/bin/sh
# Control-quality benchmark of the limiter (make bench-control), in the
# simulator's virtual time:
#   1. every mode on every scenario at one seed: the comparison table;
#   2. CUBIC's scale_constant swept over several seeds, to choose its default.
# Environment: GO (go), SEED (1), DURATION (15m), SEEDS (10), CONSTANTS.
set -eu

GO=${GO:-go}
SEED=${SEED:-1}
DURATION=${DURATION:-15m}
SEEDS=${SEEDS:-10}
CONSTANTS=${CONSTANTS:-"0.4 0.1 0.02 0.01 0.005 0.004 0.003 0.002"}
SCENARIOS="first-throttle noisy-neighbor three-instances ramp"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
"$GO" build -o "$tmp/sluice" ./cmd/sluice
bin="$tmp/sluice"

echo "## Every mode, seed $SEED, $DURATION (cubic.scale_constant: the limiter's default)"
echo
"$bin" simulate --compare --seed "$SEED" --duration "$DURATION"
echo
echo "## CUBIC scale_constant, seeds 1..$SEEDS, $DURATION: min..max over the seeds"
echo
echo "| scale_constant | scenario | utilization_steady | throttled | recovery_s | time_to_90_s |"
echo "|---:|---|---|---|---|---|"
for c in $CONSTANTS; do
	for sc in $SCENARIOS; do
		s=1
		while [ "$s" -le "$SEEDS" ]; do
			"$bin" simulate --scenario "$sc" --mode cubic --cubic-scale-constant "$c" \
				--seed "$s" --duration "$DURATION" --json
			s=$((s + 1))
		done | awk -v c="$c" -v sc="$sc" '
			function field(name,   v) {
				if (!match($0, "\"" name "\":[^,}]*")) return "null"
				v = substr($0, RSTART, RLENGTH)
				sub(/^[^:]*:/, "", v)
				return v
			}
			function note(name, v) {
				if (v == "null") { nulls[name]++; return }
				v += 0
				if (!(name in lo) || v < lo[name]) lo[name] = v
				if (!(name in hi) || v > hi[name]) hi[name] = v
			}
			function span(name,   out) {
				if (!(name in lo)) return "–"
				out = lo[name] ".." hi[name]
				if (nulls[name] > 0) out = out " (" nulls[name] " never)"
				return out
			}
			{
				note("utilization_steady", field("utilization_steady"))
				note("throttled", field("throttled"))
				note("recovery_s", field("recovery_s"))
				note("time_to_90_s", field("time_to_90_s"))
			}
			END {
				printf "| %s | %s | %s | %s | %s | %s |\n", c, sc, span("utilization_steady"),
					span("throttled"), span("recovery_s"), span("time_to_90_s")
			}'
	done
done
