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
DIRECT_PORT=18380 SIDECAR_PORT=18381 CONTROL_PORT=18391 FAULT_PORT=18382
ulimit -n "$(ulimit -Hn)"   # each idle client costs the proxy two descriptors

# shellcheck source=agent/bench/lib.sh
source agent/bench/lib.sh

cargo build --release -q -p agent --example bench_sidecar --example bench_idle_clients

start_nginx $DIRECT_PORT 19000 "worker_rlimit_nofile 20000;" "keepalive_timeout 300s;" "backlog=8192"

"$TARGET_DIR/release/examples/bench_sidecar" 127.0.0.1:$SIDECAR_PORT http://127.0.0.1:$DIRECT_PORT \
  127.0.0.1:$CONTROL_PORT > "$WORK/sidecar.log" 2>&1 & pids+=($!)
sidecar_pid=$!

start_fault_passthrough $FAULT_PORT $DIRECT_PORT

wait_for_ports $DIRECT_PORT $SIDECAR_PORT $FAULT_PORT

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
