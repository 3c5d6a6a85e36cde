#!/usr/bin/env bash
# Reproduces the idle-connection memory table of agent/BENCHMARKS.md: resident memory of our sidecar and of
# fault-cli 1.2 (TCP pass-through) before and while CONNECTIONS keep-alive clients sit idle after one request each,
# both in front of the same nginx, in one run.
#
# Needs: nginx (apt-get install -y nginx) and fault-cli (cargo install fault-cli --version 1.2.1 --locked; set
# FAULT_BIN if not on PATH).
# Usage: agent/bench/idle_memory.sh            (CONNECTIONS=4000 by default; needs a descriptor limit above twice that)
set -euo pipefail
cd "$(dirname "$0")/../.."

CONNECTIONS=${CONNECTIONS:-4000}
FAULT_BIN=${FAULT_BIN:-$(command -v fault || echo fault)}
TARGET_DIR=${CARGO_TARGET_DIR:-target}
WORK=$(mktemp -d)
DIRECT_PORT=18380 SIDECAR_PORT=18381 CONTROL_PORT=18391 FAULT_PORT=18382
ulimit -n "$(ulimit -Hn)"   # each idle client costs the proxy two descriptors

pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

cargo build --release -q -p agent --example bench_sidecar --example bench_idle_clients

mkdir -p "$WORK/nginx"
cat > "$WORK/nginx/nginx.conf" <<CONF
worker_processes 1;
worker_rlimit_nofile 20000;
daemon off;
error_log $WORK/nginx/error.log;
pid $WORK/nginx/nginx.pid;
events { worker_connections 19000; }
http {
  access_log off;
  client_body_temp_path $WORK/nginx;
  proxy_temp_path $WORK/nginx;
  fastcgi_temp_path $WORK/nginx;
  uwsgi_temp_path $WORK/nginx;
  scgi_temp_path $WORK/nginx;
  keepalive_timeout 300s;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:$DIRECT_PORT backlog=8192;
    location / { return 200 "ok"; }
  }
}
CONF
nginx -c "$WORK/nginx/nginx.conf" -p "$WORK/nginx" & pids+=($!)

"$TARGET_DIR/release/examples/bench_sidecar" 127.0.0.1:$SIDECAR_PORT http://127.0.0.1:$DIRECT_PORT \
  127.0.0.1:$CONTROL_PORT > "$WORK/sidecar.log" 2>&1 & pids+=($!)
sidecar_pid=$!

cat > "$WORK/fault-run.json" <<JSON
{"schema_version": 1, "name": "tolerant pass-through baseline",
 "proxies": [{"name": "upstream", "protocol": "tcp", "listen": "127.0.0.1:$FAULT_PORT", "upstream": "127.0.0.1:$DIRECT_PORT"}],
 "phases": [{"name": "no faults", "proxies": []}]}
JSON
"$FAULT_BIN" run --output json "$WORK/fault-run.json" > "$WORK/fault.log" 2>&1 & pids+=($!)
fault_pid=$!

for port in $DIRECT_PORT $SIDECAR_PORT $FAULT_PORT; do
  for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/" > /dev/null && break; sleep 0.1; done
  curl -fs "http://127.0.0.1:$port/" > /dev/null || { echo "port $port does not answer"; cat "$WORK"/*.log; exit 1; }
done

rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }

echo "| proxy | RSS before (MiB) | RSS with $CONNECTIONS idle clients (MiB) | per idle connection (KiB) |"
echo "|---|---:|---:|---:|"
for name in sidecar fault; do
  if [ "$name" = sidecar ]; then pid=$sidecar_pid port=$SIDECAR_PORT; else pid=$fault_pid port=$FAULT_PORT; fi
  before=$(rss_kib "$pid")
  # The clients hold their connections until their stdin (a FIFO we keep open) closes.
  rm -f "$WORK/hold" "$WORK/ready"; mkfifo "$WORK/hold"
  "$TARGET_DIR/release/examples/bench_idle_clients" "127.0.0.1:$port" "$CONNECTIONS" < "$WORK/hold" > "$WORK/ready" &
  clients=$!
  exec 3> "$WORK/hold"
  for _ in $(seq 600); do grep -q '^ready' "$WORK/ready" && break; kill -0 "$clients" || break; sleep 0.1; done
  grep -q '^ready' "$WORK/ready" || { echo "the clients did not get ready"; exit 1; }
  sleep 1
  with=$(rss_kib "$pid")
  exec 3>&-
  wait "$clients" || true
  awk -v n="$name" -v b="$before" -v w="$with" -v c="$CONNECTIONS" \
    'BEGIN { printf "| %s | %.1f | %.1f | %.1f |\n", n, b / 1024, w / 1024, (w - b) / c }'
done
