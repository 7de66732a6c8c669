#!/usr/bin/env bash
# deploy/local.sh N PORT [SERVE OPTIONS...]
#
# Runs code mode past one process on this machine: N `code-mode mcp serve --http`
# servers on 127.0.0.1:PORT+1 ... 127.0.0.1:PORT+N and HAProxy (deploy/haproxy.cfg) on
# 127.0.0.1:PORT, in the foreground. Point MCP clients at http://127.0.0.1:PORT/mcp.
# SERVE OPTIONS go to every server (e.g. --tools pkg.module:tools --drain-deadline 30).
#
# The store the servers share (docs/deploy.md): unless SERVE OPTIONS name one
# (--store URL), a redis-server is started on 127.0.0.1:PORT+N+1 (no persistence, a
# fresh random password, stopped with the rest) and every server gets
# `--store redis://:<password>@127.0.0.1:PORT+N+1`, so that stateless clients (the
# SDKs' default) are served by any server. Without redis-server the servers keep
# their state in memory, each its own: stateless clients then need one server.
#
# Stopping: Ctrl-C (SIGINT) stops everything at once. SIGTERM stops gracefully: the
# servers drain (no new sessions; running programs finish, up to their drain deadline)
# while the balancer still routes to them, then the balancer stops.
#
# One line on stdout per process started, then `local.sh: ready` once every server
# answers its readiness check and the balancer forwards; one line per process that
# ends, with its exit status. A server that ends before it is ready stops everything
# at once: local.sh prints the last lines it wrote and exits 1 (a bad option, a store
# that cannot be reached...), rather than waiting out the readiness deadline. A server
# that ends later is not restarted (the others carry on, as they would in production
# until the supervisor restarts it).
#
# Needs: haproxy; a Python with code-mode[mcp] installed (code-mode[mcp,redis] when
# the servers share a Redis store, the default when redis-server is installed), checked
# before anything starts; redis-server for the shared store (optional).
#
# Environment: CODE_MODE_PYTHON (the Python that has code-mode installed; default
# python3), HAPROXY (default haproxy), REDIS_SERVER (default redis-server).
set -euo pipefail

usage() {
    echo "usage: deploy/local.sh N PORT [code-mode mcp serve options...]" >&2
    exit 2
}
[[ $# -ge 2 && $1 =~ ^[1-9][0-9]*$ && $2 =~ ^[1-9][0-9]*$ ]] || usage
count=$1
port=$2
shift 2
(( port + count + 1 <= 65535 )) || { echo "local.sh: PORT+N+1 must be at most 65535" >&2; exit 2; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
python=${CODE_MODE_PYTHON:-python3}
haproxy=${HAPROXY:-haproxy}
if ! command -v "$haproxy" >/dev/null; then
    echo "local.sh: haproxy not found: install it with \`apt-get install -y haproxy\`" >&2
    exit 127
fi

# The Python that runs the servers must have what they import: say what to install
# now, rather than have every server exit at start-up.
redis=${REDIS_SERVER:-redis-server}
names_store=""
[[ " $* " == *" --store "* || " $* " == *" --store="* ]] && names_store=1
wants_redis=""
if [[ -n $names_store ]]; then
    [[ " $* " =~ \ --store[=\ ]rediss?:// ]] && wants_redis=1
elif command -v "$redis" >/dev/null; then
    wants_redis=1
fi
extra=mcp
modules="import code_mode, mcp, hypercorn"
if [[ -n $wants_redis ]]; then
    extra=mcp,redis
    modules+=", coredis"
fi
if ! "$python" -c "$modules" 2>/dev/null; then
    echo "local.sh: $python cannot run the servers: it needs code-mode[$extra]; install it with" \
        "\`$python -m pip install 'code-mode[$extra]'\` (from a checkout: \`$python -m pip" \
        "install -e '.[$extra]'\`), or set CODE_MODE_PYTHON to a Python that has it" >&2
    exit 2
fi

run=$(mktemp -d "${TMPDIR:-/tmp}/code-mode-local.XXXXXX")
declare -A names=()  # pid -> what it is
server_pids=()
haproxy_pid=""
store_pid=""
waiter=""
stopping=""

stop() {  # $1: INT (at once) or TERM (drain first)
    if [[ -n $stopping ]]; then
        # Only Ctrl-C during a drain changes anything: everything stops at once.
        [[ $1 == INT && $stopping == TERM ]] || return 0
        echo "local.sh: stopping at once (SIGINT)"
    else
        echo "local.sh: stopping (SIG$1)"
    fi
    stopping=$1
    [[ -z $waiter ]] || kill "$waiter" 2>/dev/null || true
    local pid
    for pid in "${server_pids[@]}"; do
        kill "-$1" "$pid" 2>/dev/null || true
    done
    # On SIGINT the balancer stops at once; on SIGTERM it stops once the servers
    # have drained (below), so that clients can still reach their sessions.
    if [[ $1 == INT && -n $haproxy_pid ]]; then
        kill -INT "$haproxy_pid" 2>/dev/null || true
    fi
}
trap 'stop INT' INT
trap 'stop TERM' TERM
cleanup() {
    local pid
    for pid in "${!names[@]}"; do
        kill -KILL "$pid" 2>/dev/null || true
    done
    rm -rf "$run"
}
trap cleanup EXIT

# The store: Redis, unless the options name a store.
store=()
if [[ -z $names_store ]]; then
    if command -v "$redis" >/dev/null; then
        redis_port=$((port + count + 1))
        password=$("$python" -c 'import secrets; print(secrets.token_urlsafe(18))')
        printf 'port %s\nbind 127.0.0.1\nrequirepass %s\nsave ""\nappendonly no\ndir %s\n' \
            "$redis_port" "$password" "$run" >"$run/redis.conf"
        "$redis" "$run/redis.conf" >"$run/redis.log" 2>&1 &
        names[$!]="store"
        store_pid=$!
        echo "local.sh: store pid $! at redis://127.0.0.1:$redis_port"
        store=(--store "redis://:$password@127.0.0.1:$redis_port")
        for _ in $(seq 100); do  # until it answers (the servers check it at start-up)
            (exec 3<>"/dev/tcp/127.0.0.1/$redis_port") 2>/dev/null && break
            sleep 0.1
        done
    else
        echo "local.sh: $redis not found: each server keeps its state in memory (install redis-server to share it)"
    fi
fi

# The servers, each writing to the terminal and to its log (for the lines printed when
# it ends before it is ready).
for ((i = 1; i <= count; i++)); do
    address=127.0.0.1:$((port + i))
    "$python" -m code_mode mcp serve --http "$address" "${store[@]}" "$@" \
        > >(tee -a "$run/server$i.log") 2>&1 &
    names[$!]="server $i"
    server_pids+=("$!")
    echo "local.sh: server $i pid $! at http://$address/mcp"
done

failed=""
# A server that has ended before it was ready: report it with its last lines, and stop.
check_servers() {
    local i pid code
    for i in "${!server_pids[@]}"; do
        pid=${server_pids[$i]}
        [[ -n ${names[$pid]+x} ]] || continue
        kill -0 "$pid" 2>/dev/null && continue
        code=0
        wait "$pid" || code=$?
        unset "names[$pid]"
        echo "local.sh: server $((i + 1)) pid $pid exited with status $code before it was ready; its last lines:"
        tail -n 20 "$run/server$((i + 1)).log" 2>/dev/null | sed 's/^/local.sh: | /'
        failed=1
    done
    if [[ -n $failed && -z $stopping ]]; then
        stop INT
    fi
}
check_servers  # one that could not even start (a bad option) has ended by now, often

# Ready: a Python one-liner polls `/readyz` (through the balancer once it runs). Run
# it only in the background (`wait_ready ... &`): it execs Python, so that stopping the
# poll ($waiter) stops Python itself, which would otherwise keep our output open.
wait_ready() {  # URL...
    exec "$python" - "$@" <<'PY'
import sys, time, urllib.request

deadline = time.monotonic() + 120
for url in sys.argv[1:]:
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    break
        except OSError:
            pass
        if time.monotonic() > deadline:
            sys.exit(f"local.sh: {url} did not answer 200 within 120 s")
        time.sleep(0.1)
PY
}
urls=()
for ((i = 1; i <= count; i++)); do
    urls+=("http://127.0.0.1:$((port + i))/readyz")
done
wait_ready "${urls[@]}" &
waiter=$!
while [[ -z $stopping ]] && kill -0 "$waiter" 2>/dev/null; do
    check_servers
    sleep 0.2
done
if ! wait "$waiter" && [[ -z $stopping ]]; then
    check_servers  # one that ended at the last moment
    failed=1
    [[ -n $stopping ]] || stop INT
fi

# The balancer (once the servers answer, so that none starts out marked down): the
# shared configuration with one server line per process.
if [[ -z $stopping ]]; then
    {
        cat "$here/haproxy.cfg"
        for ((i = 1; i <= count; i++)); do
            echo "    server s$i 127.0.0.1:$((port + i))"
        done
    } >"$run/haproxy.cfg"
    export CODE_MODE_BALANCER_BIND=127.0.0.1:$port
    export CODE_MODE_BALANCER_STATS=$run/haproxy.sock
    "$haproxy" -db -f "$run/haproxy.cfg" &
    haproxy_pid=$!
    names[$haproxy_pid]="balancer"
    echo "local.sh: balancer pid $haproxy_pid at http://127.0.0.1:$port/mcp (admin socket $run/haproxy.sock)"
    wait_ready "http://127.0.0.1:$port/readyz" &
    waiter=$!
    if wait "$waiter"; then
        [[ -n $stopping ]] || echo "local.sh: ready"
    elif [[ -z $stopping ]]; then
        failed=1
        stop INT
    fi
fi

# Report each process that ends; stop when the balancer does, or when all servers
# have ended after a stop was asked for.
status=0
[[ -z $failed ]] || status=1
while ((${#names[@]} > 0)); do
    ended=""
    code=0
    wait -n -p ended || code=$?
    if [[ -z ${ended:-} || -z ${names[$ended]+x} ]]; then
        continue  # interrupted by a signal (its trap ran), or a readiness poll ended
    fi
    echo "local.sh: ${names[$ended]} pid $ended exited with status $code"
    unset "names[$ended]"
    if [[ $ended == "$haproxy_pid" ]]; then
        haproxy_pid=""
        [[ -n $stopping ]] || status=1
        stop "${stopping:-TERM}"
    fi
    remaining=0
    for pid in "${server_pids[@]}"; do
        [[ -n ${names[$pid]+x} ]] && remaining=$((remaining + 1))
    done
    if [[ -n $haproxy_pid ]]; then
        if ((remaining == 0)) && [[ -n $stopping ]]; then
            kill -USR1 "$haproxy_pid" 2>/dev/null || true  # HAProxy's graceful stop
        fi
    elif ((remaining == 0)) && [[ -n $store_pid && -n ${names[$store_pid]+x} ]]; then
        kill -TERM "$store_pid" 2>/dev/null || true  # last: the servers may write to it
    fi
    if [[ $ended == "$store_pid" && -z $stopping ]]; then
        status=1
        stop TERM  # the store died: the servers cannot serve stateless clients
    fi
done
exit "$status"
