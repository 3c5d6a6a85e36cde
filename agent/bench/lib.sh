#!/usr/bin/env bash
# What the agent's benchmark scripts share, sourced by them after `cd` to the repository root: a work folder and
# the cleanup of it and of every process started (`pids`), the nginx that answers "ok", fault-cli as a TCP
# pass-through to it, and the wait until the proxies answer.
#
# Sourcing sets WORK (a fresh temporary folder), `pids` and an EXIT trap; the caller sets FAULT_BIN.

WORK=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

# start_nginx PORT WORKER_CONNECTIONS [MAIN_LINES] [HTTP_LINES] [LISTEN_OPTIONS]
# nginx answering 200 "ok" on 127.0.0.1:PORT, one worker; the optional arguments add directives to the main and
# http blocks and options to `listen`.
start_nginx() {
  local port=$1 connections=$2 main_lines=${3:-} http_lines=${4:-} listen_options=${5:-}
  mkdir -p "$WORK/nginx"
  cat > "$WORK/nginx/nginx.conf" <<CONF
worker_processes 1;
$main_lines
daemon off;
error_log $WORK/nginx/error.log;
pid $WORK/nginx/nginx.pid;
events { worker_connections $connections; }
http {
  access_log off;
  client_body_temp_path $WORK/nginx;
  proxy_temp_path $WORK/nginx;
  fastcgi_temp_path $WORK/nginx;
  uwsgi_temp_path $WORK/nginx;
  scgi_temp_path $WORK/nginx;
  $http_lines
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:$port $listen_options;
    location / { return 200 "ok"; }
  }
}
CONF
  nginx -c "$WORK/nginx/nginx.conf" -p "$WORK/nginx" & pids+=($!)
}

# start_fault_passthrough LISTEN_PORT UPSTREAM_PORT
# fault-cli 1.2 (`fault run`) as a TCP pass-through with no faults; its process id in fault_pid.
start_fault_passthrough() {
  local port=$1 upstream=$2
  cat > "$WORK/fault-run.json" <<JSON
{"schema_version": 1, "name": "tolerant pass-through baseline",
 "proxies": [{"name": "upstream", "protocol": "tcp", "listen": "127.0.0.1:$port", "upstream": "127.0.0.1:$upstream"}],
 "phases": [{"name": "no faults", "proxies": []}]}
JSON
  "$FAULT_BIN" run --output json "$WORK/fault-run.json" > "$WORK/fault.log" 2>&1 & pids+=($!)
  fault_pid=$!
}

# wait_for_ports PORT...
# Waits up to 10 s for each port to answer a GET /; exits with the logs when one does not.
wait_for_ports() {
  local port
  for port in "$@"; do
    for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/" > /dev/null && break; sleep 0.1; done
    curl -fs "http://127.0.0.1:$port/" > /dev/null || { echo "port $port does not answer"; cat "$WORK"/*.log; exit 1; }
  done
}
