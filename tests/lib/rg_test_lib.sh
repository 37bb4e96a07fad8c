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

# rg_expect WHAT FILE PATTERN: FILE has a line matching PATTERN (grep -E;
# a PATTERN may start with "-")
rg_expect() {
    if grep -Eq -e "$3" "$2"; then
        rg_ok "$1"
    else
        rg_fail "$1"
        sed 's/^/#   /' "$2" | head -n 20
    fi
}

# rg_lacks WHAT FILE PATTERN: no line of FILE matches PATTERN
rg_lacks() {
    if grep -Eq -e "$3" "$2"; then
        rg_fail "$1"
        grep -E -e "$3" "$2" | sed 's/^/#   /' | head -n 5
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

# rg_mock NAME ARGS...: starts a mock model (rg_mock_start), sets $port
rg_mock() {
    rg_mock_start "$@"
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

# rg_redis_tcp PORT DIR [ARGS...]: a redis-server on 127.0.0.1:PORT
# keeping its data in DIR (appendonly, each write synced: it may be
# stopped and started again with what it had; ARGS, more redis-server
# options, which win: "--appendonly no" makes one that forgets), until it
# answers PING; sets $redis_pid
rg_redis_tcp() {
    rt_port=$1
    rt_dir=$2
    shift 2
    mkdir -p "$rt_dir"
    redis-server --port "$rt_port" --bind 127.0.0.1 --dir "$rt_dir" \
        --appendonly yes --appendfsync always --save "" \
        --logfile "$rt_dir/redis.log" "$@" &
    redis_pid=$!
    pids="$pids $redis_pid"
    rt_i=0
    while ! redis-cli -p "$rt_port" ping >/dev/null 2>&1 &&
          [ $rt_i -lt 200 ]; do
        sleep 0.05
        rt_i=$((rt_i + 1))
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

# --- more of what several tests share (fixed strings, exit codes, the
# --- programs a test needs, a serve started and stopped)

# rg_need PROGRAM...: skips the test when one of the programs is missing
rg_need() {
    for need_p in "$@"; do
        command -v "$need_p" >/dev/null 2>&1 \
            || rg_skip "no $need_p (deploy/deps.sh installs it)"
    done
}

# rg_built: ends the test, failed, when reagent or the mock is not built
rg_built() {
    if [ ! -x "$R" ] || [ ! -x "$B/rg_mock" ]; then
        rg_fail "$R and $B/rg_mock are built (run make first)"
        exit 1
    fi
}

# rg_has WHAT FILE TEXT: FILE has a line containing TEXT (a fixed string)
rg_has() {
    if grep -qF -- "$3" "$2"; then
        rg_ok "$1"
    else
        rg_fail "$1"
        echo "#   no line with: $3"
        sed 's/^/#   got: /' "$2" | head -n 40
    fi
}

# rg_has_not WHAT FILE TEXT: no line of FILE contains TEXT (a fixed string)
rg_has_not() {
    if grep -qF -- "$3" "$2"; then
        rg_fail "$1"
        grep -F -- "$3" "$2" | sed 's/^/#   found: /' | head -n 10
    else
        rg_ok "$1"
    fi
}

# rg_count WHAT FILE TEXT N: exactly N lines of FILE contain TEXT
rg_count() {
    count_c=$(grep -cF -- "$3" "$2")
    if [ "$count_c" -eq "$4" ]; then
        rg_ok "$1"
    else
        rg_fail "$1: $count_c lines, expected $4"
        sed 's/^/#   got: /' "$2" | head -n 40
    fi
}

# rg_rc WHAT GOT WANT: an exit code; $tmp/err is shown when it is not WANT
rg_rc() {
    if [ "$2" -eq "$3" ]; then
        rg_ok "$1: exit code $3"
    else
        rg_fail "$1: exit code $2, expected $3"
        [ -s "$tmp/err" ] && sed 's/^/#   stderr: /' "$tmp/err"
    fi
}

# rg_same WHAT FILE TEXT: FILE holds exactly TEXT (and a newline)
rg_same() {
    printf '%s\n' "$3" > "$tmp/expected"
    if cmp -s "$2" "$tmp/expected"; then
        rg_ok "$1"
    else
        rg_fail "$1"
        echo "#   expected:"
        sed 's/^/#     /' "$tmp/expected"
        echo "#   got:"
        sed 's/^/#     /' "$2"
    fi
}

# rg_mock_start NAME ARGS...: starts a mock model as rg_mock does, its
# stderr added to $tmp/mock.log; sets $port and $started (its pid)
rg_mock_start() {
    ms_pf=$tmp/$1.port
    shift
    "$B/rg_mock" --port 0 --port-file "$ms_pf" --quiet "$@" \
        2>>"$tmp/mock.log" &
    started=$!
    pids="$pids $started"
    ms_i=0
    while [ ! -s "$ms_pf" ] && [ $ms_i -lt 200 ]; do
        sleep 0.05
        ms_i=$((ms_i + 1))
    done
    port=$(cat "$ms_pf" 2>/dev/null)
}

# rg_mock_answer NAME TEXT [ARGS...]: a mock model (rg_mock_start) whose
# script is one answer, the message TEXT (as it stands in a JSON string),
# kept in $tmp/NAME.json; ARGS, more of the mock's options; sets $port
rg_mock_answer() {
    ma_name=$1
    printf '[{"message":{"content":"%s"}}]\n' "$2" > "$tmp/$ma_name.json"
    shift 2
    rg_mock_start "$ma_name" --script "$tmp/$ma_name.json" "$@"
}

# rg_serve CONF OUT: `reagent -c CONF serve --foreground` in the
# background, its stdout and stderr to OUT; sets $master (stopped with
# the test). The test then waits for what it needs in its error_log.
rg_serve() {
    "$R" -c "$1" serve --foreground > "$2" 2>&1 &
    master=$!
    pids="$pids $master"
}

# rg_wait_gone PID [SECONDS]: up to SECONDS (10) until PID has ended;
# false when it still runs
rg_wait_gone() {
    wg_i=0
    while kill -0 "$1" 2>/dev/null; do
        [ $wg_i -ge $((${2:-10} * 10)) ] && return 1
        sleep 0.1
        wg_i=$((wg_i + 1))
    done
    return 0
}

# rg_interop_tree: the interop tree (tests/interop: the pinned Node and npm
# packages) is installed; else the test ends, SKIPPED saying why, or
# failed under CI (CI=true) or with RG_INTEROP_REQUIRED=1, since
# deploy/deps.sh installs it there
rg_interop_tree() {
    if [ "${CI:-}" = true ]; then
        it_required=${RG_INTEROP_REQUIRED:-1}
    else
        it_required=${RG_INTEROP_REQUIRED:-0}
    fi
    if it_why=$(tests/interop/run.sh --check 2>&1); then
        return 0
    fi
    if ! command -v npm >/dev/null 2>&1; then
        it_why="npm is not installed, nor is tests/interop/node_modules"
        it_why="$it_why (deploy/deps.sh installs nodejs and npm, then runs npm ci)"
    else
        it_why=$(printf '%s' "$it_why" | tr '\n' ' ')
    fi
    if [ "$it_required" = 1 ]; then
        rg_fail "the interop tree is installed: $it_why"
        rg_done
        exit 1
    fi
    rg_skip "the interop tree is not installed: $it_why"
}

# rg_until SECONDS CONDITION: until the shell CONDITION holds (evaluated
# anew every 0.1 s), at most SECONDS; false when it never did
rg_until() {
    ru_n=$(($1 * 10))
    shift
    while ! eval "$*"; do
        [ $ru_n -le 0 ] && return 1
        sleep 0.1
        ru_n=$((ru_n - 1))
    done
    return 0
}

# rg_requests PORT: how many chat requests the mock on PORT has seen
rg_requests() {
    curl -s "http://127.0.0.1:$1/stats" \
        | sed -n 's/.*"requests": *\([0-9]*\).*/\1/p'
}

# rg_task_lines N PREFIX [INPUT [MORE [FIRST]]]: N task lines for batch
# or submit, ids PREFIX0 to PREFIX(N-1) (PREFIX1 to PREFIXN with FIRST 1),
# each {"id":ID,"input":INPUT MORE}: INPUT "hi" unless given, "%s" in it
# is the task's id and "%d" its number; MORE, more fields
# (',"tenant":"acme"')
rg_task_lines() {
    awk -v n="$1" -v p="$2" -v input="${3:-hi}" -v more="${4:-}" \
        -v first="${5:-0}" 'BEGIN {
        for (i = first; i < first + n; i++) {
            id = p i
            s = input
            gsub(/%s/, id, s)
            gsub(/%d/, i, s)
            printf "{\"id\":\"%s\",\"input\":\"%s\"%s}\n", id, s, more
        }
    }'
}

# rg_serve_start CONF N: one more `reagent -c CONF serve --foreground` (a
# child of the test, its output added to $tmp/serve.err), until N more
# workers read the queue, as $tmp/error.log counts them over every serve
# of the test ($rg_reading); sets $master
rg_serve_start() {
    "$R" -c "$1" serve --foreground >> "$tmp/serve.err" 2>&1 &
    master=$!
    pids="$pids $master"
    rg_reading=$((${rg_reading:-0} + $2))
    rg_wait_for "$tmp/error.log" "reading the queue" $rg_reading
}
