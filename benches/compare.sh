#!/usr/bin/env bash
# Side-by-side benchmark: our testbed against the peer servers in benches/peers (rmcp 3.11 `rmcp-peer`, turbomcp 4
# `turbomcp4-peer`, and the SDK-less `floor` as a reference), in one sitting, with the same load generator
# (benches/mcpload); and, for resources/read of 1 MiB of binary, against benches/peers/rmcp-blob (rmcp 3.11) with
# our own driver, benches/blob.rs. Everything it runs is built from this repository.
#
#   benches/compare.sh                                  # full run (3 rounds)
#   CALLS=500 DURATION=1 ROUNDS=1 benches/compare.sh    # quick check, a couple of minutes
#
# What it does
#   1. Prints the machine description, then builds benches/mcpload, benches/peers/rmcp, benches/peers/turbomcp4
#      and benches/peers/floor into target/bench-tools (`--locked --release`, each its own lock) and our testbed (`cargo build --release --locked --bin testbed`); with blob-2025
#      selected, also benches/peers/rmcp-blob into target/bench-tools and our blob driver
#      (`cargo build --release --locked --bench blob`, its executable found from cargo's JSON messages).
#   2. For each round, for each figure, runs ours, rmcp, turbomcp4 one after the other (so the servers alternate:
#      ours, rmcp, turbo, ours, rmcp, turbo, ...). Figures:
#        stdio 2025 / stdio 2026   phases seq,pipeline,cancel, pipeline depth K=$PIPELINE, cancellation probe with the
#                                  SLEEP_DONE / SLEEP_ABORTED stderr markers;
#        http 2025 / http 2026     -c 4 and -c 64, phases load,cancel, `mcpload http --raw` (one hand-written
#                                  keep-alive HTTP/1.1 connection per session, so that the load generator's own
#                                  cost per call stays below every server's; HTTP_CLIENT=reqwest for reqwest),
#                                  --server-pid for CPU time and memory, the server's stderr in a log file that
#                                  mcpload watches for the same markers;
#        large 2025                1 MiB echo calls (text in and out), sequential and pipelined K=4;
#        blob 2025                 sequential resources/read of test://blob/1mib (1 MiB of binary, base64 on the
#                                  wire) by benches/blob.rs: MiB/s, p50/p99, the server's peak RSS and CPU time.
#                                  Ours against rmcp-blob only: turbomcp has no such peer and shows n/a.
#      Every HTTP run gets a fresh server on its own free port. A run that fails (e.g. a peer that does not serve
#      2026-07-28: mcpload stops at server/discover) is recorded and shown as n/a; the script goes on.
#   3. Also two references, not peers (no ratio "ours / best peer" counts them): the floor
#      (benches/peers/floor: hyper 1 and a typed serde_json parse, fixed answers, no MCP SDK, no sleep tool, so
#      phases seq,pipeline on stdio and load on HTTP) on the stdio and HTTP figures, and a "bare pipe (python)"
#      on the stdio figures (seq and pipeline only): a ~20-line python process that answers every JSON-RPC
#      request line with one canned result, i.e. the harness and pipe floor without any MCP server (a python
#      one: json.loads per line, so it is not a hard upper bound).
#   4. Prints Markdown tables (medians over rounds; ratios on calls/s) and writes them to
#      target/bench-compare/table.md; every mcpload (or blob driver) JSON line goes to
#      target/bench-compare/raw.jsonl (its `label` is "server|figure|round"); server logs go to
#      target/bench-compare/logs/.
#
# Environment (defaults in brackets)
#   ROUNDS [3]            rounds of alternating runs; medians are taken over them
#   CALLS [5000]          stdio: measured sequential calls, and measured pipelined calls
#   WARMUP [500]          stdio: unmeasured warm-up calls
#   PIPELINE [32]         stdio: pipeline depth K
#   DURATION [5]          HTTP: measured seconds per run
#   HTTP_WARMUP [1]       HTTP: unmeasured warm-up seconds per run
#   CONCURRENCY ["4 64"]  HTTP: session counts (-c)
#   CANCEL_SLEEP_MS [3000], CANCEL_DELAY_MS [100], CANCEL_GRACE_MS [1000]
#                         cancellation probe: sleep(ms) asked for, cancel after, keep listening after the sleep
#                         would have ended (mcpload's own default sleep is 10 s; 3 s keeps a round short and still
#                         shows a handler that runs to the end)
#   MCPLOAD_THREADS [1]   HTTP: load generator worker threads
#   OURS_HTTP_ARGS [""]   extra options for our testbed over HTTP (e.g. "--json-response")
#   SERVERS ["ours rmcp turbomcp4"], FIGURES ["stdio-2025 stdio-2026 http-2025 http-2026 large-2025 blob-2025"]
#                         subsets
#   LARGE_CALLS [100]     large-2025: 1 MiB echo calls per phase (1 MiB of text in, the same out)
#   BLOB_CALLS [50], BLOB_WARMUP [5]
#                         blob-2025: measured and unmeasured resources/read calls of 1 MiB each
#   BARE_PIPE [1]         0 to skip the bare pipe reference
#   FLOOR [1]             0 to skip the floor reference
#   HTTP_CLIENT [raw]     raw (mcpload http --raw) or reqwest, for the HTTP load phase
#   RUN_TIMEOUT [300]     seconds before one mcpload run is killed (recorded as failed)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=benches/lib.sh
source "$ROOT/benches/lib.sh"
OUT=$ROOT/target/bench-compare
LOGDIR=$OUT/logs
RAW=$OUT/raw.jsonl

ROUNDS=${ROUNDS:-3}
CALLS=${CALLS:-5000}
WARMUP=${WARMUP:-500}
PIPELINE=${PIPELINE:-32}
DURATION=${DURATION:-5}
HTTP_WARMUP=${HTTP_WARMUP:-1}
CONCURRENCY=${CONCURRENCY:-"4 64"}
CANCEL_SLEEP_MS=${CANCEL_SLEEP_MS:-3000}
CANCEL_DELAY_MS=${CANCEL_DELAY_MS:-100}
CANCEL_GRACE_MS=${CANCEL_GRACE_MS:-1000}
MCPLOAD_THREADS=${MCPLOAD_THREADS:-1}
OURS_HTTP_ARGS=${OURS_HTTP_ARGS:-}
SERVERS=${SERVERS:-"ours rmcp turbomcp4"}
FIGURES=${FIGURES:-"stdio-2025 stdio-2026 http-2025 http-2026 large-2025 blob-2025"}
LARGE_CALLS=${LARGE_CALLS:-100}
BLOB_CALLS=${BLOB_CALLS:-50}
BLOB_WARMUP=${BLOB_WARMUP:-5}
BARE_PIPE=${BARE_PIPE:-1}
FLOOR=${FLOOR:-1}
HTTP_CLIENT=${HTTP_CLIENT:-raw}
RUN_TIMEOUT=${RUN_TIMEOUT:-300}

RMCP_BLOB=$TOOLS/release/rmcp-blob
BLOB_BENCH= # our blob driver, found after its build

# ---- 1. machine, builds ----
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
    echo "- settings: ROUNDS=$ROUNDS CALLS=$CALLS WARMUP=$WARMUP PIPELINE=$PIPELINE DURATION=${DURATION}s" \
        "HTTP_WARMUP=${HTTP_WARMUP}s CONCURRENCY=\"$CONCURRENCY\" cancel probe: sleep ${CANCEL_SLEEP_MS} ms," \
        "cancel after ${CANCEL_DELAY_MS} ms, grace ${CANCEL_GRACE_MS} ms" \
        "BLOB_CALLS=$BLOB_CALLS BLOB_WARMUP=$BLOB_WARMUP HTTP_CLIENT=$HTTP_CLIENT MCPLOAD_THREADS=$MCPLOAD_THREADS"
    echo
} | tee "$OUT/machine.md"

build_tools
NEEDED=()
if [[ " $FIGURES " == *" blob-"* ]]; then
    for fig in $FIGURES; do
        [[ $fig != blob-* || $fig == blob-2025 ]] || { say "unknown figure $fig (blob: 2025 only)"; exit 1; }
    done
    say "building rmcp-blob into $TOOLS, and the blob driver ..."
    cargo build --release --locked --manifest-path "$ROOT/benches/peers/rmcp-blob/Cargo.toml" --target-dir "$TOOLS"
    # The bench executable has a hash in its name: take it from cargo's artifact messages.
    BLOB_BENCH=$( (cd "$ROOT" && cargo build --release --locked --bench blob --message-format=json-render-diagnostics) |
        python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "blob" and m.get("executable"):
        print(m["executable"])
' | tail -n 1)
    NEEDED+=("$RMCP_BLOB" "$BLOB_BENCH")
fi
for b in "${NEEDED[@]}"; do
    [[ -n $b && -x $b ]] || { say "missing binary after build: ${b:-blob driver (none from cargo)}"; exit 1; }
done

# The bare pipe reference: one canned answer (good for initialize, server/discover, tools/list and an echo of
# "hello", which is mcpload's default text) for every request line; notifications get nothing.
BARE=$OUT/bare_pipe.py
cat >"$BARE" <<'PY'
import json, os
R = (b'{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"hello"}],"isError":false,'
     b'"resultType":"complete","supportedVersions":["2025-11-25","2026-07-28"],"protocolVersion":"2025-11-25",'
     b'"capabilities":{"tools":{}},"serverInfo":{"name":"bare-pipe","version":"0"}}}\n')
buf = b""
while True:
    chunk = os.read(0, 1 << 16)
    if not chunk:
        break
    *lines, buf = (buf + chunk).split(b"\n")
    out = []
    for line in lines:
        if line.strip():
            m = json.loads(line)
            if "id" in m and "method" in m:
                out.append(R % json.dumps(m["id"]).encode())
    data = b"".join(out)
    while data:
        data = data[os.write(1, data):]
PY

server_cmd() { # server mode [port] -> SERVER_CMD array
    local server=$1 mode=$2 port=${3:-}
    case $server/$mode in
    ours/stdio) SERVER_CMD=("$OURS") ;;
    ours/http) # shellcheck disable=SC2206
        SERVER_CMD=("$OURS" --http "$port" $OURS_HTTP_ARGS) ;;
    rmcp/stdio) SERVER_CMD=("$RMCP" stdio) ;;
    rmcp/http) SERVER_CMD=("$RMCP" http "$port") ;;
    turbomcp4/stdio) SERVER_CMD=("$TURBO" stdio) ;;
    turbomcp4/http) SERVER_CMD=("$TURBO" http "$port") ;;
    bare/stdio) SERVER_CMD=(python3 "$BARE") ;;
    floor/stdio) SERVER_CMD=("$FLOOR_BIN" stdio) ;;
    floor/http) SERVER_CMD=("$FLOOR_BIN" http "$port") ;;
    ours/blob) SERVER_CMD=("$OURS") ;;
    rmcp/blob) SERVER_CMD=("$RMCP_BLOB" stdio) ;;
    *) say "unknown server/mode $server/$mode"; exit 1 ;;
    esac
}

# Record one JSON line (mcpload's or the blob driver's, or a synthetic error line) in raw.jsonl and print a
# progress line.
record() { # label line rc [tool]
    local label=$1 line=$2 rc=$3 tool=${4:-mcpload}
    if [[ -z $line ]]; then
        line=$(python3 -c 'import json,sys; print(json.dumps({"label": sys.argv[1], "error": sys.argv[2]}))' \
            "$label" "$tool produced no output (exit $rc$([[ $rc == 124 || $rc == 137 ]] && echo ", killed after ${RUN_TIMEOUT}s"))")
    fi
    printf '%s\n' "$line" >>"$RAW"
    printf '%s\n' "$line" | python3 -c '
import json, sys
v = json.loads(sys.stdin.readline())
if "error" in v:
    print("  %-34s FAILED: %s" % (v.get("label"), v["error"][:160]), file=sys.stderr)
else:
    parts = []
    for ph in ("seq", "pipeline", "load"):
        if ph in v:
            parts.append("%s %.0f/s p50 %sus" % (ph, v[ph]["calls_per_s"], v[ph]["lat_us"].get("p50")))
    if "mib_per_s" in v:
        parts.append("read %.0f MiB/s p50 %.2f ms peak RSS %s kB"
                     % (v["mib_per_s"], v["p50_ms"], v.get("server_vmhwm_kb")))
    h = (v.get("cancel") or {}).get("handler") or {}
    if "cancel" in v:
        parts.append("cancel: completed=%s aborted=%s" % (h.get("completed"), h.get("aborted")))
    print("  %-34s %s" % (v.get("label"), "; ".join(parts)), file=sys.stderr)
'
}

run_stdio() { # server era round
    local server=$1 era=$2 round=$3 label line rc=0 log
    label="$server|stdio-$era|$round"
    log=$LOGDIR/$server-stdio-$era-r$round.log
    server_cmd "$server" stdio
    local args=(stdio --label "$label" --era "$era" --calls "$CALLS" --warmup "$WARMUP" --pipeline "$PIPELINE")
    if [[ $server == bare || $server == floor ]]; then # references without a sleep tool
        args+=(--phases seq,pipeline)
    else
        args+=(--phases seq,pipeline,cancel --cancel-sleep-ms "$CANCEL_SLEEP_MS" --cancel-delay-ms "$CANCEL_DELAY_MS"
            --cancel-grace-ms "$CANCEL_GRACE_MS" --stderr-marker SLEEP_DONE --abort-marker SLEEP_ABORTED)
    fi
    args+=(--server-log "$log" -- "${SERVER_CMD[@]}")
    line=$(timeout --kill-after=5 "$RUN_TIMEOUT" "$MCPLOAD" "${args[@]}" 2>>"$LOGDIR/mcpload.stderr" | tail -n 1) || rc=$?
    record "$label" "$line" "$rc"
}

run_large() { # server era round: 1 MiB of text in, the same 1 MiB out, per call
    local server=$1 era=$2 round=$3 label line rc=0 log
    label="$server|large-$era|$round"
    log=$LOGDIR/$server-large-$era-r$round.log
    server_cmd "$server" stdio
    local args=(stdio --label "$label" --era "$era" --calls "$LARGE_CALLS" --warmup 20 --pipeline 4
        --text-size 1048576 --phases seq,pipeline --server-log "$log" -- "${SERVER_CMD[@]}")
    line=$(timeout --kill-after=5 "$RUN_TIMEOUT" "$MCPLOAD" "${args[@]}" 2>>"$LOGDIR/mcpload.stderr" | tail -n 1) || rc=$?
    record "$label" "$line" "$rc"
}

run_blob() { # server era round: sequential resources/read of 1 MiB of binary, by our own driver
    local server=$1 era=$2 round=$3 label line rc=0 log
    label="$server|blob-$era|$round"
    log=$LOGDIR/$server-blob-$era-r$round.log
    if [[ $server != ours && $server != rmcp ]]; then
        say "  $(printf '%-34s' "$label") skipped: no such peer"
        return
    fi
    server_cmd "$server" blob
    # The driver's own errors and the server's stderr both go to the log.
    line=$(timeout --kill-after=5 "$RUN_TIMEOUT" "$BLOB_BENCH" --label "$label" --calls "$BLOB_CALLS" \
        --warmup "$BLOB_WARMUP" -- "${SERVER_CMD[@]}" 2>"$log" | tail -n 1) || rc=$?
    record "$label" "$line" "$rc" "the blob driver (see $log)"
}

run_http() { # server era concurrency round
    local server=$1 era=$2 conc=$3 round=$4 label line rc=0 log port pid
    label="$server|http-$era-c$conc|$round"
    log=$LOGDIR/$server-http-$era-c$conc-r$round.log
    port=$(free_port)
    server_cmd "$server" http "$port"
    if start_http_server "$port" "$log" "${SERVER_CMD[@]}"; then
        pid=$SERVER_PID
        local args=(http --label "$label" --era "$era" --url "http://127.0.0.1:$port/mcp" -c "$conc" -d "$DURATION"
            --warmup-secs "$HTTP_WARMUP" --threads "$MCPLOAD_THREADS" --server-pid "$pid")
        [[ $HTTP_CLIENT == raw ]] && args+=(--raw)
        if [[ $server == floor ]]; then # no sleep tool
            args+=(--phases load)
        else
            args+=(--phases load,cancel --cancel-sleep-ms "$CANCEL_SLEEP_MS" --cancel-delay-ms "$CANCEL_DELAY_MS"
                --cancel-grace-ms "$CANCEL_GRACE_MS" --server-log "$log"
                --stderr-marker SLEEP_DONE --abort-marker SLEEP_ABORTED)
        fi
        line=$(timeout --kill-after=5 "$RUN_TIMEOUT" "$MCPLOAD" "${args[@]}" 2>>"$LOGDIR/mcpload.stderr" | tail -n 1) || rc=$?
    else
        pid=$SERVER_PID
        line=$(python3 -c 'import json,sys; print(json.dumps({"label": sys.argv[1], "error": sys.argv[2]}))' \
            "$label" "server did not listen on port $port (see $log)")
    fi
    stop_http_server "$pid"
    record "$label" "$line" "$rc"
}

# ---- 2. alternating rounds ----
: >"$LOGDIR/mcpload.stderr"
t_start=$SECONDS
for round in $(seq 1 "$ROUNDS"); do
    say "round $round/$ROUNDS"
    for fig in $FIGURES; do
        transport=${fig%%-*}
        era=${fig#*-}
        if [[ $transport == large ]]; then
            for server in $SERVERS; do run_large "$server" "$era" "$round"; done
        elif [[ $transport == blob ]]; then
            for server in $SERVERS; do run_blob "$server" "$era" "$round"; done
        elif [[ $transport == stdio ]]; then
            for server in $SERVERS; do run_stdio "$server" "$era" "$round"; done
            if [[ $FLOOR == 1 ]]; then run_stdio floor "$era" "$round"; fi
            if [[ $BARE_PIPE == 1 ]]; then run_stdio bare "$era" "$round"; fi
        else
            for conc in $CONCURRENCY; do
                for server in $SERVERS; do run_http "$server" "$era" "$conc" "$round"; done
                if [[ $FLOOR == 1 ]]; then run_http floor "$era" "$conc" "$round"; fi
            done
        fi
    done
done
say "runs took $((SECONDS - t_start)) s"

# ---- 3. tables ----
python3 - "$RAW" "$ROUNDS" "$PIPELINE" "$FIGURES" "$CONCURRENCY" "$SERVERS" >"$OUT/results.md" <<'PY'
import json, statistics, sys
from collections import defaultdict

raw, rounds, k, figures, concs, servers = sys.argv[1:7]
servers = servers.split()
peers = [s for s in servers if s != "ours"]
names = {"ours": "ours", "rmcp": "rmcp 3.11", "turbomcp4": "turbomcp 4", "floor": "floor (no SDK)",
         "bare": "bare pipe (python)"}
blob_servers = {"ours", "rmcp"}  # the servers with a blob-2025 peer; the others are n/a there

def from_blob(v):
    """The blob driver's flat line in mcpload's shape, phase "read": 1 MiB per call, so MiB/s is calls/s."""
    if "error" in v:
        return v
    return {
        "label": v["label"],
        "read": {"calls": v["calls"], "calls_per_s": v["mib_per_s"],
                 "lat_us": {"p50": v["p50_ms"] * 1e3, "p99": v["p99_ms"] * 1e3},
                 "server_cpu_s": v.get("server_cpu_s"), "errors": 0},
        "server_mem": {"vmhwm_kb": v.get("server_vmhwm_kb")},
    }

runs = defaultdict(list)  # (server, runfig) -> [json]
for line in open(raw):
    line = line.strip()
    if not line:
        continue
    v = json.loads(line)
    server, runfig, rnd = (v.get("label", "") + "||").split("|")[:3]
    runs[(server, runfig)].append(from_blob(v) if runfig.startswith("blob-") else v)

# (row title, run figure, phase)
rows = []
for fig in figures.split():
    transport, era = fig.split("-", 1)
    if transport == "large":
        rows.append((f"stdio {era} 1 MiB echo sequential (MiB/s = 2 × calls/s)", f"large-{era}", "seq"))
        rows.append((f"stdio {era} 1 MiB echo pipelined K=4", f"large-{era}", "pipeline"))
    elif transport == "blob":
        rows.append((f"stdio {era} resources/read 1 MiB binary (MiB/s)", f"blob-{era}", "read"))
    elif transport == "stdio":
        rows.append((f"stdio {era} sequential", f"stdio-{era}", "seq"))
        rows.append((f"stdio {era} pipelined K={k}", f"stdio-{era}", "pipeline"))
    else:
        for c in concs.split():
            rows.append((f"HTTP {era} -c {c}", f"http-{era}-c{c}", "load"))

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None

def fmt(x, nd=0):
    if x is None:
        return "n/a"
    return f"{x:,.{nd}f}"

def cancel_cat(c):
    if not c:
        return None, None
    h = c.get("handler") or {}
    if h.get("completed"):
        s, at = "ran to end", h.get("completed_after_ms")
    elif h.get("aborted"):
        s, at = "stopped", h.get("aborted_after_ms")
    elif h.get("completed") is False:
        s, at = "did not finish (no abort marker)", None
    else:
        s, at = "unknown", None
    r = c.get("cancelled_response")
    if c.get("cancelled_response_received"):
        s += ", error reply" if isinstance(r, dict) and "error" in r else ", result reply"
    else:
        s += ", no reply"
    if not c.get("ping_ok_after_probe", True):
        s += ", server unresponsive after"
    return s, at

def cancel_text(vs):
    cats = [cancel_cat(v.get("cancel")) for v in vs if "cancel" in v]
    cats = [c for c in cats if c[0]]
    if not cats:
        return "—"
    kinds = sorted({c[0] for c in cats})
    if len(kinds) == 1:
        at = med([c[1] for c in cats])
        if at is None:
            return kinds[0]
        head, _, tail = kinds[0].partition(",")
        return f"{head} @ {at:.0f} ms,{tail}"
    return "; ".join(f"{kd} ×{sum(1 for c in cats if c[0] == kd)}" for kd in kinds)

def cell(server, runfig, phase):
    vs = runs.get((server, runfig), [])
    ok = [v for v in vs if "error" not in v and phase in v]
    failed = [v for v in vs if "error" in v]
    if not ok:
        return None
    ph = [v[phase] for v in ok]
    return {
        "cps": med([p.get("calls_per_s") for p in ph]),
        "p50": med([p.get("lat_us", {}).get("p50") for p in ph]),
        "p99": med([p.get("lat_us", {}).get("p99") for p in ph]),
        "rss": med([((v.get("server_mem") or {}).get("vmhwm_kb") or 0) / 1024 or None for v in ok]),
        "errors": sum(p.get("errors", 0) for p in ph),
        # CPU time per measured call: HTTP (mcpload reads the server's from /proc with --server-pid) and blob.
        "srv_us": med([p["server_cpu_s"] / p["calls"] * 1e6 if p.get("server_cpu_s") and p.get("calls") else None
                       for p in ph]),
        "cli_us": med([p["client_cpu_s"] / p["calls"] * 1e6 if p.get("client_cpu_s") and p.get("calls") else None
                       for p in ph]),
        "cancel": cancel_text(ok),
        "n": len(ok),
        "failed": len(failed),
    }

failures = []
for (server, runfig), vs in sorted(runs.items()):
    for v in vs:
        if "error" in v:
            failures.append(f"- {names.get(server, server)}, {runfig}, round {v.get('label', '||').split('|')[2]}: "
                            + v["error"].replace("\n", " ")[:400])

def ratio(a, b):
    return f"{a / b:.2f}×" if a is not None and b else "n/a"

# The references, not peers: shown beside the peers, never in "ours / best peer".
refs = [r for r in ("floor", "bare") if any(s == r for s, _ in runs)]
out = []
out.append(f"## Side by side (median of {rounds} round(s); calls/s higher is better)")
out.append("")
hdr = ["Figure"] + [f"{names[s]} calls/s" for s in servers] + ["ours / best peer", "ours / rmcp"]
hdr += [f"{names[r]} calls/s" for r in refs]
if "floor" in refs:
    hdr.append("ours / floor")
out.append("| " + " | ".join(hdr) + " |")
out.append("|" + "|".join(["---"] + ["---:"] * (len(hdr) - 1)) + "|")
for title, runfig, phase in rows:
    cells = {s: cell(s, runfig, phase) for s in servers}
    cps = {s: (c["cps"] if c else None) for s, c in cells.items()}
    peer_vals = [cps[p] for p in peers if cps.get(p)]
    best = max(peer_vals) if peer_vals else None
    r = [title] + [fmt(cps[s]) for s in servers]
    r += [ratio(cps.get("ours"), best), ratio(cps.get("ours"), cps.get("rmcp"))]
    ref_cps = {}
    for ref in refs:
        c = cell(ref, runfig, phase) if (ref, runfig) in runs else None
        ref_cps[ref] = c["cps"] if c else None
        r.append(fmt(c["cps"]) if c else "—")
    if "floor" in refs:
        r.append(ratio(cps.get("ours"), ref_cps["floor"]) if ref_cps["floor"] else "—")
    out.append("| " + " | ".join(r) + " |")
out.append("")
out.append("## Details (medians; peak RSS = server VmHWM at the end of the run; cancellation: sleep "
           "handler cancelled after the probe's delay — stopped = abort marker seen, ran to end = done marker seen)")
out.append("")
out.append("| Figure | Server | calls/s | p50 µs | p99 µs | server CPU µs/call | mcpload CPU µs/call | peak RSS MiB "
           "| errors | cancellation |")
out.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
for title, runfig, phase in rows:
    for s in servers + [r for r in refs if (r, runfig) in runs]:
        c = cell(s, runfig, phase)
        if c is None:
            why = "no such peer" if runfig.startswith("blob-") and s not in blob_servers else "failed, see below"
            out.append(f"| {title} | {names.get(s, s)} | n/a | n/a | n/a | n/a | n/a | n/a | n/a "
                       f"| n/a ({why}) |")
            continue
        note = f" ({c['failed']} failed)" if c["failed"] else ""
        out.append(f"| {title} | {names.get(s, s)} | {fmt(c['cps'])}{note} | {fmt(c['p50'], 1)} | {fmt(c['p99'], 1)} "
                   f"| {fmt(c['srv_us'], 1) if c['srv_us'] else '—'} | {fmt(c['cli_us'], 1) if c['cli_us'] else '—'} "
                   f"| {fmt(c['rss'], 1)} | {c['errors']} | {c['cancel']} |")
out.append("")
if failures:
    out.append("Failed runs (shown as n/a):")
    out.append("")
    out.extend(failures)
    out.append("")
print("\n".join(out))
PY
cat "$OUT/machine.md" "$OUT/results.md" >"$OUT/table.md"
cat "$OUT/results.md"
say "raw JSON lines: $RAW; tables: $OUT/table.md; server logs: $LOGDIR"
