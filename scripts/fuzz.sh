#!/bin/sh
# Runs one fuzz target for FUZZTIME on top of its committed corpus:
#   scripts/fuzz.sh TARGET PACKAGE
#
# The fuzzing engine of the go command minimizes each new interesting
# input for up to -fuzzminimizetime (60 s by default), counting no
# executions meanwhile, and ends a run whose fuzz time runs out during one
# with "context deadline exceeded" and no input written: with a 10 s fuzz
# time, a run that finds new coverage late fails that way. Minimizing is
# kept to FUZZMINTIME (1s), a failing input is still written, only less
# small. A run that still ends with that error and no input is repeated
# once; a real failure (a failing input written to testdata/fuzz) fails
# at once.
set -u
target=$1 pkg=$2
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-10s}
FUZZMINTIME=${FUZZMINTIME:-1s}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# A target that is not in the package would fuzz nothing and pass.
if ! $GO test -list "^$target\$" "$pkg" | grep -qx "$target"; then
	echo "fuzz.sh: $pkg has no fuzz target $target" >&2
	exit 1
fi
for try in 1 2; do
	if $GO test -run '^$' -fuzz "^$target\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "$FUZZMINTIME" "$pkg" >"$log" 2>&1; then
		cat "$log"
		exit 0
	fi
	cat "$log"
	if grep -q 'Failing input written' "$log" || ! grep -q 'context deadline exceeded' "$log"; then
		exit 1
	fi
	echo "fuzz.sh: $target ended with the engine's deadline error and no failing input; run $try of 2" >&2
done
exit 1
