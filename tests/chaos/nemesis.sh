# nemesis.sh: the faults of the chaos suite, one function each, sourced by
# tests/chaos/chaos.sh, which runs each in the background at the time its
# seeded schedule says (tests/chaos/schedule.py) with the arguments drawn
# there. Each says what it did in the run's history (chaos_event) and
# leaves the system as it found it once its time is up (a worker it
# stopped is continued, a Redis it killed is started again, a partition
# heals, the model's storm ends, a master it killed is started again), so
# that the checker judges what the system did after the fault, not a
# fault that never ended. What they touch, they find through files of
# the run's folder ($dir), since they run in subshells: redis.pid,
# reagent.pid (the master's own pid file), mock.pid, stopped.
#
#   kill-worker PICK        kill -9 of a worker, PICK in [0,1) choosing
#                           among those alive; the master starts another
#   stop-worker PICK MS     SIGSTOP of a worker for MS (past lease_ttl and
#                           claim_idle: its sessions are taken over), then
#                           SIGCONT: it must write nothing more for them
#   redis-kill MS           kill -9 of Redis, down for MS, started again
#                           from its AOF (appendonly yes, appendfsync
#                           always: it comes back with every write)
#   redis-wipe MS           kill -9 of Redis, down for MS, started again
#                           WITHOUT its data (its folder set aside: no AOF,
#                           no RDB), a fresh empty server on the same port
#   partition cut|hold MS   the workers cut off from Redis through the
#                           proxy (tests/chaos/rg_chaos_proxy.c): cut
#                           resets and refuses (nemesis partition), hold
#                           forwards nothing and delivers it all at the
#                           heal (nemesis partition-hold)
#   storm 429|500 MS        the model answers half its requests with a
#                           429 (Retry-After 200 ms) or a 500 (the mock
#                           started again with --fault KIND --fault-every
#                           2, then again without)
#   kill-master             kill -9 of the master, then what systemd does
#                           with deploy/systemd/reagent.service: the rest
#                           of the unit's cgroup (KillMode=mixed: the main
#                           process gone, SIGKILL to the rest at once;
#                           here the master's process group), RestartSec=2s,
#                           ExecStartPre (reagent -t) until it passes,
#                           then serve again
#   kill-master-only        kill -9 of the master alone, its workers left
#                           to themselves (KillMode=process, or a
#                           supervisor without cgroups), then the same
#                           restarts


# the pid of a worker alive, chosen by PICK in [0,1) among them in pid
# order; fails when there is none
chaos_pick_worker() {
    pm=$(chaos_master)
    pws=$(pgrep -P "$pm" 2>/dev/null | sort -n)
    pn=$(echo "$pws" | grep -c .)
    [ "$pn" -gt 0 ] || return 1
    pk=$(awk -v p="$1" -v n="$pn" 'BEGIN { k = int(p * n) + 1;
                                          print (k > n ? n : k) }')
    echo "$pws" | sed -n "${pk}p"
}


nemesis_kill_worker() {
    if w=$(chaos_pick_worker "$1"); then
        kill -9 "$w" 2>/dev/null
        chaos_event kill-worker start "\"pid\":$w"
    else
        chaos_event kill-worker start "\"pid\":null"
    fi
}


nemesis_stop_worker() {
    if ! w=$(chaos_pick_worker "$1"); then
        chaos_event stop-worker start "\"pid\":null"
        return
    fi
    kill -STOP "$w" 2>/dev/null
    echo "$w" >> "$dir/stopped"
    chaos_event stop-worker start "\"pid\":$w,\"ms\":$2"
    chaos_sleep_ms "$2"
    kill -CONT "$w" 2>/dev/null
    chaos_event stop-worker end "\"pid\":$w"
}


chaos_redis_stop9() {
    rp=$(cat "$dir/redis.pid" 2>/dev/null)
    [ -n "$rp" ] && kill -9 "$rp" 2>/dev/null
    ki=0
    while chaos_alive "$rp" && [ $ki -lt 100 ]; do
        sleep 0.05
        ki=$((ki + 1))
    done
}


nemesis_redis_kill() {
    chaos_redis_stop9
    chaos_event redis-kill start "\"ms\":$1"
    chaos_sleep_ms "$1"
    chaos_redis_start
    chaos_event redis-kill end "\"keys\":$(chaos_redis_keys)"
}


nemesis_redis_wipe() {
    chaos_redis_stop9
    wiped=$dir/redis.d.wiped-$(chaos_now)
    mv "$dir/redis.d" "$wiped"
    chaos_event redis-wipe start "\"ms\":$1"
    chaos_sleep_ms "$1"
    chaos_redis_start
    chaos_event redis-wipe end "\"keys\":$(chaos_redis_keys)"
}


nemesis_partition() {
    "$CHAOS_PROXY" --ask "$(cat "$dir/proxy.ctl")" "$1 $2" > /dev/null
    chaos_event partition start "\"kind\":\"$1\",\"ms\":$2"
    # the proxy heals itself after MS; the nemesis's time is the same
    chaos_sleep_ms "$2"
    "$CHAOS_PROXY" --ask "$(cat "$dir/proxy.ctl")" heal > /dev/null
    chaos_event partition end "\"kind\":\"$1\""
}


nemesis_storm() {
    chaos_mock_stop
    if [ "$1" = 429 ]; then
        chaos_mock_start --fault 429 --fault-every 2 --retry-after-ms 200
    else
        chaos_mock_start --fault 500 --fault-every 2
    fi
    chaos_event storm start "\"kind\":$1,\"ms\":$2"
    chaos_sleep_ms "$2"
    chaos_mock_stop
    chaos_mock_start
    chaos_event storm end "\"kind\":$1"
}


nemesis_kill_master() {
    m=$(chaos_master)
    ws=$(pgrep -P "$m" 2>/dev/null | tr '\n' ' ')
    kill -9 "$m" 2>/dev/null
    chaos_event kill-master start "\"pid\":$m"
    # KillMode=mixed: once the main process is gone, systemd sends
    # SIGKILL to what is left of the unit's cgroup (the workers)
    kill -9 "-$m" 2>/dev/null
    echo "$(date +%T.%3N) master $m killed, workers $ws killed" \
        >> "$dir/restart.log"
    chaos_restart kill-master
}


nemesis_kill_master_only() {
    m=$(chaos_master)
    ws=$(pgrep -P "$m" 2>/dev/null | tr '\n' ' ')
    kill -9 "$m" 2>/dev/null
    chaos_event kill-master-only start "\"pid\":$m"
    echo "$(date +%T.%3N) master $m killed, workers $ws left" \
        >> "$dir/restart.log"
    chaos_restart kill-master-only
}


# Restart=on-failure, RestartSec=2s: ExecStartPre tests the configuration
# (it connects to Redis), then ExecStart; a start that fails (either, or
# a master that exits at once) is started again after RestartSec
chaos_restart() {
    ra=0
    while [ $ra -lt 30 ]; do
        sleep 2
        ra=$((ra + 1))
        if ! "$R" -q -t -c "$dir/serve.conf" >> "$dir/restart.log" 2>&1
        then
            echo "$(date +%T.%3N) ExecStartPre failed" >> "$dir/restart.log"
            continue
        fi
        chaos_serve_start
        sleep 0.5
        chaos_alive "$(chaos_master)" && break
        echo "$(date +%T.%3N) ExecStart failed:" \
             "$(grep -v '"type":"access"' "$dir/serve.out" | tail -n 1)" \
             >> "$dir/restart.log"
    done
    echo "$(date +%T.%3N) master $(chaos_master) started after $ra" \
         "attempts" >> "$dir/restart.log"
    chaos_event "$1" end "\"pid\":$(chaos_master),\"attempts\":$ra"
}


# everything back as it was, whatever a nemesis left (run after every
# nemesis's job has ended, so nothing races it)
chaos_heal() {
    "$CHAOS_PROXY" --ask "$(cat "$dir/proxy.ctl")" heal > /dev/null 2>&1
    for w in $(cat "$dir/stopped" 2>/dev/null); do
        kill -CONT "$w" 2>/dev/null
    done
    chaos_alive "$(cat "$dir/redis.pid" 2>/dev/null)" || chaos_redis_start
    chaos_alive "$(cat "$dir/mock.pid" 2>/dev/null)" || chaos_mock_start
    chaos_alive "$(chaos_master)" || chaos_serve_start
    chaos_event heal start ""
}
