#!/bin/sh
# Why make bench-flood holds the testserver the same for both commits
# (docs/operations.md, written by make docs-bench): the flood with each
# commit's worker and each commit's testserver, each worker under its own
# commit's faults (scripts/bench-flood.sh with HARNESS=own, once with
# TARGET=base and once with TARGET=head, one pair each). Prints a markdown
# table of the four floods, then bench-flood's "machine:" line of each.
# Usage: scripts/bench-flood-testserver.sh [BASE]. Environment: GO (go),
# JOBS (300000 jobs per flood).
set -eu

BASE=${1:-dce2799}
export JOBS=${JOBS:-300000} PAIRS=1 HARNESS=own
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

for t in base head; do
	if ! TARGET=$t sh scripts/bench-flood.sh "$BASE" >"$tmp/$t" 2>"$tmp/$t.err"; then
		cat "$tmp/$t" "$tmp/$t.err" >&2
		exit 1
	fi
done
# bench-flood's rows: | pair | build | jobs/s | RSS | worker CPU | all CPU |,
# the older commit first.
echo "| worker | testserver | jobs/s | all processes' CPU per job |"
echo "|---|---|---:|---:|"
for t in base head; do
	awk -F' *\\| *' -v t="$t" '
		/^\| [0-9]+ \|/ { w[++n] = $3; r[n] = $4; c[n] = $7 }
		END {
			ts = (t == "base") ? w[1] : w[2]
			for (i = 1; i <= n; i++) printf "| %s | %s | %s | %s µs |\n", w[i], ts, r[i], c[i]
		}' "$tmp/$t"
done
grep -h '^machine:' "$tmp/base" "$tmp/head"
