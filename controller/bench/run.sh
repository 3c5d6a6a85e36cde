#!/usr/bin/env bash
# Load driver benchmark: requests per second from one core against nginx serving a 2-byte file on
# loopback, side by side with wrk (1 thread), oha (1 worker thread) and Locust (FastHttpUser, one
# process), all with 32 connections, all pinned to the same core; nginx pinned to the other.
#
# Needs: nginx and wrk (Debian: apt-get install -y nginx wrk), oha 1.16 on PATH or in OHA
# (cargo install oha --version 1.16.0 --locked), locust (pip install locust).
# Usage: controller/bench/run.sh [rounds] [seconds]    (defaults: 3 rounds of 10 s per tool)
set -euo pipefail
cd "$(dirname "$0")/../.."

ROUNDS=${1:-3}
SECONDS_PER_RUN=${2:-10}
CONNECTIONS=32
PORT=${PORT:-18099}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
OHA=${OHA:-$(command -v oha || echo oha)}
NGINX=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
URL="http://127.0.0.1:${PORT}/x"

ROOT=$(mktemp -d /tmp/tolerant-bench.XXXXXX)
chmod 755 "$ROOT"  # nginx workers run as nobody
mkdir -p "$ROOT/www" "$ROOT/tmp"
printf 'ok' > "$ROOT/www/x"
sed -e "s#__ROOT__#$ROOT#g" -e "s#__PORT__#$PORT#g" controller/bench/nginx.conf > "$ROOT/nginx.conf"

taskset -c "$SERVER_CPU" "$NGINX" -c "$ROOT/nginx.conf" &
NGINX_PID=$!
trap 'kill "$NGINX_PID" 2>/dev/null || true; wait "$NGINX_PID" 2>/dev/null || true; rm -rf "$ROOT"' EXIT
for _ in $(seq 50); do
  curl -sf "$URL" >/dev/null 2>&1 && break
  sleep 0.1
done
[ "$(curl -sf "$URL")" = "ok" ] || { echo "nginx did not come up on $URL" >&2; exit 1; }

# Build the driver's bench binary (release profile) and find it.
BIN=$(cargo bench -p controller --bench load_driver --no-run --message-format=json 2>/dev/null |
  python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "load_driver" and m.get("executable"):
        print(m["executable"])')
[ -x "$BIN" ] || { echo "bench binary not built" >&2; exit 1; }

RESULTS="$ROOT/results.jsonl"
# Runs a command and writes the CPU seconds (user + system) it used to $ROOT/cpu: on a shared
# machine other processes steal the client core, so requests per CPU-second is the steadier
# measure of what one core can drive.
cpu() {
  /usr/bin/time -f '%U %S' -o "$ROOT/cpu" "$@"
}
cpu_seconds() {
  awk 'END { print $1 + $2 }' "$ROOT/cpu"
}
run_wrk() {
  cpu taskset -c "$CLIENT_CPU" wrk -t1 -c"$CONNECTIONS" -d"${SECONDS_PER_RUN}s" --latency "$URL" |
    python3 -c 'import json,re,sys
text = sys.stdin.read()
def us(v):
    n, unit = re.match(r"([\d.]+)(\w+)", v).groups()
    return float(n) * {"us": 1, "ms": 1e3, "s": 1e6}[unit]
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
p = dict(re.findall(r"^\s+(50|90|99)%\s+(\S+)", text, re.M))
errors = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
requests = int(re.search(r"(\d+) requests in", text).group(1))
print(json.dumps({"tool": "wrk", "requests_per_second": rps, "requests": requests, "p50_us": us(p["50"]), "p90_us": us(p["90"]), "p99_us": us(p["99"]), "errors": int(errors.group(1)) if errors else 0}))'
}
run_oha() {
  cpu taskset -c "$CLIENT_CPU" "$OHA" -z "${SECONDS_PER_RUN}s" -c "$CONNECTIONS" --no-tui --worker-threads 1 \
    --output-format json "$URL" |
    python3 -c 'import json,sys
r = json.load(sys.stdin)
p = r["latencyPercentiles"]
codes = r.get("statusCodeDistribution", {})
print(json.dumps({"tool": "oha", "requests_per_second": r["summary"]["requestsPerSec"], "requests": sum(codes.values()), "p50_us": p["p50"] * 1e6, "p90_us": p["p90"] * 1e6, "p99_us": p["p99"] * 1e6, "errors": sum(v for k, v in codes.items() if k != "200")}))'
}
run_tolerant() {
  cpu taskset -c "$CLIENT_CPU" "$BIN" --target "127.0.0.1:${PORT}" --path /x --users "$CONNECTIONS" \
    --seconds "$SECONDS_PER_RUN" --warmup 0 |
    python3 -c 'import json,sys
r = json.loads(sys.stdin.read())
print(json.dumps({"tool": "tolerant", "requests_per_second": r["requests_per_second"], "requests": r["requests"], "p50_us": r["p50_us"], "p90_us": r["p90_us"], "p99_us": r["p99_us"], "errors": r["errors"]}))'
}
run_locust() {
  (cd "$ROOT" && cpu taskset -c "$CLIENT_CPU" locust -f "$OLDPWD/controller/bench/locustfile.py" --headless \
    -u "$CONNECTIONS" -r "$CONNECTIONS" -t "${SECONDS_PER_RUN}s" --host "http://127.0.0.1:${PORT}" \
    --csv "$ROOT/locust" --only-summary >/dev/null 2>&1 || true)
  python3 -c 'import csv,json,sys
rows = list(csv.DictReader(open(sys.argv[1])))
a = [r for r in rows if r["Name"] == "Aggregated"][0]
print(json.dumps({"tool": "locust", "requests_per_second": float(a["Requests/s"]), "requests": int(a["Request Count"]), "p50_us": float(a["50%"]) * 1e3, "p90_us": float(a["90%"]) * 1e3, "p99_us": float(a["99%"]) * 1e3, "errors": int(a["Failure Count"])}))' "$ROOT/locust_stats.csv"
}

for round in $(seq "$ROUNDS"); do
  # Rotate the order each round so no tool always runs first (or right after the same peer).
  tools=(wrk oha tolerant locust)
  shift_by=$(( (round - 1) % ${#tools[@]} ))
  ordered=("${tools[@]:$shift_by}" "${tools[@]:0:$shift_by}")
  for tool in "${ordered[@]}"; do
    echo "round $round: $tool" >&2
    result=$("run_$tool")
    python3 -c 'import json,sys
r = json.loads(sys.argv[1]); r["round"] = int(sys.argv[2]); r["cpu_seconds"] = float(sys.argv[3])
r["requests_per_cpu_second"] = r["requests"] / max(r["cpu_seconds"], 1e-9)
print(json.dumps(r))' "$result" "$round" "$(cpu_seconds)" >> "$RESULTS"
    sleep 1
  done
done

cp "$RESULTS" "${RESULTS_COPY:-/tmp/tolerant-bench-results.jsonl}"
python3 - "$RESULTS" "$ROUNDS" "$SECONDS_PER_RUN" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
tools = ["wrk", "oha", "tolerant", "locust"]
keys = ["requests_per_second", "requests_per_cpu_second", "p50_us", "p90_us", "p99_us", "errors"]
med = {t: {k: statistics.median(r[k] for r in rows if r["tool"] == t) for k in keys} for t in tools}
rounds = sorted({r["round"] for r in rows})
by_round = {n: {r["tool"]: r for r in rows if r["round"] == n} for n in rounds}
def paired(tool, peer, key):
    return statistics.median(by_round[n][tool][key] / by_round[n][peer][key] for n in rounds)
print(f"{sys.argv[2]} rounds × {sys.argv[3]} s per tool, 32 connections, client pinned to one core; medians over rounds.")
print("Ratios are medians of the per-round ratios (each round runs every tool back to back).\n")
print("| tool | req/s | req/s × wrk | req/s × oha | req per CPU-s | CPU-s × wrk | CPU-s × oha | p50 µs | p90 µs | p99 µs | errors |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for t in tools:
    m = med[t]
    print(f"| {t} | {m['requests_per_second']:.0f} | {paired(t, 'wrk', 'requests_per_second'):.2f} | "
          f"{paired(t, 'oha', 'requests_per_second'):.2f} | {m['requests_per_cpu_second']:.0f} | "
          f"{paired(t, 'wrk', 'requests_per_cpu_second'):.2f} | {paired(t, 'oha', 'requests_per_cpu_second'):.2f} | "
          f"{m['p50_us']:.0f} | {m['p90_us']:.0f} | {m['p99_us']:.0f} | {m['errors']:.0f} |")
print("\nPer round: req/s (req per CPU-second)\n")
print("| round | " + " | ".join(tools) + " |")
print("|---|" + "---:|" * len(tools))
for n in rounds:
    print(f"| {n} | " + " | ".join(f"{by_round[n][t]['requests_per_second']:.0f} ({by_round[n][t]['requests_per_cpu_second']:.0f})" for t in tools) + " |")
PY
