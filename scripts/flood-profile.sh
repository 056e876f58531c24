#!/bin/sh
# Where a job's time goes (docs/operations.md, written by make docs-bench):
# the flood (`faults -scenario flood`) with the CPU profile of its worker,
# once for each older commit named (default dce2799 9f71d8b, each built in
# a git worktree of its own) and then for this tree, one after the other.
# Every flood runs this tree's faults and calls the first commit's
# testserver (the simulator's model API is not the same program in every
# commit; see scripts/bench-flood.sh), so that only the worker differs.
#
# Prints a markdown table: for each stage of a job, its share of the
# worker's CPU profile (the samples whose stack goes through the stage's
# functions) and, in parentheses, that share of the worker's CPU time per
# job over the whole drain; then the worker's CPU per job, and its
# allocations per job (objects and bytes, from its allocation profile
# since start, divided by the jobs). Before the table, a line "machine:
# CPU, cores, load average at the start and at the end".
# Usage: scripts/flood-profile.sh [COMMIT...]. Environment: GO (go), JOBS
# (300000 jobs per flood), CPU_SECONDS (20: seconds of the drain each CPU
# profile covers, after its first 3 s).
set -eu
unset NATS_URL SLUICE_CONFIG SLUICE_TARGET GOOGLE_CLOUD_PROJECT OTEL_EXPORTER_OTLP_ENDPOINT

GO=${GO:-go}
JOBS=${JOBS:-300000}
CPU_SECONDS=${CPU_SECONDS:-20}
[ $# -gt 0 ] || set -- dce2799 9f71d8b

root=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d)
cleanup() {
	for d in "$tmp"/src-*; do
		[ -d "$d" ] && git -C "$root" worktree remove --force "$d" 2>/dev/null
	done
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

load() { cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo "?"; }
start_load=$(load)

build() { # source directory, output directory
	mkdir -p "$2"
	(cd "$1" && CGO_ENABLED=0 "$GO" build -trimpath -o "$2/sluice" ./cmd/sluice)
}
head=$(git -C "$root" rev-parse --short HEAD)
# "+changes" when the Go code differs from HEAD's (not for the docs).
if [ -n "$(git -C "$root" status --porcelain --untracked-files=no -- '*.go' go.mod go.sum)" ]; then
	head="$head+changes"
fi
build "$root" "$tmp/this"
(cd "$root" && CGO_ENABLED=0 "$GO" build -trimpath -o "$tmp/faults" ./faults/cmd/faults)
names=""
for c in "$@"; do
	short=$(git -C "$root" rev-parse --short "$c^{commit}")
	git -C "$root" worktree add --detach --quiet "$tmp/src-$short" "$short"
	build "$tmp/src-$short" "$tmp/$short"
	names="$names $short"
done
names="$names this"
target=$tmp/$(echo $names | cut -d' ' -f1)/sluice

# flood NAME: one flood with NAME's worker; its profiles in $tmp/NAME/prof,
# its worker CPU per job in $tmp/NAME/cpu.
flood() {
	cat >"$tmp/$1/sluice-flood" <<EOF
#!/bin/sh
if [ "\$1" = testserver ]; then exec "$target" "\$@"; fi
exec "$tmp/$1/sluice" "\$@"
EOF
	chmod +x "$tmp/$1/sluice-flood"
	if ! "$tmp/faults" -sluice "$tmp/$1/sluice-flood" -scenario flood -flood-jobs "$JOBS" \
		-flood-profile "$tmp/$1/prof" -flood-cpu-seconds "$CPU_SECONDS" >"$tmp/$1/out" 2>"$tmp/$1/err"; then
		echo "flood-profile: the flood of $1 failed:" >&2
		cat "$tmp/$1/out" "$tmp/$1/err" >&2
		exit 1
	fi
	sed -n 's/.*: \([0-9.]*\) µs per job.*/\1/p' "$tmp/$1/out" >"$tmp/$1/cpu"
}
for n in $names; do flood "$n"; done

# share NAME REGEX: the percentage of NAME's CPU samples whose stack holds a
# function matching REGEX.
share() {
	"$GO" tool pprof -top -nodecount=1000000 -nodefraction=0 -edgefraction=0 -focus="$2" "$tmp/$1/prof/cpu.pprof" 2>/dev/null |
		sed -n 's/^Showing nodes accounting for [^,]*, \([0-9.]*\)% of .*/\1/p'
}
# total NAME INDEX: the total of NAME's allocation profile for INDEX.
total() {
	"$GO" tool pprof -sample_index="$2" -unit=B -top -nodecount=1 "$tmp/$1/prof/allocs.pprof" 2>/dev/null |
		sed -n 's/^Showing nodes accounting for .* of \([0-9.]*\)B* total$/\1/p'
}

echo "machine: $(sed -n 's/^model name[[:space:]]*: *//p' /proc/cpuinfo 2>/dev/null | head -n 1), $(nproc) cores, load average $start_load at the start and $(load) at the end"
echo
printf '| stage, %% of the worker'"'"'s CPU profile (µs per job) |' 
for n in $names; do
	[ "$n" = this ] && n="this build ($head)"
	printf ' %s |' "$n"
done
printf '\n|---|'
for n in $names; do printf -- '---:|'; done
printf '\n'
# row LABEL REGEX
row() {
	printf '| %s |' "$1"
	for n in $names; do
		s=$(share "$n" "$2")
		awk -v s="${s:-0}" -v c="$(cat "$tmp/$n/cpu")" 'BEGIN {
			if (s < 0.5) printf " < 0.5 %% |"; else printf " %.1f %% (%.1f) |", s, s * c / 100 }'
	done
	printf '\n'
}
row 'the job'"'"'s handler (`Worker.handle`, all below it)' 'Worker\)\.handle$'
row 'decode (`Decoder.Decode`)' 'Decoder\)\.Decode$'
row 'the HTTP call (`Sink.Send`, all below it)' 'Sink\)\.Send$'
row 'of which the checks and the request (`Sink.Check`, `Sink.build`)' 'Sink\)\.(Check|build)$'
row 'trace context (`startJob`)' 'Worker\)\.startJob$'
row 'settling (`settleWith`: ack, counts, job age)' 'Worker\)\.settleWith$'
row 'the ack deadline (`keepAlive`, or the keeper)' 'Worker\)\.keepAlive|\(\*keeper\)\.'
row 'stack growth (`runtime.newstack`)' 'runtime\.newstack$'
row 'allocation (`runtime.mallocgc`)' 'runtime\.mallocgc$'
row 'the transport'"'"'s connection loops (`persistConn.readLoop`, `writeLoop`)' 'persistConn\)\.(readLoop|writeLoop)$'
printf '| worker CPU per job, whole drain |'
for n in $names; do printf ' %s µs |' "$(cat "$tmp/$n/cpu")"; done
printf '\n| allocations per job (objects, bytes) |'
for n in $names; do
	awk -v o="$(total "$n" alloc_objects)" -v b="$(total "$n" alloc_space)" -v n="$JOBS" \
		'BEGIN { printf " %.0f, %.1f KB |", o / n, b / n / 1000 }'
done
printf '\n'
