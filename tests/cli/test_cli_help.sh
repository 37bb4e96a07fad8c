#!/bin/sh
# test_cli_help.sh: what reagent tells a user before anything runs: -h
# lists every option the command line accepts (each option string of the
# sources is looked for in it), -V and -t name the configuration file in
# use, and a configuration that says something reagent will not do is
# warned about: worker_processes in run and batch (one process), approve
# for a tool that is not dangerous.
#
# Run from the repository root by tests/run.sh with B=<build folder>.
# Prints "ok N - what" or "not ok N - what" per check (tests/lib/
# rg_test_lib.sh) and exits 1 if any check failed.

B=${B:-objs}
. tests/lib/rg_test_lib.sh


# -h: every option the sources compare a word with is in it, whatever
# the word is called (a, argv[i], opt, ...); "-" is stdin, and the
# options reagent gives the bundled mock (rg_run_mock.c) are not its own

"$R" -h > "$tmp/help" 2>&1
opts=$(grep -ho 'strcmp([^;"]*, *"-[^"]*"' src/*/*.c \
       | sed 's/.*"\(-[^"]*\)"$/\1/' \
       | grep -vx -e '-' -e '--listen-fd' -e '--quiet' | sort -u)
if [ -z "$opts" ]; then
    rg_fail "the options are found in src/"
fi
# the widened search still finds the options of each form
for o in -c -t --concurrency --call --foreground; do
    case " $(echo $opts) " in
        *" $o "*) ;;
        *) rg_fail "the search of src/ finds $o" ;;
    esac
done
missing=
for o in $opts; do
    if ! grep -Eq -- "(^|[^a-z-])$o([^a-z-]|$)" "$tmp/help"; then
        missing="$missing $o"
    fi
done
if [ -z "$missing" ]; then
    rg_ok "-h lists every option: $(echo $opts)"
else
    rg_fail "-h lists every option; missing:$missing"
fi


# -V and -t: which configuration

"$R" -V > "$tmp/v" 2>&1
rg_has "-V names the configuration file found" "$tmp/v" \
    "configuration file: conf/reagent.conf (the first found of "
"$R" -V -c "$tmp/x.conf" > "$tmp/v" 2>&1
rg_has "-V names the one -c gives" "$tmp/v" \
    "configuration file: $tmp/x.conf (-c)"
(cd "$tmp" && "$OLDPWD/$R" -V > "$tmp/v" 2>&1)
rg_has "-V says when none is found" "$tmp/v" \
    "configuration file: none found (looked for "
"$R" -t > "$tmp/t" 2>&1
rg_has "-t names the file it tested" "$tmp/t" \
    "configuration file conf/reagent.conf test is successful"


# worker_processes: run and batch work in one process

cat > "$tmp/workers.conf" <<'CONF'
worker_processes 4;
llm m { base_url http://127.0.0.1:9/v1; model mock-1; }
agent a { }
CONF

"$R" -c "$tmp/workers.conf" run --mock "hi" > /dev/null 2> "$tmp/w.err"
rg_has "worker_processes 4 with run: a warning says it is not used" \
    "$tmp/w.err" '[warn]'
rg_has "... and why" "$tmp/w.err" \
    '"worker_processes 4" is not used: run, batch and replay work in one process (worker_processes is for reagent serve)'
echo '{"input":"x"}' | "$R" -c "$tmp/workers.conf" batch --mock - \
    > /dev/null 2> "$tmp/w.err"
rg_has "worker_processes 4 with batch: the same warning" "$tmp/w.err" \
    '"worker_processes 4" is not used'
"$R" -c "$tmp/workers.conf" -t > /dev/null 2> "$tmp/w.err"
rg_has_not "worker_processes 4 with -t: no warning (serve will use it)" \
    "$tmp/w.err" 'worker_processes'


# approve names a tool that is not dangerous

mkdir "$tmp/root"
cat > "$tmp/approve.conf" <<CONF
load_module calc.so;
load_module exec.so;
module exec { root $tmp/root; }
llm m { base_url http://127.0.0.1:9/v1; model mock-1; }
agent a {
    tools    calc exec;
    approve  exec calc;
}
CONF

"$R" -c "$tmp/approve.conf" -t > /dev/null 2> "$tmp/a.err"
rg_has "approve calc: a warning that it changes nothing" "$tmp/a.err" \
    'agent "a": "approve calc" changes nothing: calc is not dangerous, and only dangerous tools wait for approval in '"$tmp"'/approve.conf:5'
rg_has_not "approve exec: no warning" "$tmp/a.err" '"approve exec"'


# README: one way to write the binary, and the configuration lookup

bad=$(grep -n '^    objs/reagent' README.md)
if [ -z "$bad" ]; then
    rg_ok "README's examples write reagent, not objs/reagent"
else
    rg_fail "README's examples write reagent, not objs/reagent"
    echo "$bad" | sed 's/^/#   /'
fi
rg_has "README says how to run the built binary" README.md \
    '`make` leaves the binary at `objs/reagent`'
tr '\n' ' ' < README.md | sed 's/  */ /g' > "$tmp/readme"
rg_has "README: without -c the first configuration found is used" \
    "$tmp/readme" 'Without `-c`, reagent uses the first of these that exists, and reads only that one'
rg_has "README: -V and -t print which configuration file" "$tmp/readme" \
    '`reagent -V` and `reagent -t` print which file they used'
"$R" -V > "$tmp/v" 2>&1
rg_has "-V prints the configuration file and how it was found" "$tmp/v" \
    'configuration file: '
"$R" -t > "$tmp/t" 2>&1
rg_has "-t names the configuration file it tested" "$tmp/t" \
    'configuration file '


rg_done
