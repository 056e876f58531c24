#!/bin/sh
# The flood beside an older commit (make bench-flood): builds this tree and
# BASE (default dce2799) in a git worktree of its own, then runs a flood
# (`faults -scenario flood`) with each one's worker in turn, BASE first:
# BASE, this tree, BASE, this tree... (PAIRS pairs), so that both see the
# machine's load alike. Prints each run's jobs/s, the worker's peak RSS
# and CPU per job (where the flood reports it) and the CPU time of the
# whole run per job
# (faults, NATS, testserver and worker, publishing included; with
# /usr/bin/time), then the ratio of this tree's jobs/s to BASE's, per
# pair and over all runs, and the ratio of their CPU per job; last, a line
# "machine: CPU, cores, load average at the start and at the end".
#
# The flood measures sluice's worker, so the rest is held the same for
# both commits: both floods call one testserver, BASE's unless
# TARGET=head (the testserver, the simulator's model API, is not the same
# program in every commit), and both run this tree's faults (the flood
# scenario, its NATS server and the audit; HARNESS=own runs each commit's
# own). Each flood runs a sluice that hands `testserver` to the chosen
# build's binary. With this tree's faults the older worker must accept
# the flood's config file (dce2799's does).
# Usage: scripts/bench-flood.sh [BASE]
# Environment: GO (go), JOBS (1000000 jobs per run), PAIRS (2), TARGET
# (base or head), HARNESS (head or own).
set -eu

GO=${GO:-go}
BASE=${1:-${BASE:-dce2799}}
JOBS=${JOBS:-1000000}
PAIRS=${PAIRS:-2}
TARGET=${TARGET:-base}
HARNESS=${HARNESS:-head}
case $TARGET/$HARNESS in
base/head | head/head | base/own | head/own) ;;
*)
	echo "bench-flood: TARGET must be base or head, HARNESS head or own; got $TARGET, $HARNESS" >&2
	exit 2
	;;
esac

load() { cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo "?"; }
start_load=$(load)

root=$(git rev-parse --show-toplevel)
base=$(git -C "$root" rev-parse --short "$BASE^{commit}")
head=$(git -C "$root" rev-parse --short HEAD)
# "+changes" when the Go code differs from HEAD's (not for the docs).
if [ -n "$(git -C "$root" status --porcelain --untracked-files=no -- '*.go' go.mod go.sum)" ]; then
	head="$head+changes"
fi
tmp=$(mktemp -d)
cleanup() {
	git -C "$root" worktree remove --force "$tmp/base" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

build() { # source directory, output directory
	mkdir -p "$2"
	(cd "$1" && CGO_ENABLED=0 "$GO" build -trimpath -o "$2/sluice" ./cmd/sluice &&
		CGO_ENABLED=0 "$GO" build -trimpath -o "$2/faults" ./faults/cmd/faults)
}
echo "building $head (this tree) and $base (git worktree in $tmp/base)" >&2
build "$root" "$tmp/new"
git -C "$root" worktree add --detach --quiet "$tmp/base" "$base"
build "$tmp/base" "$tmp/old"
target=$tmp/old/sluice
[ "$TARGET" = head ] && target=$tmp/new/sluice
echo "both floods call the testserver of $TARGET; faults: $HARNESS" >&2
for b in old new; do
	cat >"$tmp/$b/sluice-flood" <<EOF
#!/bin/sh
if [ "\$1" = testserver ]; then exec "$target" "\$@"; fi
exec "$tmp/$b/sluice" "\$@"
EOF
	chmod +x "$tmp/$b/sluice-flood"
done

timer=
[ -x /usr/bin/time ] && timer="/usr/bin/time -f %U+%S -o"

# run NAME DIR: one flood; prints "NAME jobs/s rss_mb cpu_us_per_job
# all_cpu_us_per_job".
run() {
	out="$tmp/$1.out"
	faults=$tmp/new/faults
	[ "$HARNESS" = own ] && faults=$2/faults
	if ! ${timer:+$timer "$tmp/$1.time"} "$faults" -sluice "$2/sluice-flood" -scenario flood -flood-jobs "$JOBS" >"$out" 2>"$tmp/$1.err"; then
		echo "bench-flood: the flood of $1 failed:" >&2
		cat "$out" "$tmp/$1.err" >&2
		exit 1
	fi
	rate=$(sed -n 's/.* jobs in .*s: \([0-9.]*\) jobs\/s.*/\1/p' "$out")
	rss=$(sed -n 's/.*worker peak RSS (VmHWM) \([0-9.]*\) MB.*/\1/p' "$out")
	cpu=$(sed -n 's/.*: \([0-9.]*\) µs per job.*/\1/p' "$out")
	all=-
	if [ -s "$tmp/$1.time" ]; then
		all=$(awk -v n="$JOBS" -F+ 'END { printf "%.1f", ($1 + $2) * 1e6 / n }' "$tmp/$1.time")
	fi
	echo "$1 ${rate:-?} ${rss:-?} ${cpu:--} $all"
}

echo "| run | build | jobs/s | worker peak RSS MB | worker CPU µs/job | all processes' CPU µs/job |"
echo "|---|---|---:|---:|---:|---:|"
: >"$tmp/runs"
i=1
while [ "$i" -le "$PAIRS" ]; do
	for b in old new; do
		set -- $(run "$b$i" "$tmp/$b")
		echo "$b $2 $5" >>"$tmp/runs"
		name=$base
		[ "$b" = new ] && name=$head
		echo "| $i | $name | $2 | $3 | $4 | $5 |"
	done
	i=$((i + 1))
done
echo
awk -v base="$base" -v head="$head" '
	$1 == "old" { o[++no] = $2; so += $2; co += $3 }
	$1 == "new" { n[++nn] = $2; sn += $2; cn += $3 }
	END {
		for (i = 1; i <= nn; i++) printf "pair %d: %s/%s = %.3f\n", i, head, base, n[i] / o[i]
		printf "flood ratio (%d jobs, mean of %d runs each): %s/%s = %.3f\n", '"$JOBS"', nn, head, base, (sn / nn) / (so / no)
		if (co > 0 && cn > 0) printf "CPU per job of all processes: %s/%s = %.3f\n", head, base, cn / co
	}' "$tmp/runs"
echo "machine: $(sed -n 's/^model name[[:space:]]*: *//p' /proc/cpuinfo 2>/dev/null | head -n 1), $(nproc) cores, load average $start_load at the start and $(load) at the end"
