# Shared by benches/compare.sh and benches/raw-sitting.sh (sourced, not run): where the tools are, how they are
# built, and the servers a script starts (each on its own loopback port, stopped on any exit).
#
# The sourcing script sets ROOT (the repository) first.

TOOLS=$ROOT/target/bench-tools
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
MCPLOAD=$TOOLS/release/mcpload
RMCP=$TOOLS/release/rmcp-peer
TURBO=$TOOLS/release/turbomcp4-peer
FLOOR_BIN=$TOOLS/release/floor
OURS=$TARGET_DIR/release/testbed

say() { printf '%s\n' "$*" >&2; }

# Build the load generator and the peers (each its own manifest and lock) into target/bench-tools, and our testbed.
build_tools() {
    local crate b
    say "building mcpload, rmcp-peer, turbomcp4-peer, floor into $TOOLS ..."
    for crate in mcpload peers/rmcp peers/turbomcp4 peers/floor; do
        cargo build --release --locked --manifest-path "$ROOT/benches/$crate/Cargo.toml" --target-dir "$TOOLS"
    done
    say "building testbed ..."
    (cd "$ROOT" && cargo build --release --locked --bin testbed)
    for b in "$MCPLOAD" "$RMCP" "$TURBO" "$FLOOR_BIN" "$OURS"; do
        [[ -x $b ]] || { say "missing binary after build: $b"; exit 1; }
    done
}

# ---- servers we started: killed on any exit ----
SERVER_PIDS=()
stop_pid() {
    local pid=$1 i
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for i in $(seq 1 40); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.05
        done
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
}
cleanup() {
    local pid
    for pid in "${SERVER_PIDS[@]}"; do
        stop_pid "$pid"
    done
    SERVER_PIDS=()
}
trap cleanup EXIT
trap 'say "interrupted"; exit 130' INT TERM

declare -A USED_PORTS=()
free_port() {
    local p
    while :; do
        p=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        [[ -z ${USED_PORTS[$p]:-} ]] && break
    done
    USED_PORTS[$p]=1
    echo "$p"
}

# Start "$@" with its stdout and stderr in LOG, and wait (10 s at most) until 127.0.0.1:PORT accepts a
# connection. Sets SERVER_PID; returns 1 if the server died or never listened.
start_http_server() { # port log cmd...
    local port=$1 log=$2 i
    shift 2
    "$@" >"$log" 2>&1 &
    SERVER_PID=$!
    SERVER_PIDS+=("$SERVER_PID")
    for i in $(seq 1 200); do
        kill -0 "$SERVER_PID" 2>/dev/null || return 1
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            return 0
        fi
        sleep 0.05
    done
    return 1
}

# Stop a server start_http_server started.
stop_http_server() { # pid
    local pid=$1 keep=() q
    stop_pid "$pid"
    for q in "${SERVER_PIDS[@]}"; do
        [[ $q == "$pid" ]] || keep+=("$q")
    done
    SERVER_PIDS=("${keep[@]}")
}
