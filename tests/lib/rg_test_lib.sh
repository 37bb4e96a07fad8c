# rg_test_lib.sh: what the shell tests share, sourced after they set B
# (the build folder): TAP lines ("ok N - what"), a closing line, and real
# servers for the test on loopback: the mock model on a free port and a
# redis-server on a unix socket in the test's own folder. Everything the
# test started is stopped when it exits.

R=$B/reagent

n=0
failed=0
pids=

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rg-test-XXXXXX") || exit 1

rg_cleanup() {
    for p in $pids; do
        kill -9 "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
    # RG_KEEP=1: the run's folder stays, for its logs
    [ -n "$RG_KEEP" ] && [ "$failed" -gt 0 ] && echo "# kept: $tmp" && return
    rm -rf "$tmp"
}

trap rg_cleanup EXIT
trap 'exit 1' INT TERM HUP

rg_ok() {
    n=$((n + 1))
    echo "ok $n - $1"
}

rg_fail() {
    n=$((n + 1))
    failed=$((failed + 1))
    echo "not ok $n - $1"
}

# rg_check WHAT CONDITION...: ok when the command succeeds
rg_check() {
    what=$1
    shift
    if "$@"; then
        rg_ok "$what"
    else
        rg_fail "$what"
    fi
}

# rg_expect WHAT FILE PATTERN: FILE has a line matching PATTERN (grep -E)
rg_expect() {
    if grep -Eq "$3" "$2"; then
        rg_ok "$1"
    else
        rg_fail "$1"
        sed 's/^/#   /' "$2" | head -n 20
    fi
}

# rg_lacks WHAT FILE PATTERN: no line of FILE matches PATTERN
rg_lacks() {
    if grep -Eq "$3" "$2"; then
        rg_fail "$1"
        grep -E "$3" "$2" | sed 's/^/#   /' | head -n 5
    else
        rg_ok "$1"
    fi
}

# rg_equal WHAT GOT WANT
rg_equal() {
    if [ "$2" = "$3" ]; then
        rg_ok "$1"
    else
        rg_fail "$1"
        echo "#   got:  $2"
        echo "#   want: $3"
        return 1
    fi
}

# rg_wait_for FILE PATTERN [N]: up to 10 s until FILE has N (1) lines
# matching PATTERN
rg_wait_for() {
    want=${3:-1}
    i=0
    while [ $i -lt 200 ]; do
        got=$(grep -Ec "$2" "$1" 2>/dev/null)
        [ "${got:-0}" -ge "$want" ] && return 0
        sleep 0.05
        i=$((i + 1))
    done
    return 1
}

# rg_mock NAME ARGS...: starts a mock model, sets $port
rg_mock() {
    name=$1
    shift
    "$B/rg_mock" --port 0 --port-file "$tmp/$name.port" --quiet "$@" \
        2>/dev/null &
    pids="$pids $!"
    i=0
    while [ ! -s "$tmp/$name.port" ] && [ $i -lt 200 ]; do
        sleep 0.05
        i=$((i + 1))
    done
    port=$(cat "$tmp/$name.port")
}

# rg_redis NAME [ARGS...]: starts a redis-server listening only on the
# unix socket $tmp/NAME.sock, sets $redis_sock and $redis_pid
rg_redis() {
    name=$1
    shift
    mkdir -p "$tmp/$name.d"
    redis_sock=$tmp/$name.sock
    redis-server --port 0 --unixsocket "$redis_sock" --dir "$tmp/$name.d" \
        --save "" --appendonly no --logfile "$tmp/$name.log" "$@" &
    redis_pid=$!
    pids="$pids $redis_pid"
    i=0
    while ! redis-cli -s "$redis_sock" ping >/dev/null 2>&1 \
          && [ $i -lt 200 ]; do
        sleep 0.05
        i=$((i + 1))
    done
}

# rg_free_port: a loopback TCP port free now, and not one this test was
# given before (the kernel may hand the same port out twice in a row);
# those are kept in a file, for $(rg_free_port) runs in a subshell. At
# most 55535: a Redis Cluster node also listens on its port + 10000
rg_free_port() {
    while :; do
        p=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        [ "$p" -le 55535 ] || continue
        grep -qx "$p" "$tmp/.ports" 2>/dev/null || break
    done
    echo "$p" >> "$tmp/.ports"
    echo "$p"
}

# rg_redis_tcp PORT DIR: a redis-server on 127.0.0.1:PORT keeping its
# data in DIR (appendonly, each write synced: it may be stopped and started
# again with what it had), sets $redis_pid
rg_redis_tcp() {
    mkdir -p "$2"
    redis-server --port "$1" --bind 127.0.0.1 --dir "$2" \
        --appendonly yes --appendfsync always --save "" \
        --logfile "$2/redis.log" &
    redis_pid=$!
    pids="$pids $redis_pid"
    i=0
    while ! redis-cli -p "$1" ping >/dev/null 2>&1 && [ $i -lt 200 ]; do
        sleep 0.05
        i=$((i + 1))
    done
}

# rg_rcli ARGS...: redis-cli on the test's server
rg_rcli() {
    redis-cli -s "$redis_sock" "$@"
}

# rg_ttl_sweep WHAT [PATTERN [EXEMPT]]: every key of the test's Redis that
# reagent wrote (PATTERN, "rg:*": not a test plugin's own) has a TTL, in
# one script (SCAN, then PTTL of each), but those EXEMPT (an ERE) names
# and the store's epoch ("rg:epoch");
# fails naming the keys that have none, and when there is no key at all
# (a sweep over nothing proves nothing)
rg_ttl_sweep() {
    rg_rcli eval "local c, n, bad = '0', 0, {}
        repeat
          local r = redis.call('SCAN', c, 'MATCH', ARGV[1], 'COUNT', 1000)
          c = r[1]
          for _, k in ipairs(r[2]) do
            n = n + 1
            if redis.call('PTTL', k) == -1 then bad[#bad + 1] = k end
          end
        until c == '0'
        return {n, bad}" 0 "${2:-rg:*}" > "$tmp/ttl.sweep"
    sw_n=$(sed -n 1p "$tmp/ttl.sweep")
    # the store's epoch has none: it goes only with the store's memory
    sed '1d; /^$/d' "$tmp/ttl.sweep" | grep -Ev "${3:-^$}" \
        | grep -Ev '^[^{}]*epoch$' > "$tmp/ttl.bad"
    if [ "${sw_n:-0}" -gt 0 ] && [ ! -s "$tmp/ttl.bad" ]; then
        rg_ok "$1: each of the $sw_n keys has a TTL"
    else
        rg_fail "$1: each of the ${sw_n:-0} keys has a TTL"
        sed 's/^/#   no TTL: /' "$tmp/ttl.bad" | head -n 10
    fi
}

# rg_task_sid ID: the session id that serve gives queue task ID (as
# rg_stream_session_id names it)
rg_task_sid() {
    printf 'task\000%s' "$1" | sha256sum | cut -c1-32 | sed 's/^/t-/'
}

# rg_task_status ID: the status in queue task ID's kept result, if any
rg_task_status() {
    rg_rcli get "rg:{$(rg_task_sid "$1")}:result" | jq -r '.status // empty' \
        2>/dev/null
}

# rg_announced ID: how often the results stream has task ID
rg_announced() {
    rg_rcli xrange 'rg:{q:tasks}:results' - + | grep -c "^$1\$"
}

# rg_added STREAM: how many entries were ever added to a stream (a shard
# deletes the entries it is done with, so XLEN says what waits or runs)
rg_added() {
    rg_rcli xinfo stream "$1" | awk 'p == "entries-added" { print; exit }
                                     { p = $0 }'
}

# rg_req METHOD PATH [CURL ARGS...]: a request to the API at $U, its body
# in $tmp/body; echoes the status
rg_req() {
    req_m=$1
    req_p=$2
    shift 2
    curl -s -o "$tmp/body" -w '%{http_code}' -X "$req_m" "$U$req_p" "$@"
}

# rg_wait_task ID STATUS [ARGS...]: up to 15 s until GET /v1/tasks/ID
# says STATUS (its answer in $tmp/body)
rg_wait_task() {
    wt_id=$1
    wt_status=$2
    shift 2
    wt_i=0
    while [ $wt_i -lt 150 ]; do
        rg_req GET "/v1/tasks/$wt_id" "$@" > /dev/null
        jq -e ".status == \"$wt_status\"" "$tmp/body" > /dev/null && return 0
        sleep 0.1
        wt_i=$((wt_i + 1))
    done
    return 1
}

# rg_done: the closing line; the exit code
rg_done() {
    echo "# $n checks, $failed failed"
    [ $failed -eq 0 ]
}

# rg_skip WHY: the closing line of a test that cannot run here
rg_skip() {
    echo "SKIPPED: $(basename "$0"): $1"
    exit 0
}
