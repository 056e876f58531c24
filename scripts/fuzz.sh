#!/bin/sh
# Runs one fuzz target for FUZZTIME on top of its committed corpus:
#   scripts/fuzz.sh TARGET PACKAGE
#
# The fuzzing engine of the go command sometimes ends a run that found
# nothing with "context deadline exceeded", when the fuzz time runs out
# while a worker is busy; no input is written then. Such a run is repeated
# once. A real failure (a failing input written to testdata/fuzz) fails at
# once.
set -u
target=$1 pkg=$2
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-10s}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# A target that is not in the package would fuzz nothing and pass.
if ! $GO test -list "^$target\$" "$pkg" | grep -qx "$target"; then
	echo "fuzz.sh: $pkg has no fuzz target $target" >&2
	exit 1
fi
for try in 1 2; do
	if $GO test -run '^$' -fuzz "^$target\$" -fuzztime "$FUZZTIME" "$pkg" >"$log" 2>&1; then
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
