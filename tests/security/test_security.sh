#!/bin/sh
# test_security.sh: the attack cases of reagent, each driven through the
# agent loop as a model would drive it: a scripted model answer (the mock's
# --script mode) asks a bundled tool for something it must not get, and the
# checks are that it was refused with a clear error and that the task still
# ended with a status. Runs the real binary (B/reagent) against B/rg_mock
# on loopback ports:
#
#   the API key in /proc/PID/environ, read by an approved exec; a provider
#   whose 401 quotes the key (stderr, the log, results, the transcript); a
#   model that quotes it, served from a Redis queue (results, status, what
#   Redis keeps); http to names and addresses that lead to loopback (v4,
#   v6, mapped); run_agent to an agent not listed, and to none when none
#   is listed; a child agent's approval above its parent's;
#   --deny-dangerous over `approve`; four catastrophic regular expressions
#   at once beside another blocking call; many costly lines under a short
#   tool_timeout; a setsid() child of an exec that times out, is
#   cancelled, or whose reagent is killed; Landlock (cat /etc/hostname, a
#   write outside the root), and a kernel without it
#   (B/tests/security/rg_nolandlock, built by make tests); rlimits; root's
#   capabilities; network off; four slow programs beside a blocking call
#   (no pool thread waits). A case that needs what this machine lacks is
#   skipped, with the reason.
#
# Run from the repository root by tests/run.sh with B=<build folder>.
# Prints "ok N - what" or "not ok N - what" per check and exits 1 if any
# check failed. Everything lives in one mktemp -d folder, removed at the
# end with the mocks it started (RG_KEEP=1 keeps the folder, to look).

B=${B:-objs}
R=$B/reagent
M=$(pwd)/$B/modules

n=0
failed=0
mocks=

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rg-sec-XXXXXX") || exit 1

rg_cleanup() {
    for p in $mocks; do
        kill "$p" 2>/dev/null
    done
    for p in $mocks; do
        wait "$p" 2>/dev/null
    done
    if [ -n "$RG_KEEP" ]; then
        echo "# kept $tmp"
    else
        rm -rf "$tmp"
    fi
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

rg_skip() {
    n=$((n + 1))
    echo "ok $n - $1 # skip $2"
}

# rg_check WHAT COMMAND...: the command succeeds
rg_check() {
    check_what=$1
    shift
    if "$@"; then
        rg_ok "$check_what"
    else
        rg_fail "$check_what"
    fi
}

# rg_has WHAT FILE TEXT: FILE holds TEXT (a fixed string)
rg_has() {
    if grep -qF -- "$3" "$2"; then
        rg_ok "$1"
    else
        rg_fail "$1"
        echo "#   no line with: $3"
        sed 's/^/#   got: /' "$2" | head -40
    fi
}

# rg_lacks WHAT FILE TEXT
rg_lacks() {
    if grep -qF -- "$3" "$2"; then
        rg_fail "$1"
        grep -F -- "$3" "$2" | sed 's/^/#   found: /' | head -10
    else
        rg_ok "$1"
    fi
}

# rg_count WHAT TRANSCRIPT TEXT N: N of its messages hold TEXT (the
# events that follow repeat them, in the requests they were sent in)
rg_count() {
    c=$(grep '^      "content": ' "$2" | grep -cF -- "$3")
    if [ "$c" -eq "$4" ]; then
        rg_ok "$1"
    else
        rg_fail "$1: $c times, expected $4"
        sed 's/^/#   got: /' "$2" | head -40
    fi
}

# rg_mock NAME ARGS...: starts a mock, sets $port and remembers its pid
rg_mock() {
    pf=$tmp/$1.port
    shift
    "$B/rg_mock" --port 0 --port-file "$pf" --quiet "$@" \
        2>>"$tmp/mock.log" &
    mocks="$mocks $!"
    i=0
    while [ ! -s "$pf" ] && [ $i -lt 100 ]; do
        sleep 0.05
        i=$((i + 1))
    done
    port=$(cat "$pf" 2>/dev/null)
    if [ -z "$port" ]; then
        rg_fail "the mock $pf starts"
        cat "$tmp/mock.log"
        exit 1
    fi
}

# rg_script NAME: the model's answers, from stdin, with @PORT@, @KEY@ and
# @TMP@ put in; the mock that plays them is started, its port in $port
rg_script() {
    sed -e "s|@PORT@|${target:-0}|g" -e "s|@KEY@|$KEY|g" \
        -e "s|@TMP@|$tmp|g" > "$tmp/$1.script.json"
    rg_mock "$1" --script "$tmp/$1.script.json"
}

# rg_run NAME CONF ARGS...: reagent run with a transcript, no terminal;
# sets $rc, stdout in NAME.out, stderr in NAME.err
rg_run() {
    run_name=$1
    run_conf=$2
    shift 2
    "$R" -c "$run_conf" run --transcript "$tmp/$run_name.json" "$@" \
        "the task" < /dev/null > "$tmp/$run_name.out" 2> "$tmp/$run_name.err"
    rc=$?
}

# the task ended, with this status
rg_status() {
    rg_has "$1: the task ended \"$2\"" "$tmp/$1.err" "status: $2"
}


if [ ! -x "$R" ] || [ ! -x "$B/rg_mock" ]; then
    echo "not ok 1 - $R and $B/rg_mock are built (run make first)"
    exit 1
fi

"$R" -V > "$tmp/version" 2>&1
rg_has "-V says how exec confines its programs" "$tmp/version" \
    "exec confinement: "

landlock=yes
grep -q "exec confinement: landlock ABI" "$tmp/version" || landlock=no

netns=yes
grep -q "no network namespaces" "$tmp/version" && netns=no

# a key no other process holds
KEY=sk-sec-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')-Z9y8
last4=$(printf '%s' "$KEY" | tail -c 4)
MASK="sk-…$last4"

mkdir -p "$tmp/root" "$tmp/fsroot"
target=0


# 1. the key in /proc/PID/environ, read by an approved exec --------------
#
# The program walks up its ancestors (its supervisor, reagent, the shell
# that started it) and prints the environment of each that it may read.
# Reagent's it may not: a program of reagent's user cannot read a process
# that is not dumpable, and one of root keeps no capability to. While the
# program waits, the test reads reagent's environment itself: as root it
# may, and the key is gone from it.

cat > "$tmp/root/walk.sh" <<'EOF'
p=$PPID
while [ "$p" -gt 1 ]; do
    echo "== $p"
    tr '\000' '\n' < /proc/$p/environ
    q=$p
    while read k v; do
        [ "$k" = PPid: ] && p=$v
    done < /proc/$q/status
    [ "$p" = "$q" ] && break
done
: > walked
i=0
while [ ! -e looked ] && [ $i -lt 100 ]; do
    sleep 0.1
    i=$((i + 1))
done
EOF

rg_script environ <<'EOF'
[{"message":{"tool_calls":[{"id":"env1","name":"exec","arguments":{"argv":
  ["sh","walk.sh"]}}]}},
 {"message":{"content":"read them"}}]
EOF

cat > "$tmp/environ.conf" <<EOF
tool_result_limit 4m;
load_module $M/exec.so;
module exec { root $tmp/root; read_only /proc; max_output 4m; }
llm m { base_url http://127.0.0.1:$port/v1; model mock-1;
        api_key_env RG_SEC_KEY; }
agent a { tools exec; approve exec; }
EOF

env RG_SEC_KEY="$KEY" RG_SEC_MARK="reagent-env-$$" \
    "$R" -c "$tmp/environ.conf" run \
    --transcript "$tmp/environ.json" "the task" < /dev/null \
    > "$tmp/environ.out" 2> "$tmp/environ.err" &
rpid=$!
i=0
while [ ! -e "$tmp/root/walked" ] && [ $i -lt 200 ]; do
    sleep 0.05
    i=$((i + 1))
done
tr '\000' '\n' < "/proc/$rpid/environ" > "$tmp/environ.self" 2>&1
: > "$tmp/root/looked"
wait "$rpid"

rg_status environ done
rg_has "environ: the program walked up to reagent" "$tmp/environ.json" \
    "== $rpid\n"
rg_has "environ: ... and may not read its environment" \
    "$tmp/environ.json" "cannot open /proc/$rpid/environ: Permission denied"
rg_lacks "environ: the key is in nothing it read" "$tmp/environ.json" "$KEY"
rg_lacks "environ: not even scrubbed: it was not there" "$tmp/environ.json" \
    "$MASK"
if [ "$(id -u)" -eq 0 ]; then
    rg_has "environ: root reads reagent's environment" \
        "$tmp/environ.self" "RG_SEC_MARK=reagent-env-$$"
    rg_lacks "environ: ... and the key is gone from it" \
        "$tmp/environ.self" "$KEY"
else
    rg_skip "environ: the key is gone from reagent's environment" \
        "only root reads the environment of a process not dumpable"
fi

# 1b. reagent is not dumpable: while it runs as an ordinary user (nobody),
# another process of that user, outside any sandbox, cannot read its
# /proc/PID/environ (it can read that of a plain process of the user)
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv > /dev/null; then
    rg_skip "dumpable: reagent's /proc/PID/environ is closed to its user" \
        "needs root and setpriv to run reagent as another user"
elif ! setpriv --reuid=65534 --regid=65534 --clear-groups "$R" -V \
        > /dev/null 2>&1; then
    rg_skip "dumpable: reagent's /proc/PID/environ is closed to its user" \
        "user nobody cannot run $R from $(pwd)"
else
    rg_script dumpable <<'EOF'
[{"message":{"tool_calls":[{"id":"d1","name":"exec","arguments":{"argv":
  ["sleep","3"]}}]}},
 {"message":{"content":"slept"}}]
EOF
    dd=$(mktemp -d /tmp/rg-sec-nobody-XXXXXX)
    mkdir "$dd/root"
    cat > "$dd/d.conf" <<EOF
load_module $M/exec.so;
module exec { root $dd/root; }
llm m { base_url http://127.0.0.1:$port/v1; model mock-1; }
agent a { tools exec; approve exec; }
EOF
    chown -R 65534:65534 "$dd"
    as_nobody="setpriv --reuid=65534 --regid=65534 --clear-groups"
    $as_nobody "$R" -c "$dd/d.conf" run "the task" < /dev/null \
        > "$tmp/dumpable.out" 2> "$tmp/dumpable.err" &
    rpid=$!
    $as_nobody sleep 5 &
    spid=$!
    i=0
    # the tool's sleep runs: reagent is well past its start
    while ! pgrep -u 65534 -f '^sleep 3$' > /dev/null && [ $i -lt 200 ]; do
        sleep 0.05
        i=$((i + 1))
    done
    $as_nobody head -c 4 "/proc/$spid/environ" > /dev/null 2>&1
    rc=$?
    rg_check "dumpable: nobody reads its plain process's environ" test $rc -eq 0
    $as_nobody head -c 4 "/proc/$rpid/environ" > /dev/null 2> "$tmp/dumpable.read"
    rc=$?
    rg_check "dumpable: nobody cannot read reagent's environ" test $rc -ne 0
    rg_has "dumpable: ... permission denied" "$tmp/dumpable.read" \
        "Permission denied"
    kill "$spid" 2>/dev/null
    wait "$rpid"
    wait "$spid" 2>/dev/null
    rm -rf "$dd"
    rg_has "dumpable: the task ended \"done\"" "$tmp/dumpable.err" "status: done"
fi


# 2. a provider that quotes the key in its 401 ---------------------------

rg_script echo401 <<'EOF'
[{"status":401,"body":{"error":{"message":"Incorrect API key provided: @KEY@. You can find your API key at https://example.com.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}}]
EOF

cat > "$tmp/echo401.conf" <<EOF
error_log $tmp/echo401.log debug;
llm m { base_url http://127.0.0.1:$port/v1; model mock-1;
        api_key_env RG_SEC_KEY; max_retries 0; }
agent a { }
EOF

env RG_SEC_KEY="$KEY" "$R" -c "$tmp/echo401.conf" run \
    --transcript "$tmp/echo401.json" "the task" < /dev/null \
    > "$tmp/echo401.out" 2> "$tmp/echo401.err"
rg_status echo401 failed
rg_has "401: the reason quotes the provider" "$tmp/echo401.err" \
    "Incorrect API key provided: $MASK."
for f in echo401.err echo401.out echo401.log echo401.json; do
    rg_lacks "401: the key is not in $f" "$tmp/$f" "$KEY"
done
rg_has "401: the transcript shows it scrubbed" "$tmp/echo401.json" "$MASK"
rg_has "401: so does the log" "$tmp/echo401.log" "$MASK"

printf '{"id":"t1","input":"the task"}\n' > "$tmp/tasks.jsonl"
env RG_SEC_KEY="$KEY" "$R" -c "$tmp/echo401.conf" batch --no-progress \
    -o "$tmp/results.jsonl" "$tmp/tasks.jsonl" < /dev/null \
    > "$tmp/batch.out" 2> "$tmp/batch.err"
rg_has "401 in a batch: the task has a result" "$tmp/results.jsonl" \
    '"status":"failed"'
rg_has "401 in a batch: its error is scrubbed" "$tmp/results.jsonl" "$MASK"
rg_lacks "401 in a batch: the key is not in the results" \
    "$tmp/results.jsonl" "$KEY"
rg_lacks "401 in a batch: nor on stderr" "$tmp/batch.err" "$KEY"

# a body that is not JSON is cut to its first 200 bytes for the reason:
# here the cut falls inside the key, whose first 20 bytes it holds
fill=$(printf '%0168d' 0)
rg_script cut401 <<EOF
[{"status":401,"raw":"<html><body>$fill@KEY@ is not a key</body></html>"}]
EOF
sed "s|:[0-9]*/v1|:$port/v1|; s|echo401|cut401|" "$tmp/echo401.conf" \
    > "$tmp/cut401.conf"
env RG_SEC_KEY="$KEY" "$R" -c "$tmp/cut401.conf" run \
    --transcript "$tmp/cut401.json" "the task" < /dev/null \
    > "$tmp/cut401.out" 2> "$tmp/cut401.err"
rg_status cut401 failed
rg_has "401 cut inside the key: the reason shows the body" \
    "$tmp/cut401.err" "HTTP 401: <html><body>0000"
cut=$(printf '%s' "$KEY" | cut -c1-20)
for f in cut401.err cut401.out cut401.log cut401.json; do
    rg_lacks "401 cut inside the key: what is left of it is not in $f" \
        "$tmp/$f" "$cut"
done
rg_has "401 cut inside the key: masked where it was cut" "$tmp/cut401.err" \
    "0000$MASK"


# 2b. a model that quotes the key, in serve's queue ----------------------
#
# The key reaches the model's answer and a tool call's arguments; serve
# keeps the task in Redis (its result, its meta, its messages, the
# results stream). What `reagent results`, `submit --wait` and `reagent
# status` print shows it masked, and nothing Redis holds has it whole: its
# snapshot, written uncompressed, is searched for it.

if command -v redis-server > /dev/null && command -v redis-cli > /dev/null
then
    rg_script quote <<'EOF'
[{"message":{"content":null,"tool_calls":[{"id":"c1","name":"calc",
  "arguments":{"expression":"@KEY@"}}]}},
 {"message":{"content":"the key is @KEY@"}}]
EOF
    mkdir -p "$tmp/redis"
    rsock=$tmp/redis.sock
    redis-server --port 0 --unixsocket "$rsock" --dir "$tmp/redis" \
        --save "" --appendonly no --rdbcompression no \
        --logfile "$tmp/redis.log" &
    mocks="$mocks $!"
    i=0
    while ! redis-cli -s "$rsock" ping > /dev/null 2>&1 && [ $i -lt 200 ]
    do
        sleep 0.05
        i=$((i + 1))
    done

    cat > "$tmp/quote.conf" <<EOF
load_module $M/calc.so;
worker_processes 1;
pid $tmp/quote.pid;
error_log $tmp/quote.log info;
llm m { base_url http://127.0.0.1:$port/v1; model mock-1;
        api_key_env RG_SEC_KEY; }
agent a { tools calc; }
store redis { server unix:$rsock; }
queue { block 200ms; }
EOF
    env RG_SEC_KEY="$KEY" "$R" -c "$tmp/quote.conf" serve --foreground \
        > "$tmp/quote.serve" 2>&1 &
    master=$!
    mocks="$mocks $master"

    printf '{"id":"q1","input":"the task"}\n' > "$tmp/quote.jsonl"
    env RG_SEC_KEY="$KEY" "$R" -c "$tmp/quote.conf" submit --wait \
        "$tmp/quote.jsonl" > "$tmp/quote.wait" 2> "$tmp/quote.wait.err"
    env RG_SEC_KEY="$KEY" "$R" -c "$tmp/quote.conf" results \
        > "$tmp/quote.results" 2>&1
    env RG_SEC_KEY="$KEY" "$R" -c "$tmp/quote.conf" status q1 \
        > "$tmp/quote.status" 2>&1

    sid=t-$(printf 'task\000q1' | sha256sum | cut -c1-32)
    rc() {
        redis-cli -s "$rsock" "$@"
    }
    rc get "rg:{$sid}:result" > "$tmp/quote.result"
    rc hgetall "rg:{$sid}:meta" > "$tmp/quote.meta"
    rc save > /dev/null

    kill -QUIT "$master"
    wait "$master"

    rg_has "quote in serve: the task ended \"done\"" "$tmp/quote.status" \
        "status: done"
    rg_has "quote in serve: submit --wait prints the answer masked" \
        "$tmp/quote.wait" "\"answer\":\"the key is $MASK\""
    rg_has "quote in serve: so does reagent results" "$tmp/quote.results" \
        "\"answer\":\"the key is $MASK\""
    rg_has "quote in serve: and reagent status" "$tmp/quote.status" \
        "the key is $MASK"
    rg_has "quote in serve: the kept result has it masked" \
        "$tmp/quote.result" "the key is $MASK"
    rg_has "quote in serve: so has the session's meta" "$tmp/quote.meta" \
        "the key is $MASK"
    for f in quote.wait quote.results quote.status quote.result \
             quote.meta quote.serve quote.log redis/dump.rdb; do
        rg_lacks "quote in serve: the key is not in $f" "$tmp/$f" "$KEY"
    done
    rg_has "quote in serve: ... the snapshot has the masked answer" \
        "$tmp/redis/dump.rdb" "the key is $MASK"
else
    rg_skip "quote in serve" "no redis-server or redis-cli"
fi


# 3. http: names and addresses that lead to loopback ---------------------

rg_mock web
target=$port

rg_script http <<'EOF'
[{"message":{"tool_calls":[
  {"id":"h1","name":"http_get","arguments":{"url":"http://localhost:@PORT@/stats"}},
  {"id":"h2","name":"http_get","arguments":{"url":"http://127.0.0.1:@PORT@/stats"}},
  {"id":"h3","name":"http_get","arguments":{"url":"http://[::1]:@PORT@/stats"}},
  {"id":"h4","name":"http_get","arguments":{"url":"http://[::ffff:127.0.0.1]:@PORT@/stats"}}]}},
 {"message":{"content":"fetched"}}]
EOF

for allow in off on; do
    cat > "$tmp/http-$allow.conf" <<EOF
load_module $M/http.so;
module http { allow_hosts localhost 127.0.0.1 [::1] [::ffff:127.0.0.1];
              allow_private $allow; }
llm m { base_url http://127.0.0.1:$port/v1; model mock-1; }
agent a { tools http_get; }
EOF
    rg_run "http-$allow" "$tmp/http-$allow.conf"
    rg_status "http-$allow" done
done

rg_count "http: all four connections refused" "$tmp/http-off.json" \
    "refused to connect to" 4
rg_has "http: named as loopback" "$tmp/http-off.json" "a loopback address"
rg_has "http: 127.0.0.1 refused" "$tmp/http-off.json" \
    "refused to connect to 127.0.0.1"
rg_has "http: IPv4-mapped refused" "$tmp/http-off.json" \
    "refused to connect to ::ffff:127.0.0.1"
rg_has "http: the error says how to allow it" "$tmp/http-off.json" \
    "(allow_private on; in its module allows them)"
rg_lacks "http: nothing was fetched" "$tmp/http-off.json" "status: 200"
rg_has "http with allow_private on: fetched" "$tmp/http-on.json" \
    "status: 200"
rg_lacks "http with allow_private on: nothing refused" "$tmp/http-on.json" \
    "refused to connect"
target=0


# 4. run_agent to an agent it does not list ------------------------------

rg_script delegate <<'EOF'
[{"message":{"tool_calls":[
  {"id":"d1","name":"run_agent","arguments":{"agent":"admin","input":"run id"}},
  {"id":"d2","name":"run_agent","arguments":{"agent":"helper","input":"the subtask"}}]}},
 {"message":{"content":"delegated"}}]
EOF
parent=$port

rg_mock child --rounds 0
child=$port

for lists in helper none; do
    if [ "$lists" = helper ]; then agents="agents helper;"; else agents=; fi
    cat > "$tmp/agents-$lists.conf" <<EOF
load_module $M/agent.so;
load_module $M/exec.so;
module exec { root $tmp/root; }
llm p { base_url http://127.0.0.1:$parent/v1; model mock-1; }
llm c { base_url http://127.0.0.1:$child/v1; model mock-1; }
agent a { llm p; tools run_agent; $agents }
agent helper { llm c; }
agent admin { llm c; tools exec; approve exec; }
EOF
    rg_run "agents-$lists" "$tmp/agents-$lists.conf"
    rg_status "agents-$lists" done
done

rg_has "run_agent: an agent not listed is refused" "$tmp/agents-helper.json" \
    'agent \"admin\" is not one that agent \"a\" may call; it may call: helper'
rg_has "run_agent: a listed one runs" "$tmp/agents-helper.json" \
    "Final answer: the subtask"
rg_has "run_agent: none listed, none reached" "$tmp/agents-none.json" \
    'agent \"a\" may not hand work to other agents (its \"agents\" lists none)'
rg_lacks "run_agent: none listed: not even helper" "$tmp/agents-none.json" \
    "Final answer"


# 5. a child's approval above its parent's --------------------------------

rg_script escalate <<'EOF'
[{"message":{"tool_calls":[{"id":"x1","name":"run_agent","arguments":{"agent":"admin","input":"make the file"}}]}},
 {"message":{"content":"asked admin"}}]
EOF
parent=$port

rg_script escalate-child <<'EOF'
[{"message":{"tool_calls":[{"id":"c1","name":"exec","arguments":{"argv":["sh","-c","echo pwned > pwned"]}}]}},
 {"message":{"content":"did what I could"}}]
EOF
child=$port

for who in parent child; do
    if [ "$who" = parent ]; then
        a="tools run_agent exec; agents admin; approve exec;"
    else
        a="tools run_agent; agents admin;"
    fi
    rm -f "$tmp/root/pwned"
    cat > "$tmp/escalate-$who.conf" <<EOF
load_module $M/agent.so;
load_module $M/exec.so;
module exec { root $tmp/root; }
llm p { base_url http://127.0.0.1:$parent/v1; model mock-1; }
llm c { base_url http://127.0.0.1:$child/v1; model mock-1; }
agent a { llm p; $a }
agent admin { llm c; tools exec; approve exec; }
EOF
    rg_run "escalate-$who" "$tmp/escalate-$who.conf"
    rg_status "escalate-$who" done
    [ -e "$tmp/root/pwned" ] && echo yes > "$tmp/escalate-$who.ran"
done

rg_check "escalation: the child's exec did not run" \
    test ! -e "$tmp/escalate-child.ran"
rg_check "escalation: refused at warn, in one line naming the tool, the agent that refuses it, the session" \
    grep -Eq '\[warn\] .*dangerous tool "exec" refused: agent "a" does not approve it.*agent: "admin", session: "' \
    "$tmp/escalate-child.err"
if command -v curl > /dev/null; then
    curl -s "http://127.0.0.1:$child/last_request" > "$tmp/escalate.last"
    rg_has "escalation: the child's model was told why" "$tmp/escalate.last" \
        'which delegated this task, does not approve it'
else
    rg_skip "escalation: the child's model was told why" "no curl"
fi
rg_check "escalation: approved by the parent too, it runs" \
    test -e "$tmp/escalate-parent.ran"


# 6. --deny-dangerous over an agent's approve ----------------------------

rg_script deny <<'EOF'
[{"message":{"tool_calls":[{"id":"n1","name":"exec","arguments":{"argv":["sh","-c","echo ran > denied"]}}]}},
 {"message":{"content":"tried"}}]
EOF

cat > "$tmp/deny.conf" <<EOF
load_module $M/exec.so;
module exec { root $tmp/root; }
llm m { base_url http://127.0.0.1:$port/v1; model mock-1; }
agent a { tools exec; approve exec; }
EOF

rg_run deny "$tmp/deny.conf" --deny-dangerous
rg_status deny done
rg_has "--deny-dangerous: refused, and said so" "$tmp/deny.json" \
    "was not approved (dangerous tools are refused here)"
rg_check "--deny-dangerous: the program did not run" \
    test ! -e "$tmp/root/denied"
rg_run deny-approved "$tmp/deny.conf"
rg_check "without it, approve runs the program" test -e "$tmp/root/denied"


# 7. four catastrophic patterns at once, beside another blocking call ----

printf '%0200d!\n' 0 | tr 0 a > "$tmp/fsroot/a.txt"
printf 'hello from the pool\n' > "$tmp/fsroot/note.txt"

rg_script regex <<'EOF'
[{"message":{"tool_calls":[
  {"id":"g1","name":"grep","arguments":{"pattern":"^((a*)*\\2)*$","path":"a.txt"}},
  {"id":"g2","name":"grep","arguments":{"pattern":"^((a*)*\\2)*\\1$","path":"a.txt"}},
  {"id":"g3","name":"grep","arguments":{"pattern":"^(a*)*(\\1)*$","path":"a.txt"}},
  {"id":"g4","name":"grep","arguments":{"pattern":"^(a*)*\\1\\1$","path":"a.txt"}},
  {"id":"r1","name":"read_file","arguments":{"path":"note.txt"}}]}},
 {"message":{"content":"searched"}}]
EOF

cat > "$tmp/regex.conf" <<EOF
load_module $M/fs.so;
module fs { root $tmp/fsroot; }
thread_pool default threads=4;
llm m { base_url http://127.0.0.1:$port/v1; model mock-1; }
agent a { tools grep read_file; tool_timeout 5s; }
EOF

rg_run regex "$tmp/regex.conf"
rg_status regex done
rg_count "regex: each of the four is refused" "$tmp/regex.json" \
    "is too costly to match" 4
rg_has "regex: with what to do" "$tmp/regex.json" "simplify it"
rg_has "regex: the other blocking call answered" "$tmp/regex.json" \
    "hello from the pool"
rg_lacks "regex: nothing timed out" "$tmp/regex.json" "timed out"

# 7b. lines that each cost much, but stay under the match limit ----------
#
# ^a*a*a*[^a] on 600 a's takes milliseconds to tens of them a line
# (cubic backtracking, well under the limit, its cost the machine's);
# 2,000 such lines take longer than the call may on any machine. The search looks at the clock after each costly line,
# so it stops at its deadline (90% of tool_timeout) and answers with what
# it has, before the host gives up on the call. Looking only every 64
# lines, it would not.

line=$(printf '%0600d' 0 | tr 0 a)
i=0
while [ $i -lt 2000 ]; do
    echo "$line"
    i=$((i + 1))
done > "$tmp/fsroot/slow.txt"

rg_script costly <<'EOF'
[{"message":{"tool_calls":[{"id":"g1","name":"grep","arguments":
  {"pattern":"^a*a*a*[^a]","path":"slow.txt"}}]}},
 {"message":{"content":"searched"}}]
EOF

cat > "$tmp/costly.conf" <<EOF
load_module $M/fs.so;
module fs { root $tmp/fsroot; }
llm m { base_url http://127.0.0.1:$port/v1; model mock-1; }
agent a { tools grep; tool_timeout 5s; }
EOF

rg_run costly "$tmp/costly.conf"
rg_status costly done
rg_has "costly lines: the search stopped at its deadline" \
    "$tmp/costly.json" "(stopped at the time limit after searching 1 files"
rg_lacks "costly lines: ... before the call timed out" "$tmp/costly.json" \
    "timed out"


# 8. a setsid() child of an exec that times out --------------------------

rg_script setsid <<'EOF'
[{"message":{"tool_calls":[{"id":"s1","name":"exec","arguments":{"argv":
  ["sh","-c","setsid sh -c 'echo $$ > survivor.pid; exec sleep 300' & sleep 300"]}}]}},
 {"message":{"content":"waited"}}]
EOF

cat > "$tmp/setsid.conf" <<EOF
load_module $M/exec.so;
module exec { root $tmp/root; timeout 1s; }
llm m { base_url http://127.0.0.1:$port/v1; model mock-1; }
agent a { tools exec; approve exec; }
EOF

rg_run setsid "$tmp/setsid.conf"
rg_status setsid done
rg_has "setsid: the call timed out, and said what was killed" \
    "$tmp/setsid.json" \
    "timed out after 1s (it and every process it started were killed)"
survivor=$(cat "$tmp/root/survivor.pid" 2>/dev/null)
rg_check "setsid: the child left its session" test -n "$survivor"
rg_check "setsid: no survivor after the task" \
    sh -c "! kill -0 ${survivor:-1} 2>/dev/null"

# the same, ended by the agent's tool_timeout: the call is cancelled
rm -f "$tmp/root/survivor.pid"
sed -e 's/timeout 1s;/timeout 30s;/' \
    -e 's/approve exec;/approve exec; tool_timeout exec 1s;/' \
    "$tmp/setsid.conf" > "$tmp/setsid-cancel.conf"

rg_run setsid-cancel "$tmp/setsid-cancel.conf"
rg_status setsid-cancel done
rg_has "setsid, cancelled: the call timed out" "$tmp/setsid-cancel.json" \
    "error: exec timed out after 1s"
survivor=$(cat "$tmp/root/survivor.pid" 2>/dev/null)
rg_check "setsid, cancelled: the child left its session" test -n "$survivor"
i=0
while kill -0 "${survivor:-1}" 2>/dev/null && [ $i -lt 100 ]; do
    sleep 0.05                 # the supervisor's SIGTERM, then SIGKILL
    i=$((i + 1))
done
rg_check "setsid, cancelled: no survivor after the task" \
    sh -c "! kill -0 ${survivor:-1} 2>/dev/null"

# the same, with reagent itself killed (SIGKILL) while it runs: the
# supervisor sees its control pipe close and kills the tree
rm -f "$tmp/root/survivor.pid"
sed 's/timeout 1s;/timeout 60s;/' "$tmp/setsid.conf" > "$tmp/setsid-kill.conf"

"$R" -c "$tmp/setsid-kill.conf" run "the task" < /dev/null \
    > "$tmp/setsid-kill.out" 2> "$tmp/setsid-kill.err" &
rpid=$!
i=0
while [ ! -s "$tmp/root/survivor.pid" ] && [ $i -lt 200 ]; do
    sleep 0.05
    i=$((i + 1))
done
survivor=$(cat "$tmp/root/survivor.pid" 2>/dev/null)
rg_check "setsid, reagent killed: the child left its session" \
    test -n "$survivor"
rg_check "setsid, reagent killed: ... and runs while reagent does" \
    kill -0 "${survivor:-1}"
kill -KILL "$rpid"
wait "$rpid"
rc=$?
rg_check "setsid, reagent killed: reagent died of SIGKILL" test $rc -eq 137
i=0
while kill -0 "${survivor:-1}" 2>/dev/null && [ $i -lt 100 ]; do
    sleep 0.05                 # the supervisor's SIGTERM, then SIGKILL
    i=$((i + 1))
done
rg_check "setsid, reagent killed: no survivor" \
    sh -c "! kill -0 ${survivor:-1} 2>/dev/null"


# 9. Landlock: only the root, and what programs need to run --------------

printf 'inside\n' > "$tmp/root/inside.txt"

rg_script landlock <<'EOF'
[{"message":{"tool_calls":[
  {"id":"l1","name":"exec","arguments":{"argv":["cat","/etc/hostname"]}},
  {"id":"l2","name":"exec","arguments":{"argv":["sh","-c","echo out > @TMP@/escaped"]}},
  {"id":"l3","name":"exec","arguments":{"argv":["cat","inside.txt"]}}]}},
 {"message":{"content":"looked"}}]
EOF

cat > "$tmp/landlock.conf" <<EOF
load_module $M/exec.so;
module exec { root $tmp/root; }
llm m { base_url http://127.0.0.1:$port/v1; model mock-1; }
agent a { tools exec; approve exec; }
EOF

rg_run landlock "$tmp/landlock.conf"
rg_status landlock done

if [ $landlock = yes ]; then
    rg_has "landlock: /etc/hostname is refused" "$tmp/landlock.json" \
        "cat: /etc/hostname: Permission denied"
    rg_has "landlock: a write outside the root is refused" \
        "$tmp/landlock.json" "cannot create $tmp/escaped: Permission denied"
    rg_check "landlock: ... and nothing was written" test ! -e "$tmp/escaped"
    rg_has "landlock: the root is readable" "$tmp/landlock.json" \
        'exit status 0\n--- stdout ---\ninside'

    # loaded isolated, the module runs in a helper process: as confined
    sed 's|exec.so;|exec.so isolated;|' "$tmp/landlock.conf" \
        > "$tmp/landlock-iso.conf"
    rg_run landlock-iso "$tmp/landlock-iso.conf"
    rg_status landlock-iso done
    rg_has "landlock, isolated: /etc/hostname is refused" \
        "$tmp/landlock-iso.json" "cat: /etc/hostname: Permission denied"
    rg_has "landlock, isolated: the root is readable" \
        "$tmp/landlock-iso.json" 'exit status 0\n--- stdout ---\ninside'
else
    rg_skip "landlock" "this kernel has no Landlock"
fi


# 9b. a kernel without Landlock: said, never pretended -------------------
#
# B/tests/security/rg_nolandlock runs reagent under a seccomp filter that
# fails the landlock_* system calls with ENOSYS, as an older kernel does.
# reagent says so in -V and at start, and its programs are then in fact
# not confined: what one reads outside the root is what it reads.

nl=$B/tests/security/rg_nolandlock
printf 'outside\n' > "$tmp/outside.txt"

if [ ! -x "$nl" ]; then
    rg_skip "no landlock" "$nl is not built (make tests builds it)"
elif ! "$nl" true 2> "$tmp/nolandlock.probe"; then
    rg_skip "no landlock" "$(cat "$tmp/nolandlock.probe")"
else
    "$nl" "$R" -V > "$tmp/nolandlock.version" 2>&1
    rg_has "no landlock: -V says programs are not confined" \
        "$tmp/nolandlock.version" "exec confinement: no landlock (Function \
not implemented): exec's programs are not confined to its root"
    rg_lacks "no landlock: -V claims no ABI" "$tmp/nolandlock.version" \
        "landlock ABI"

    rg_script nolandlock <<'EOF'
[{"message":{"tool_calls":[{"id":"n1","name":"exec","arguments":{"argv":
  ["cat","@TMP@/outside.txt"]}}]}},
 {"message":{"content":"read it"}}]
EOF

    cat > "$tmp/nolandlock.conf" <<EOF
load_module $M/exec.so;
module exec { root $tmp/root; }
llm m { base_url http://127.0.0.1:$port/v1; model mock-1; }
agent a { tools exec; approve exec; }
EOF

    "$nl" "$R" -c "$tmp/nolandlock.conf" run \
        --transcript "$tmp/nolandlock.json" "the task" < /dev/null \
        > "$tmp/nolandlock.out" 2> "$tmp/nolandlock.err"
    rg_status nolandlock done
    rg_has "no landlock: a warning at start says so" "$tmp/nolandlock.err" \
        "exec: this kernel has no Landlock (Function not implemented): \
programs are NOT confined to root \"$tmp/root\""
    rg_check "no landlock: ... at warn" grep -q \
        '\[warn\] .*this kernel has no Landlock' "$tmp/nolandlock.err"
    rg_has "no landlock: ... and it is true: the program read outside" \
        "$tmp/nolandlock.json" 'exit status 0\n--- stdout ---\noutside'
fi


# 10. resource limits -----------------------------------------------------

rg_script rlimit <<'EOF'
[{"message":{"tool_calls":[
  {"id":"q1","name":"exec","arguments":{"argv":["sh","-c","while :; do :; done"]}},
  {"id":"q2","name":"exec","arguments":{"argv":["dd","if=/dev/zero","of=big","bs=1024","count=4096"]}},
  {"id":"q3","name":"exec","arguments":{"argv":["dd","if=/dev/zero","of=/dev/null","bs=300M","count=1"]}},
  {"id":"q4","name":"exec","arguments":{"argv":["sh","-c","echo v=$(ulimit -v) p=$(ulimit -p) c=$(ulimit -c)"]}}]}},
 {"message":{"content":"limited"}}]
EOF

cat > "$tmp/rlimit.conf" <<EOF
load_module $M/exec.so;
module exec { root $tmp/root; timeout 20s; max_cpu 1s; max_file_size 1m;
              max_memory 256m; max_processes 1000; }
llm m { base_url http://127.0.0.1:$port/v1; model mock-1; }
agent a { tools exec; approve exec; tool_timeout 30s; }
EOF

rg_run rlimit "$tmp/rlimit.conf"
rg_status rlimit done
rg_has "rlimit: a CPU loop is stopped at max_cpu" "$tmp/rlimit.json" \
    "(SIGXCPU) (over its CPU time limit, max_cpu)"
rg_has "rlimit: a file past max_file_size is stopped" "$tmp/rlimit.json" \
    "(SIGXFSZ) (over its file size limit, max_file_size)"
rg_check "rlimit: ... at 1m" \
    test "$(wc -c < "$tmp/root/big")" -le 1048576
rg_has "rlimit: 300M of memory is refused" "$tmp/rlimit.json" \
    "dd: memory exhausted"
rg_has "rlimit: the limits are what the module says" "$tmp/rlimit.json" \
    "v=262144 p=1000 c=0"


# 10b. root's programs keep no capability ---------------------------------
#
# no_new_privs does not stop execve() as uid 0 from giving the program
# the whole bounding set, and Landlock does not stop what capabilities
# allow. Root's program has none: every set is empty, and chown (which
# Landlock does not govern) is refused.

if [ "$(id -u)" -ne 0 ]; then
    rg_skip "capabilities: root's programs have none" \
        "runs as uid $(id -u), not root: there are none to drop"
else
    printf 'mine\n' > "$tmp/root/owned"

    rg_script caps <<'EOF'
[{"message":{"tool_calls":[
  {"id":"k1","name":"exec","arguments":
    {"argv":["grep","^Cap","/proc/self/status"]}},
  {"id":"k2","name":"exec","arguments":{"argv":["chown","65534","owned"]}}]}},
 {"message":{"content":"tried"}}]
EOF

    cat > "$tmp/caps.conf" <<EOF
load_module $M/exec.so;
module exec { root $tmp/root; read_only /proc; }
llm m { base_url http://127.0.0.1:$port/v1; model mock-1; }
agent a { tools exec; approve exec; }
EOF

    rg_run caps "$tmp/caps.conf"
    rg_status caps done
    for c in CapInh CapPrm CapEff CapBnd CapAmb; do
        rg_has "capabilities: $c is empty" "$tmp/caps.json" \
            "$c:\\t0000000000000000"
    done
    rg_has "capabilities: chown is refused" "$tmp/caps.json" \
        "chown: changing ownership of 'owned': Operation not permitted"
    rg_check "capabilities: ... and the file is still root's" \
        test "$(stat -c %u "$tmp/root/owned")" -eq 0
fi


# 11. network off ---------------------------------------------------------

if command -v curl > /dev/null; then
    rg_mock web2
    target=$port

    rg_script net <<'EOF'
[{"message":{"tool_calls":[{"id":"w1","name":"exec","arguments":{"argv":["curl","-sS","-m","5","http://127.0.0.1:@PORT@/stats"]}}]}},
 {"message":{"content":"connected?"}}]
EOF

    for net in on off; do
        cat > "$tmp/net-$net.conf" <<EOF
load_module $M/exec.so;
module exec { root $tmp/root; network $net; }
llm m { base_url http://127.0.0.1:$port/v1; model mock-1; }
agent a { tools exec; approve exec; }
EOF
    done

    rg_run net-on "$tmp/net-on.conf"
    rg_status net-on done
    rg_has "network on: the program connects" "$tmp/net-on.json" \
        'exit status 0\n--- stdout ---\n{\"requests\"'

    if [ $netns = yes ]; then
        rg_run net-off "$tmp/net-off.conf"
        rg_status net-off done
        rg_has "network off: the program cannot connect" "$tmp/net-off.json" \
            "exit status 7"
        rg_lacks "network off: ... and got nothing" "$tmp/net-off.json" \
            '\"requests\"'

        # as an ordinary user: a user namespace of its own around it
        # (reagent, not dumpable, cannot write its uid map). Under
        # ThreadSanitizer a forked child runs a thread of the sanitizer's
        # beside its own, and a process of several threads cannot enter
        # a user namespace (unshare: EINVAL): reagent says so at start
        if "$R" -V 2>&1 | grep -q -- '--with-tsan'; then
            rg_skip "network off as an ordinary user" \
                "a ThreadSanitizer build: its children have two threads"
        elif [ "$(id -u)" -eq 0 ] && command -v setpriv > /dev/null &&
           setpriv --reuid=65534 --regid=65534 --clear-groups "$R" -V \
               > /dev/null 2>&1
        then
            rg_script netu <<'EOF'
[{"message":{"tool_calls":[{"id":"w1","name":"exec","arguments":{"argv":["sh","-c","id -u; curl -sS -m 5 http://127.0.0.1:@PORT@/stats; echo $? > rc"]}}]}},
 {"message":{"content":"connected?"}}]
EOF
            nd=$(mktemp -d /tmp/rg-sec-nobody-XXXXXX)
            mkdir "$nd/root"
            sed "s|$tmp/root|$nd/root|; s|:[0-9]*/v1|:$port/v1|" \
                "$tmp/net-off.conf" > "$nd/n.conf"
            chown -R 65534:65534 "$nd"
            setpriv --reuid=65534 --regid=65534 --clear-groups "$R" \
                -c "$nd/n.conf" run --transcript "$nd/n.json" "the task" \
                < /dev/null > "$tmp/netu.out" 2> "$tmp/netu.err"
            cp "$nd/n.json" "$tmp/netu.json" 2>/dev/null
            rg_status netu done
            rg_check "network off, as nobody: the program cannot connect" \
                test "$(cat "$nd/root/rc" 2>/dev/null)" = 7
            rg_lacks "network off, as nobody: ... and got nothing" \
                "$tmp/netu.json" '\"requests\"'
            rg_has "network off, as nobody: it sees the overflow uid" \
                "$tmp/netu.json" 'stdout ---\n65534'
            rg_check "network off, as nobody: it writes below its root" \
                test "$(stat -c %u "$nd/root/rc")" = 65534
            rm -rf "$nd"
        else
            rg_skip "network off as an ordinary user" \
                "needs root and setpriv to run reagent as nobody"
        fi
    else
        "$R" -t -c "$tmp/net-off.conf" > "$tmp/net-off.out" 2>&1
        rg_has "network off without namespaces: refused at start" \
            "$tmp/net-off.out" '"network off" needs a network namespace'
    fi
    target=0
else
    rg_skip "network off" "no curl"
fi


# 12. four slow programs hold no thread of the pool -----------------------

rg_script slow <<'EOF'
[{"message":{"tool_calls":[
  {"id":"p1","name":"exec","arguments":{"argv":["sleep","3"]}},
  {"id":"p2","name":"exec","arguments":{"argv":["sleep","3.1"]}},
  {"id":"p3","name":"exec","arguments":{"argv":["sleep","3.2"]}},
  {"id":"p4","name":"exec","arguments":{"argv":["sleep","3.3"]}},
  {"id":"p5","name":"read_file","arguments":{"path":"note.txt"}}]}},
 {"message":{"content":"waited"}}]
EOF

cat > "$tmp/slow.conf" <<EOF
load_module $M/exec.so;
load_module $M/fs.so;
module exec { root $tmp/root; }
module fs { root $tmp/fsroot; }
thread_pool default threads=4;
llm m { base_url http://127.0.0.1:$port/v1; model mock-1; }
agent a { tools exec read_file; approve exec; tool_timeout read_file 1s; }
EOF

rg_run slow "$tmp/slow.conf"
rg_status slow done
rg_has "slow programs: the blocking call beside them answered" \
    "$tmp/slow.json" "hello from the pool"
rg_count "slow programs: they ran to their end" "$tmp/slow.json" \
    'exit status 0\n--- stdout ---\n--- stderr ---' 4


echo "# $n checks, $failed failed"
[ $failed -eq 0 ]
