#!/usr/bin/env bash
# One alternating sitting of the HTTP load figure alone, with the lean load generator (`mcpload http --raw`):
# our testbed, rmcp 3.11, turbomcp 4 and the floor (benches/peers/floor, no MCP SDK), one after the other in each
# round, at -c 4 and -c 64 in both eras; then medians over the rounds and ratios.
#
#   benches/raw-sitting.sh                          # 3 rounds of 5 s runs: about 5 minutes after the builds
#   ROUNDS=1 DURATION=2 benches/raw-sitting.sh      # a quick look
#
# Every run gets a fresh server on its own loopback port and measures the `load` phase only (the floor has no
# sleep tool; benches/compare.sh has the cancellation probe). The JSON lines go to target/bench-raw/raw.jsonl
# (`label` is "server|figure|round"), the tables to target/bench-raw/table.md, server logs to target/bench-raw/logs.
#
# Environment (defaults in brackets)
#   ROUNDS [3]             rounds; medians are taken over them
#   DURATION [5]           measured seconds per run
#   HTTP_WARMUP [1]        unmeasured seconds per run
#   SERVERS ["ours rmcp turbomcp4 floor"]
#   FIGURES ["raw-2025-c4 raw-2025-c64 raw-2026-c4 raw-2026-c64"]
#                          CLIENT-ERA-cN, CLIENT raw or reqwest (e.g. reqwest-2025-c64: mcpload's reqwest mode)
#   MCPLOAD_THREADS [1]    load generator worker threads
#   OURS_HTTP_ARGS [""]    extra options for our testbed over HTTP
#   BUILD [1]              0 to use the binaries already in target/bench-tools and target/release
#   RUN_TIMEOUT [120]      seconds before one mcpload run is killed (recorded as failed)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=benches/lib.sh
source "$ROOT/benches/lib.sh"
OUT=$ROOT/target/bench-raw
LOGDIR=$OUT/logs
RAW=$OUT/raw.jsonl

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
HTTP_WARMUP=${HTTP_WARMUP:-1}
SERVERS=${SERVERS:-"ours rmcp turbomcp4 floor"}
FIGURES=${FIGURES:-"raw-2025-c4 raw-2025-c64 raw-2026-c4 raw-2026-c64"}
MCPLOAD_THREADS=${MCPLOAD_THREADS:-1}
OURS_HTTP_ARGS=${OURS_HTTP_ARGS:-}
BUILD=${BUILD:-1}
RUN_TIMEOUT=${RUN_TIMEOUT:-120}

mkdir -p "$OUT" "$LOGDIR"
: >"$RAW"
{
    echo "## Machine"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "- nproc: $(nproc)"
    echo "- CPU: $(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
    echo "- kernel: $(uname -srm)"
    echo "- rustc: $(rustc --version)"
    echo "- load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "- settings: ROUNDS=$ROUNDS DURATION=${DURATION}s HTTP_WARMUP=${HTTP_WARMUP}s MCPLOAD_THREADS=$MCPLOAD_THREADS" \
        "FIGURES=\"$FIGURES\""
    echo
} | tee "$OUT/machine.md"

if [[ $BUILD == 1 ]]; then
    build_tools
fi

server_cmd() { # server port -> SERVER_CMD array
    case $1 in
    ours) # shellcheck disable=SC2206
        SERVER_CMD=("$OURS" --http "$2" $OURS_HTTP_ARGS) ;;
    rmcp) SERVER_CMD=("$RMCP" http "$2") ;;
    turbomcp4) SERVER_CMD=("$TURBO" http "$2") ;;
    floor) SERVER_CMD=("$FLOOR_BIN" http "$2") ;;
    *) say "unknown server $1"; exit 1 ;;
    esac
}

run() { # server figure round
    local server=$1 fig=$2 round=$3 client era conc label log port line rc=0 args
    IFS=- read -r client era conc <<<"$fig"
    conc=${conc#c}
    label="$server|$fig|$round"
    log=$LOGDIR/$server-$fig-r$round.log
    port=$(free_port)
    server_cmd "$server" "$port"
    if start_http_server "$port" "$log" "${SERVER_CMD[@]}"; then
        args=(http --label "$label" --era "$era" --url "http://127.0.0.1:$port/mcp" -c "$conc" -d "$DURATION"
            --warmup-secs "$HTTP_WARMUP" --threads "$MCPLOAD_THREADS" --phases load --server-pid "$SERVER_PID")
        [[ $client == raw ]] && args+=(--raw)
        line=$(timeout --kill-after=5 "$RUN_TIMEOUT" "$MCPLOAD" "${args[@]}" 2>>"$LOGDIR/mcpload.stderr" | tail -n 1) ||
            rc=$?
        [[ -n $line ]] || line=$(python3 -c 'import json,sys; print(json.dumps({"label": sys.argv[1], "error": sys.argv[2]}))' \
            "$label" "mcpload produced no output (exit $rc)")
    else
        line=$(python3 -c 'import json,sys; print(json.dumps({"label": sys.argv[1], "error": sys.argv[2]}))' \
            "$label" "server did not listen on port $port (see $log)")
    fi
    stop_http_server "$SERVER_PID"
    printf '%s\n' "$line" >>"$RAW"
    printf '%s\n' "$line" | python3 -c '
import json, sys
v = json.loads(sys.stdin.readline())
if "error" in v:
    print("  %-28s FAILED: %s" % (v.get("label"), v["error"][:160]), file=sys.stderr)
else:
    l = v["load"]
    print("  %-28s %8.0f calls/s  p50 %7.1f us  server %5.1f us/call  mcpload %5.1f us/call  errors %d"
          % (v["label"], l["calls_per_s"], l["lat_us"].get("p50", 0), l.get("server_cpu_us_per_call") or 0,
             l.get("client_cpu_us_per_call") or 0, l["errors"]), file=sys.stderr)
'
}

: >"$LOGDIR/mcpload.stderr"
t_start=$SECONDS
for round in $(seq 1 "$ROUNDS"); do
    say "round $round/$ROUNDS"
    for fig in $FIGURES; do
        for server in $SERVERS; do
            run "$server" "$fig" "$round"
        done
    done
done
say "runs took $((SECONDS - t_start)) s"

python3 - "$RAW" "$ROUNDS" "$FIGURES" "$SERVERS" >"$OUT/results.md" <<'PY'
import json, statistics, sys
from collections import defaultdict

raw, rounds, figures, servers = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4].split()
names = {"ours": "ours", "rmcp": "rmcp 3.11", "turbomcp4": "turbomcp 4", "floor": "floor (no SDK)"}
peers = [s for s in servers if s not in ("ours", "floor")]
runs = defaultdict(list)
failures = []
for line in open(raw):
    if not line.strip():
        continue
    v = json.loads(line)
    server, fig, rnd = (v.get("label", "") + "||").split("|")[:3]
    if "error" in v:
        failures.append(f"- {names.get(server, server)}, {fig}, round {rnd}: {v['error'][:300]}")
    else:
        # The server's peak RSS (read after the load) rides along with the load's figures.
        runs[(server, fig)].append(dict(v["load"], rss_mib=((v.get("server_mem") or {}).get("vmhwm_kb") or 0) / 1024 or None))

def med(key, server, fig, sub=None):
    xs = [(l.get(key) or {}).get(sub) if sub else l.get(key) for l in runs.get((server, fig), [])]
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None

def fmt(x, nd=0):
    return "n/a" if x is None else f"{x:,.{nd}f}"

def ratio(a, b):
    return f"{a / b:.2f}×" if a and b else "n/a"

def title(fig):
    client, era, conc = fig.split("-")
    return f"HTTP {era} -c {conc[1:]} ({client})"

out = [f"## HTTP load, one sitting (median of {rounds} round(s); calls/s, higher is better)", ""]
hdr = ["Figure"] + [names.get(s, s) for s in servers]
if "ours" in servers and peers:
    hdr.append("ours / best peer")
if "ours" in servers and "floor" in servers:
    hdr.append("ours / floor")
out.append("| " + " | ".join(hdr) + " |")
out.append("|" + "|".join(["---"] + ["---:"] * (len(hdr) - 1)) + "|")
for fig in figures:
    cps = {s: med("calls_per_s", s, fig) for s in servers}
    row = [title(fig)] + [fmt(cps[s]) for s in servers]
    if "ours" in servers and peers:
        best = max([cps[p] for p in peers if cps[p]], default=None)
        row.append(ratio(cps["ours"], best))
    if "ours" in servers and "floor" in servers:
        row.append(ratio(cps["ours"], cps["floor"]))
    out.append("| " + " | ".join(row) + " |")
out += ["", "## Details (medians; CPU time per measured call from /proc over the measured window; peak RSS = "
        "the server's VmHWM after the load)", ""]
out.append("| Figure | Server | calls/s | p50 µs | p99 µs | server CPU µs/call | mcpload CPU µs/call | peak RSS MiB "
           "| errors |")
out.append("|---|---|---:|---:|---:|---:|---:|---:|---:|")
for fig in figures:
    for s in servers:
        errors = sum(l.get("errors", 0) for l in runs.get((s, fig), []))
        out.append(f"| {title(fig)} | {names.get(s, s)} | {fmt(med('calls_per_s', s, fig))} "
                   f"| {fmt(med('lat_us', s, fig, 'p50'), 1)} | {fmt(med('lat_us', s, fig, 'p99'), 1)} "
                   f"| {fmt(med('server_cpu_us_per_call', s, fig), 1)} "
                   f"| {fmt(med('client_cpu_us_per_call', s, fig), 1)} | {fmt(med('rss_mib', s, fig), 1)} | {errors} |")
out.append("")
if failures:
    out += ["Failed runs (n/a above):", ""] + failures + [""]
print("\n".join(out))
PY
cat "$OUT/machine.md" "$OUT/results.md" >"$OUT/table.md"
cat "$OUT/results.md"
say "raw JSON lines: $RAW; tables: $OUT/table.md; server logs: $LOGDIR"
