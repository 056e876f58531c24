#!/usr/bin/env bash
# Start or stop a local Google Cloud Pub/Sub emulator for sluice's tests.
#
#   scripts/pubsub-emulator.sh start    start it in the background (its own process
#                                       group), wait until it answers, then print
#                                       `export PUBSUB_EMULATOR_HOST=...` on stdout
#   scripts/pubsub-emulator.sh stop     stop it: the whole process group (the launcher
#                                       and the Java process), TERM then KILL
#   scripts/pubsub-emulator.sh status   exit 0 and print the export line if it answers
#
# Typical use:  eval "$(scripts/pubsub-emulator.sh start)"; go test ./sources/gcppubsub/
#
# Environment (all optional):
#   PUBSUB_EMULATOR_PORT      port on 127.0.0.1 (default 8085)
#   PUBSUB_EMULATOR_PROJECT   default project, for the gcloud launcher only (default sluice-test);
#                             the emulator itself accepts any project name
#   PUBSUB_EMULATOR_STATE     directory for the pid and log files
#                             (default ${TMPDIR:-/tmp}/sluice-pubsub-emulator-PORT)
#   PUBSUB_EMULATOR_TIMEOUT   seconds to wait for it to answer (default 90)
#
# It uses the emulator's own launcher (platform/pubsub-emulator/bin/cloud-pubsub-emulator
# in the Google Cloud SDK) when it can find it, else `gcloud beta emulators pubsub start`.
# It needs Java 17 or newer. Diagnostics go to stderr; only the export line goes to stdout.
set -euo pipefail

host=127.0.0.1
port=${PUBSUB_EMULATOR_PORT:-8085}
project=${PUBSUB_EMULATOR_PROJECT:-sluice-test}
state=${PUBSUB_EMULATOR_STATE:-${TMPDIR:-/tmp}/sluice-pubsub-emulator-$port}
timeout=${PUBSUB_EMULATOR_TIMEOUT:-90}
pidfile=$state/pgid
logfile=$state/emulator.log

log() { printf 'pubsub-emulator: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

# answers reports whether something speaks HTTP on the port and says it is the
# emulator (it answers "Ok" on / over HTTP/1.1 on its gRPC port).
answers() {
	if command -v curl >/dev/null 2>&1; then
		curl -fsS --max-time 2 "http://$host:$port/" 2>/dev/null | grep -q Ok
	else
		# Without curl: a TCP connect is the best we can do.
		(exec 3<>"/dev/tcp/$host/$port") 2>/dev/null
	fi
}

port_in_use() { (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; }

running_pgid() {
	[ -f "$pidfile" ] || return 1
	local pgid
	pgid=$(cat "$pidfile")
	[ -n "$pgid" ] && kill -0 -- "-$pgid" 2>/dev/null && { echo "$pgid"; return 0; }
	return 1
}

find_launcher() {
	local root candidates=()
	if command -v gcloud >/dev/null 2>&1; then
		root=$(gcloud info --format='value(installation.sdk_root)' 2>/dev/null || true)
		[ -n "$root" ] && candidates+=("$root/platform/pubsub-emulator/bin/cloud-pubsub-emulator")
	fi
	candidates+=(/usr/lib/google-cloud-sdk/platform/pubsub-emulator/bin/cloud-pubsub-emulator
		/usr/share/google-cloud-sdk/platform/pubsub-emulator/bin/cloud-pubsub-emulator
		/opt/google-cloud-sdk/platform/pubsub-emulator/bin/cloud-pubsub-emulator)
	for c in "${candidates[@]}"; do
		[ -x "$c" ] && { echo "$c"; return 0; }
	done
	return 1
}

export_line() { echo "export PUBSUB_EMULATOR_HOST=$host:$port"; }

start() {
	mkdir -p "$state"
	if pgid=$(running_pgid); then
		if answers; then
			log "already running (process group $pgid)"
			export_line
			return 0
		fi
		die "process group $pgid from $pidfile is alive but the emulator does not answer on $host:$port; run '$0 stop' first"
	fi
	if port_in_use; then
		die "$host:$port is already in use by another process; set PUBSUB_EMULATOR_PORT to a free port"
	fi
	command -v java >/dev/null 2>&1 || die "java not found: the emulator needs Java 17 or newer"
	command -v setsid >/dev/null 2>&1 || die "setsid not found (util-linux): needed to give the emulator its own process group"

	local cmd
	if launcher=$(find_launcher); then
		cmd=("$launcher" "--host=$host" "--port=$port")
	elif command -v gcloud >/dev/null 2>&1; then
		cmd=(gcloud beta emulators pubsub start "--host-port=$host:$port" "--project=$project" --quiet)
	else
		die "no Pub/Sub emulator found: install the Google Cloud SDK component 'pubsub-emulator'"
	fi

	log "starting: ${cmd[*]} (log: $logfile)"
	# setsid makes the launcher the leader of a new process group whose id is
	# its pid, so stop can kill the launcher and the Java process together.
	setsid "${cmd[@]}" >"$logfile" 2>&1 </dev/null &
	local pgid=$!
	echo "$pgid" >"$pidfile"

	local deadline=$((SECONDS + timeout))
	until answers; do
		if ! kill -0 -- "-$pgid" 2>/dev/null; then
			rm -f "$pidfile"
			tail -n 20 "$logfile" >&2 || true
			die "the emulator exited before answering"
		fi
		if [ "$SECONDS" -ge "$deadline" ]; then
			tail -n 20 "$logfile" >&2 || true
			kill -KILL -- "-$pgid" 2>/dev/null || true
			rm -f "$pidfile"
			die "the emulator did not answer on $host:$port within ${timeout}s"
		fi
		sleep 0.5
	done
	log "answering on $host:$port (process group $pgid)"
	export_line
}

stop() {
	local pgid
	if ! pgid=$(running_pgid); then
		rm -f "$pidfile"
		log "not running"
		return 0
	fi
	kill -TERM -- "-$pgid" 2>/dev/null || true
	for _ in $(seq 1 20); do
		kill -0 -- "-$pgid" 2>/dev/null || break
		sleep 0.5
	done
	if kill -0 -- "-$pgid" 2>/dev/null; then
		log "process group $pgid did not exit on TERM; sending KILL"
		kill -KILL -- "-$pgid" 2>/dev/null || true
	fi
	rm -f "$pidfile"
	log "stopped (process group $pgid)"
}

status() {
	if running_pgid >/dev/null && answers; then
		export_line
		return 0
	fi
	log "not running on $host:$port"
	return 1
}

case "${1:-start}" in
start) start ;;
stop) stop ;;
status) status ;;
*) die "usage: $0 start|stop|status" ;;
esac
