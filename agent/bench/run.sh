#!/usr/bin/env bash
# Reproduces agent/BENCHMARKS.md: wrk on loopback against
#   direct   nginx serving 2 bytes,
#   sidecar  our sidecar in front of that nginx, no fault active: `tolerant agent` if SIDECAR=tolerant, otherwise the
#            `bench_sidecar` example (the same `Sidecar::bind` + `serve_threaded` code without the rest of the CLI),
#   fault    fault-cli 1.2 (`fault run`) as a TCP pass-through to the same nginx (one tcp proxy, a phase with no faults),
# interleaved over ROUNDS rounds; p50 at 1 connection and req/s at 32 connections, medians across rounds.
#
# Needs: wrk and nginx (apt-get install -y wrk nginx), fault-cli
#   (cargo install fault-cli --version 1.2.1 --locked; set FAULT_BIN if not on PATH).
# Usage: agent/bench/run.sh            (ROUNDS=3 DURATION=10s SIDECAR=example by default)
set -euo pipefail
cd "$(dirname "$0")/../.."

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10s}
FAULT_BIN=${FAULT_BIN:-$(command -v fault || echo fault)}
TARGET_DIR=${CARGO_TARGET_DIR:-target}
DIRECT_PORT=18180 SIDECAR_PORT=18181 CONTROL_PORT=18191 FAULT_PORT=18182

# shellcheck source=agent/bench/lib.sh
source agent/bench/lib.sh

SIDECAR=${SIDECAR:-example}
if [ "$SIDECAR" = tolerant ]; then
  cargo build --release -q -p tolerant
  sidecar_cmd=("$TARGET_DIR/release/tolerant" agent --listen 127.0.0.1:$SIDECAR_PORT
    --upstream http://127.0.0.1:$DIRECT_PORT --control 127.0.0.1:$CONTROL_PORT)
else
  cargo build --release -q -p agent --example bench_sidecar
  sidecar_cmd=("$TARGET_DIR/release/examples/bench_sidecar" 127.0.0.1:$SIDECAR_PORT
    http://127.0.0.1:$DIRECT_PORT 127.0.0.1:$CONTROL_PORT)
fi

start_nginx $DIRECT_PORT 1024

"${sidecar_cmd[@]}" > "$WORK/sidecar.log" 2>&1 & pids+=($!)

start_fault_passthrough $FAULT_PORT $DIRECT_PORT

wait_for_ports $DIRECT_PORT $SIDECAR_PORT $FAULT_PORT

# p50 of a `wrk --latency` run, in microseconds.
p50_us() {
  awk '$1 == "50%" { v = $2; if (v ~ /us$/) { sub(/us/, "", v); print v }
        else if (v ~ /ms$/) { sub(/ms/, "", v); print v * 1000 } else { sub(/s/, "", v); print v * 1000000 } }'
}
rps() { awk '/^Requests\/sec:/ { print $2 }'; }
median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

declare -A P50 RPS
names=(direct sidecar fault)
declare -A PORT=([direct]=$DIRECT_PORT [sidecar]=$SIDECAR_PORT [fault]=$FAULT_PORT)
for name in "${names[@]}"; do wrk -t1 -c32 -d2s "http://127.0.0.1:${PORT[$name]}/" > /dev/null; done  # warm-up
for round in $(seq "$ROUNDS"); do
  for name in "${names[@]}"; do
    url="http://127.0.0.1:${PORT[$name]}/"
    P50[$name]+="$(wrk -t1 -c1 -d"$DURATION" --latency "$url" | p50_us) "
    RPS[$name]+="$(wrk -t1 -c32 -d"$DURATION" "$url" | rps) "
  done
  echo "round $round done" >&2
done

echo "| target | p50 @1 conn (µs) | added p50 vs direct (µs) | req/s @32 conn | vs direct | vs fault-cli |"
echo "|---|---:|---:|---:|---:|---:|"
direct_p50=$(tr ' ' '\n' <<< "${P50[direct]}" | grep . | median)
direct_rps=$(tr ' ' '\n' <<< "${RPS[direct]}" | grep . | median)
fault_rps=$(tr ' ' '\n' <<< "${RPS[fault]}" | grep . | median)
for name in "${names[@]}"; do
  p50=$(tr ' ' '\n' <<< "${P50[$name]}" | grep . | median)
  r=$(tr ' ' '\n' <<< "${RPS[$name]}" | grep . | median)
  awk -v n="$name" -v p="$p50" -v dp="$direct_p50" -v r="$r" -v dr="$direct_rps" -v fr="$fault_rps" \
    'BEGIN { printf "| %s | %.0f | %+.0f | %.0f | %.2f× | %.2f× |\n", n, p, p - dp, r, r / dr, r / fr }'
done
echo
echo "raw p50 (µs) per round:"; for name in "${names[@]}"; do echo "  $name: ${P50[$name]}"; done
echo "raw req/s per round:";    for name in "${names[@]}"; do echo "  $name: ${RPS[$name]}"; done
