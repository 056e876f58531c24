#!/bin/sh
# The benchmark figures of the docs, as markdown tables: runs one group of
# `go test -bench` COUNT times and prints, for each figure, its median and
# its range over the runs. The docs' (bench) regions are written from it
# by make docs-bench. Each table's baseline runs beside it in the same
# process, and the ratio is taken run by run: read the ratios, not the
# absolute figures, which are this machine's under its load then.
#
#   job      BenchmarkJob (worker): allocs/op, B/op and time/op of one job
#            through the worker, target=memory and target=httpapi
#            (docs/operations.md); COUNT 10.
#   drain    BenchmarkDrainRatio (worker): a bare fetch/POST/ack loop and
#            the worker, round by round, and worker/bare (docs/worker.md);
#            COUNT 6.
#   receive  BenchmarkReceiveAckRatio (-benchtime 20x) and
#            BenchmarkReceiveAck (-benchtime 50000x) (sources/natsjs): a
#            bare nats.go loop and the Source, and Source/bare
#            (docs/sources.md); COUNT 6.
#
# Before the table, a line "machine: CPU, GOMAXPROCS, load average at the
# start and at the end" (the docs show it beside the table).
# Usage: bench-table.sh TABLE [COUNT=n]. Environment: GO (go).
set -eu

GO=${GO:-go}
table=${1:-}
shift || true
COUNT=
for arg in "$@"; do
	case $arg in
	COUNT=*) COUNT=${arg#COUNT=} ;;
	*) echo "bench-table.sh: unknown argument $arg (want COUNT=n)" >&2; exit 2 ;;
	esac
done

out=$(mktemp)
trap 'rm -f "$out"' EXIT
load() { cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo "?"; }
start_load=$(load)

# bench PKG FLAGS…: go test -bench into $out, which keeps every run.
bench() {
	pkg=$1
	shift
	if ! "$GO" test -run '^$' "$@" "$pkg" >>"$out" 2>&1; then
		cat "$out"
		echo "bench-table.sh: go test $* $pkg failed" >&2
		exit 1
	fi
}

case $table in
job)
	bench ./worker/ -bench '^BenchmarkJob$' -benchmem -count "${COUNT:-10}"
	;;
drain)
	bench ./worker/ -bench '^BenchmarkDrainRatio$' -count "${COUNT:-6}"
	;;
receive)
	bench ./sources/natsjs/ -bench '^BenchmarkReceiveAckRatio$' -benchtime 20x -count "${COUNT:-6}"
	bench ./sources/natsjs/ -bench '^BenchmarkReceiveAck$' -benchtime 50000x -count "${COUNT:-6}"
	;;
*)
	echo "bench-table.sh: want a table: job, drain or receive" >&2
	exit 2
	;;
esac

cpu=$(sed -n "s/^cpu: *\(.*[^ ]\) *$/\1/p" "$out" | head -n 1)
procs=$(sed -n 's/^Benchmark[^ 	]*-\([0-9][0-9]*\)[ 	].*/\1/p' "$out" | head -n 1)
echo "machine: ${cpu:-unknown CPU}, GOMAXPROCS ${procs:-1}, load average $start_load at the start and $(load) at the end"
echo

# Each result line: its benchmark's name (without -GOMAXPROCS), then pairs
# of value and unit. v[name SUBSEP unit] holds the values, run by run.
awk -v table="$table" '
function med(name, unit,    n, i, j, t, a) {
	n = cnt[name, unit]
	for (i = 1; i <= n; i++) a[i] = v[name, unit, i]
	for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
	lo = a[1]; hi = a[n]
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function num(x,    s, r) { # thousands separated, as the docs write them
	s = sprintf("%.0f", x); r = ""
	while (length(s) > 3) { r = "," substr(s, length(s) - 2) r; s = substr(s, 1, length(s) - 3) }
	return s r
}
function rate(name, unit,    m) { # msgs/s or jobs/s: median and range
	m = med(name, unit)
	return num(m) " (" num(lo) " – " num(hi) ")"
}
function ratio(name, unit,    m) {
	m = med(name, unit)
	return sprintf("%.2f (%.2f – %.2f)", m, lo, hi)
}
function us(name,    m) { # ns/op as µs: median and range
	m = med(name, "ns/op")
	return sprintf("%.1f µs (%.1f – %.1f)", m / 1000, lo / 1000, hi / 1000)
}
# pair A B UNIT: B/A run by run, as a ratio of the same unit.
function pair(a, b, unit, key,    i) {
	for (i = 1; i <= cnt[a, unit] && i <= cnt[b, unit]; i++) v[key, "x", i] = v[b, unit, i] / v[a, unit, i]
	cnt[key, "x"] = i - 1
	return ratio(key, "x")
}
/^Benchmark/ {
	name = $1; sub(/-[0-9]+$/, "", name)
	for (i = 3; i < NF; i += 2) { k = cnt[name, $(i+1)] + 1; cnt[name, $(i+1)] = k; v[name, $(i+1), k] = $i }
	runs[name]++
}
END {
	if (table == "job") {
		print "| `BenchmarkJob`, " runs["BenchmarkJob/target=memory"] " runs | allocs/op | B/op | time/op, median (range) |"
		print "|---|---:|---:|---:|"
		split("target=memory target=httpapi", sub_)
		for (s = 1; s <= 2; s++) {
			n = "BenchmarkJob/" sub_[s]
			printf "| `%s` | %s | %s | %s |\n", sub_[s], num(med(n, "allocs/op")), num(med(n, "B/op")), us(n)
		}
	} else if (table == "drain") {
		n = "BenchmarkDrainRatio"
		print "| `BenchmarkDrainRatio`, " runs[n] " runs | median (range) |"
		print "|---|---:|"
		print "| bare fetch, POST, ack loop, jobs/s | " rate(n, "bare_jobs/s") " |"
		print "| worker, jobs/s | " rate(n, "worker_jobs/s") " |"
		print "| worker / bare | " ratio(n, "worker/bare") " |"
	} else if (table == "receive") {
		n = "BenchmarkReceiveAckRatio"; m = "BenchmarkReceiveAck"
		print "| benchmark, " runs[n] " runs each | bare nats.go, msgs/s | Source, msgs/s | Source / bare |"
		print "|---|---:|---:|---:|"
		printf "| `ReceiveAckRatio` (`-benchtime 20x`) | %s | %s | %s |\n", rate(n, "bare_msgs/s"), rate(n, "source_msgs/s"), ratio(n, "source/bare")
		printf "| `ReceiveAck`, plain acks (`-benchtime 50000x`) | %s | %s | %s |\n", rate(m "/bare", "msgs/s"), rate(m "/source", "msgs/s"), pair(m "/bare", m "/source", "msgs/s", "plain")
		printf "| `ReceiveAck`, confirmed acks | %s | %s | %s |\n", rate(m "/bare_sync", "msgs/s"), rate(m "/source_sync", "msgs/s"), pair(m "/bare_sync", m "/source_sync", "msgs/s", "sync")
	}
}' "$out"
