# Sourced by the end-to-end scripts (e2e.sh, e2e-strict.sh, e2e-zoo.sh):
# stop a process, and start nginx limit_req in front of a model API.

stop() { # stop PID: TERM, then KILL after 45 s
	pid=$1
	kill -TERM "$pid" 2>/dev/null || return 0
	i=0
	while kill -0 "$pid" 2>/dev/null; do
		i=$((i + 1))
		if [ "$i" -gt 450 ]; then
			echo "process $pid did not stop after 45 s; killing it" >&2
			kill -KILL "$pid" 2>/dev/null || true
			break
		fi
		sleep 0.1
	done
	wait "$pid" 2>/dev/null || true
}

# start_nginx DIR RATE BURST API ON_START: nginx limit_req at RATE
# requests/s with BURST in front of API, answering 429 with
# Retry-After: 1, on the first of 10 random ports it can bind. Its files
# are in DIR; its access log (DIR/logs/access.log) has a line
# "STATUS URI" per request. ON_START is called with nginx's pid. Sets
# gw to its URL; returns 1, with nginx's log on stderr, when it does not
# start.
start_nginx() {
	mkdir -p "$1/logs" "$1/tmp"
	user_line=""
	[ "$(id -u)" != 0 ] || user_line="user root;"
	gw=""
	for try in 1 2 3 4 5 6 7 8 9 10; do
		port=$(awk -v s="$$$try$(date +%N)" 'BEGIN { srand(s % 2147483647); printf "%d", 20000 + int(rand() * 12000) }')
		cat >"$1/nginx.conf" <<CONF
$user_line
worker_processes 1;
pid $1/nginx.pid;
error_log $1/logs/error.log notice;
events { worker_connections 1024; }
http {
    log_format status '\$status \$request_uri';
    access_log $1/logs/access.log status;
    client_body_temp_path $1/tmp/body;
    proxy_temp_path $1/tmp/proxy;
    fastcgi_temp_path $1/tmp/fastcgi;
    uwsgi_temp_path $1/tmp/uwsgi;
    scgi_temp_path $1/tmp/scgi;
    limit_req_zone \$binary_remote_addr zone=api:1m rate=${2}r/s;
    server {
        listen 127.0.0.1:$port;
        location / {
            limit_req zone=api burst=$3;
            limit_req_status 429;
            error_page 429 = @throttled;
            proxy_pass $4;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
        location @throttled {
            add_header Retry-After 1 always;
            return 429 "throttled\n";
        }
    }
}
CONF
		"$NGINX" -p "$1" -c "$1/nginx.conf" -g 'daemon off;' 2>>"$1/logs/stderr.log" &
		npid=$!
		sleep 0.5
		if kill -0 "$npid" 2>/dev/null && curl -fsS -o /dev/null "http://127.0.0.1:$port/stats" 2>/dev/null; then
			"$5" "$npid"
			gw=http://127.0.0.1:$port
			sleep 1 # let the probe's slot leak out of the gateway's bucket
			return 0
		fi
		stop "$npid"
	done
	echo "nginx did not start; its log:" >&2
	tail -n 20 "$1/logs/error.log" "$1/logs/stderr.log" >&2
	return 1
}

# built_sluice: sets $bin to the project's bin/sluice (make build), run
# from the project's root, or exits naming what is missing.
built_sluice() {
	bin=$(pwd)/bin/sluice
	[ -x "$bin" ] || { echo "$(basename "$0"): $bin is missing: make build" >&2; exit 1; }
}

# wait_log FILE PATTERN: waits up to 30 s for a line of FILE matching
# PATTERN; else prints the log's last lines and exits with status 1.
wait_log() {
	i=0
	until grep -q "$2" "$1" 2>/dev/null; do
		i=$((i + 1))
		[ "$i" -le 300 ] || { echo "$(basename "$0"): no \"$2\" in $1 after 30 s" >&2; tail -n 20 "$1" >&2; exit 1; }
		sleep 0.1
	done
}

# in_work NAME: makes $work, a temporary directory, and on exit (or INT,
# TERM) stops every process in $pids and removes $work, keeping the exit
# status.
in_work() {
	work=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
	pids=""
	trap work_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

work_cleanup() {
	status=$?
	trap - EXIT INT TERM
	for pid in $pids; do
		stop "$pid"
	done
	rm -rf "$work"
	exit "$status"
}
