#!/bin/sh
# test_deploy.sh: the deployment files of deploy/ say what they must and
# work where this machine can show it:
#   - every .yaml, .yml and .json parses;
#   - the Kubernetes manifests: probes on /readyz and /healthz, a preStop
#     that sends QUIT and waits, within a grace period longer than
#     drain_timeout, non-root with a read-only root and emptyDirs for
#     /run/reagent and /tmp, the ConfigMap and Secret the pods use (every
#     *_env the configuration names is a key of the Secret), Services
#     that select the pods, Redis as a StatefulSet (appendonly, a volume
#     claim template) behind the headless Service the configuration names;
#   - the compose file: Redis and two reagent replicas that wait for it to
#     be healthy, healthchecks, the keys from the environment;
#   - the Dockerfile: multi-stage on bookworm-slim, CI's build steps, a
#     non-root user; its package list out of deploy/deps.sh, and
#     runtime-deps.sh naming the packages of the libraries reagent loads;
#   - the systemd unit: Type=notify, reload by HUP, stop by QUIT, the
#     hardening options, and every system call the exec tool makes
#     allowed by its filter; `systemd-analyze verify` passes;
#   - the example configurations pass `reagent -t` (with a redis-server of
#     the test's own: -t connects to it);
#   - the logrotate file passes `logrotate -d`, and a forced rotation
#     under a running `reagent serve` makes it write to the new files:
#     the error log, and the API's access_log beside it.
#
# Run from the repository root by tests/run.sh with B=<build folder>.
# Needs no build for the file checks; those that run reagent say "# skip"
# without one.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

R=$B/reagent
tmp=$(cd "$tmp" && pwd -P)

# rg_skip_check WHAT WHY: a check this machine cannot make
rg_skip_check() {
    n=$((n + 1))
    echo "ok $n - $1 # skip $2"
}

# rg_wait_long FILE PATTERN: up to 60 s (a sanitizer build on a busy
# machine starts slowly) until FILE has a line matching PATTERN
rg_wait_long() {
    i=0
    while ! grep -Eq "$2" "$1" 2>/dev/null; do
        [ $i -lt 1200 ] || return 1
        sleep 0.05
        i=$((i + 1))
    done
}

# python3 with PyYAML (python3-yaml in deploy/deps.sh)
py=
for p in python3 /usr/bin/python3; do
    if "$p" -c 'import yaml' 2>/dev/null; then
        py=$p
        break
    fi
done
[ -n "$py" ] || rg_skip "no python3 with PyYAML (deploy/deps.sh: python3-yaml)"


# --- the files parse, and say what they must ------------------------------

# the checks print "ok|WHAT", "not ok|WHAT" and "#   detail" lines
"$py" - > "$tmp/checks.out" 2>&1 <<'PY'
import fnmatch, glob, json, os, re, subprocess, sys
import yaml

def check(what, cond, detail=None):
    print(("ok|" if cond else "not ok|") + what)
    if not cond and detail:
        for line in str(detail).splitlines():
            print("#   " + line)

def load(path):
    with open(path) as f:
        if path.endswith(".json"):
            return [json.load(f)]
        return [d for d in yaml.safe_load_all(f) if d is not None]

files = sorted(p for p in glob.glob("deploy/**/*", recursive=True)
               if p.endswith((".yaml", ".yml", ".json")))
check("deploy/ has YAML files to check", len(files) >= 7, files)
docs = {}
for p in files:
    try:
        docs[p] = load(p)
        check(p + " parses", len(docs[p]) > 0, "empty")
    except Exception as e:
        check(p + " parses", False, e)

def conf_value(text, name):
    m = re.search(r"^\s*" + name + r"\s+([^;#]+);", text, re.M)
    return m.group(1).strip() if m else None

def seconds(v):
    m = re.fullmatch(r"(\d+)(ms|s|m|h)?", v or "")
    if not m:
        return None
    k = {"ms": 0.001, None: 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]
    return int(m.group(1)) * k

def env_names(text):
    return set(re.findall(r"^\s*(?:auth_token_env|password_env|api_key_env)"
                          r"\s+(\S+);", text, re.M))

def get(d, *keys):
    for k in keys:
        if isinstance(d, dict):
            d = d.get(k)
        elif isinstance(d, list) and isinstance(k, int) and k < len(d):
            d = d[k]
        else:
            return None
    return d

# -- Kubernetes
k8s = []
for p in files:
    if p.startswith("deploy/k8s/") and p in docs:
        for d in docs[p]:
            k8s.append((p, d))

for p, d in k8s:
    name = get(d, "metadata", "name")
    check("%s: %s %s has apiVersion, kind and a name, no namespace"
          % (p, d.get("kind"), name),
          d.get("apiVersion") and d.get("kind")
          and (name or d.get("kind") == "Kustomization")
          and get(d, "metadata", "namespace") is None)

def kind(k, name=None):
    for p, d in k8s:
        if d.get("kind") == k and (name is None
                                   or get(d, "metadata", "name") == name):
            return d
    return None

kust = kind("Kustomization")
# the example Secret's placeholders would replace the real one
others = sorted(os.path.basename(p) for p in files
                if p.startswith("deploy/k8s/")
                and not p.endswith(("kustomization.yaml", "secret.yaml")))
check("kustomization.yaml lists every manifest but the example Secret",
      kust and sorted(kust.get("resources", [])) == others,
      "resources: %s, files: %s" % (kust and kust.get("resources"), others))

dep = kind("Deployment", "reagent")
cm = kind("ConfigMap")
sec = kind("Secret")
check("a Deployment reagent, a ConfigMap, a Secret", dep and cm and sec)
dep = dep or {}
pod = get(dep, "spec", "template", "spec") or {}
c = (pod.get("containers") or [{}])[0]
conf = (cm or {}).get("data", {}).get("reagent.conf", "")
check("the ConfigMap holds reagent.conf", "agent " in conf)

check("the Deployment runs 2 replicas", get(dep, "spec", "replicas") == 2)
labels = get(dep, "spec", "template", "metadata", "labels") or {}
sel = get(dep, "spec", "selector", "matchLabels") or {}
check("the Deployment's selector matches its pods",
      sel and all(labels.get(k) == v for k, v in sel.items()))
ports = {p.get("name"): p.get("containerPort") for p in c.get("ports", [])}
for probe, path in (("readinessProbe", "/readyz"),
                    ("livenessProbe", "/healthz")):
    hg = get(c, probe, "httpGet") or {}
    check("%s: GET %s on the API port" % (probe, path),
          hg.get("path") == path
          and 8080 in (ports.get(hg.get("port")), hg.get("port")), hg)
check("the API listens where the probes ask: listen 0.0.0.0:8080",
      re.search(r"^\s*listen\s+0\.0\.0\.0:8080;", conf, re.M))
pre = " ".join(get(c, "lifecycle", "preStop", "exec", "command") or [])
check("preStop sends QUIT to the master and waits for it to exit",
      re.search(r"kill -QUIT 1\b", pre) and "while kill -0 1" in pre, pre)
drain = seconds(conf_value(conf, "drain_timeout") or "30s")
grace = pod.get("terminationGracePeriodSeconds")
check("terminationGracePeriodSeconds (%s) > drain_timeout (%s) + 10"
      % (grace, drain), isinstance(grace, int) and grace > drain + 10)
psc = pod.get("securityContext") or {}
csc = c.get("securityContext") or {}
check("runAsNonRoot, as a user that is not root",
      psc.get("runAsNonRoot") is True and psc.get("runAsUser", 0) != 0)
check("readOnlyRootFilesystem, no privilege escalation, no capabilities",
      csc.get("readOnlyRootFilesystem") is True
      and csc.get("allowPrivilegeEscalation") is False
      and get(csc, "capabilities", "drop") == ["ALL"], csc)
vols = {v.get("name"): v for v in pod.get("volumes", [])}
mounts = {m.get("mountPath"): m.get("name") for m in c.get("volumeMounts", [])}
piddir = os.path.dirname(conf_value(conf, "pid") or "")
for path in (piddir, "/tmp"):
    check("an emptyDir at %s" % path,
          path and "emptyDir" in vols.get(mounts.get(path), {}), mounts)
check("the ConfigMap is mounted at /etc/reagent (the image's -c)",
      get(vols.get(mounts.get("/etc/reagent"), {}), "configMap", "name")
      == get(cm, "metadata", "name"))
check("the keys come from the Secret",
      any(get(e, "secretRef", "name") == get(sec, "metadata", "name")
          for e in c.get("envFrom", [])))
check("the Secret is an example in stringData",
      sec and "stringData" in sec and "data" not in sec)
names = env_names(conf)
keys = set((sec or {}).get("stringData", {}))
check("every *_env of reagent.conf is a key of the Secret (%s)"
      % " ".join(sorted(names)),
      names and names <= keys, "missing: %s" % (names - keys))
check("requests and limits set", get(c, "resources", "requests")
      and get(c, "resources", "limits"))

svc = kind("Service", "reagent")
check("Service reagent selects the pods, to ports the pods name",
      svc and all(labels.get(k) == v
                  for k, v in get(svc, "spec", "selector").items())
      and all(p.get("targetPort") in ports
              for p in get(svc, "spec", "ports")))

sts = kind("StatefulSet", "redis")
check("Redis is a StatefulSet", sts is not None)
sts = sts or {}
rsvc = kind("Service", get(sts, "spec", "serviceName"))
check("its Service is headless and names the StatefulSet's serviceName",
      rsvc and get(rsvc, "spec", "clusterIP") == "None")
server = conf_value(conf, "server") or ""
check("reagent.conf's store server is that Service (%s)" % server,
      rsvc and server == "%s:%s" % (get(rsvc, "metadata", "name"),
                                    get(rsvc, "spec", "ports", 0, "port")))
rc = get(sts, "spec", "template", "spec", "containers", 0) or {}
vct = [get(v, "metadata", "name")
       for v in get(sts, "spec", "volumeClaimTemplates") or []]
check("Redis keeps its data on a volume claim template, appendonly yes",
      vct and any(m.get("name") in vct for m in rc.get("volumeMounts", []))
      and "--appendonly yes" in " ".join(rc.get("command", [])
                                         + rc.get("args", [])))

# -- compose
cp = "deploy/docker/compose.yaml"
comp = (docs.get(cp) or [{}])[0]
svcs = comp.get("services", {})
def is_reagent(s):
    return (get(s, "build", "dockerfile") == "deploy/docker/Dockerfile"
            and "entrypoint" not in s)
reps = [k for k, s in svcs.items() if is_reagent(s)]
check("compose: redis and two reagent replicas (%s)" % " ".join(reps),
      "redis" in svcs and len(reps) == 2)
ctx = get(svcs, reps[0] if reps else "", "build", "context") or ""
check("compose: the build context is the repository root",
      os.path.isfile(os.path.join(os.path.dirname(cp), ctx, "configure")))
dconf = open("deploy/docker/reagent.conf").read()
dnames = env_names(dconf)
for k in reps:
    s = svcs[k]
    check("compose: %s waits for redis to be healthy" % k,
          get(s, "depends_on", "redis", "condition") == "service_healthy")
    check("compose: %s gets %s from the environment"
          % (k, " ".join(sorted(dnames))),
          dnames and dnames <= set(s.get("environment", {})))
    check("compose: %s stops with QUIT, after more than drain_timeout" % k,
          s.get("stop_signal") == "SIGQUIT"
          and (seconds(s.get("stop_grace_period")) or 0)
              > seconds(conf_value(dconf, "drain_timeout") or "30s"))
for k, s in svcs.items():
    check("compose: %s has a healthcheck" % k, "test" in
          (s.get("healthcheck") or {}))
for k, s in svcs.items():
    for dep_on, how in (s.get("depends_on") or {}).items():
        check("compose: %s waits for %s, which has a healthcheck"
              % (k, dep_on), "healthcheck" in svcs.get(dep_on, {}))
check("compose: redis appendonly yes",
      "--appendonly yes" in " ".join(get(svcs, "redis", "command") or []))
server = conf_value(dconf, "server") or ""
check("the image's reagent.conf names the compose redis (%s)" % server,
      server.split(":")[0] in svcs)
base = conf_value(dconf, "base_url") or ""
m = re.match(r"https?://([^:/]+)(?::(\d+))?", base)
check("the image's reagent.conf names the compose mock (%s)" % base,
      m and m.group(1) in svcs
      and m.group(2) in " ".join(svcs[m.group(1)].get("entrypoint", [])))

# -- the Dockerfile's ignore file leaves in what the build needs
ign = [l.strip() for l in open("deploy/docker/Dockerfile.dockerignore")
       if l.strip() and not l.startswith("#")]
try:
    tracked = subprocess.run(["git", "ls-files"], capture_output=True,
                             text=True, check=True).stdout.split()
except Exception:
    tracked = []
if tracked:
    def ignored(path):
        for pat in ign:
            if pat.startswith("**/"):
                if fnmatch.fnmatch(os.path.basename(path), pat[3:]):
                    return True
            elif fnmatch.fnmatch(path, pat) or path.startswith(pat + "/"):
                return True
        return False
    lost = [p for p in tracked if ignored(p)]
    check("Dockerfile.dockerignore leaves out no file of the repository",
          not lost, lost[:10])
else:
    print("skip|Dockerfile.dockerignore leaves out no file of the "
          "repository|git ls-files gave nothing (not a git checkout?)")
PY
if [ $? -ne 0 ] && ! grep -q '^not ok|' "$tmp/checks.out"; then
    rg_fail "the checks of deploy/ ran"
    sed 's/^/#   /' "$tmp/checks.out"
fi
while IFS= read -r line; do
    case $line in
        "ok|"*)      rg_ok "${line#ok|}" ;;
        "not ok|"*)  rg_fail "${line#not ok|}" ;;
        "skip|"*)    line=${line#skip|}
                     rg_skip_check "${line%%|*}" "${line#*|}" ;;
        "#"*)        echo "$line" ;;
    esac
done < "$tmp/checks.out"


# --- the Dockerfile ----------------------------------------------------------

D=deploy/docker/Dockerfile

rg_expect "Dockerfile: a build stage on debian:bookworm-slim" "$D" \
    '^FROM debian:bookworm-slim AS build$'
rg_equal "Dockerfile: two stages, both on debian:bookworm-slim" \
    "$(grep -c '^FROM debian:bookworm-slim' "$D")" 2
rg_expect "Dockerfile: ./configure, as CI" "$D" '^RUN \./configure( |$)'
rg_expect "Dockerfile: make -j, as CI" "$D" 'make -j"\$\(nproc\)"'
rg_expect "Dockerfile: make install DESTDIR" "$D" 'make install DESTDIR=/out'
rg_expect "Dockerfile: runs as a numeric user that is not root" "$D" \
    '^USER [1-9][0-9]*(:[1-9][0-9]*)?$'
rg_expect "Dockerfile: EXPOSE 8080" "$D" '^EXPOSE 8080( |$)'
rg_expect "Dockerfile: STOPSIGNAL SIGQUIT (docker stop drains)" "$D" \
    '^STOPSIGNAL SIGQUIT$'
rg_expect "Dockerfile: HEALTHCHECK on /healthz" "$D" \
    'CMD curl .*http://127\.0\.0\.1:8080/healthz'
rg_expect "Dockerfile: reagent serve --foreground by default" "$D" \
    '^CMD \["serve", "--foreground"\]$'
rg_expect "Dockerfile: the configuration its ENTRYPOINT names" "$D" \
    '^ENTRYPOINT \["/usr/local/bin/reagent", "-c", "/etc/reagent/reagent.conf"\]$'
rg_expect "the image's configuration logs on stderr" \
    deploy/docker/reagent.conf '^error_log +stderr'
rg_expect "the image's configuration: daemon off" \
    deploy/docker/reagent.conf '^daemon +off;'

# every file COPY takes from the context exists
missing=
for f in $(sed -n 's/^COPY \([^-][^ ]*\) .*/\1/p' "$D"); do
    [ "$f" = . ] || [ -e "$f" ] || missing="$missing $f"
done
rg_equal "Dockerfile: every file it copies exists" "${missing# }" ""

# every program the tests look for (command -v, or rg_need of
# tests/lib/rg_test_lib.sh) or use without asking (ps, pgrep, ss,
# setpriv) is installed by deploy/deps.sh: a fresh machine skips nothing
# for want of one
deps=$(sed -n '/^pkgs="/,/"$/p' deploy/deps.sh | tr -d '"' | sed 's/^pkgs=//')
used=$( (grep -rhoE 'command -v [a-z0-9_.-]+' tests --include='*.sh' \
            --exclude-dir=bench | sed 's/command -v //'
         grep -rhE '^ *rg_need( [a-z0-9_.-]+)+$' tests --include='*.sh' \
            --exclude-dir=bench | sed 's/^ *rg_need //' | tr ' ' '\n'
         echo ps; echo pgrep; echo ss; echo setpriv) | sort -u)
unlisted=
for c in $used; do
    case $c in
        redis-server)    p=redis-server ;;
        redis-cli)       p=redis-server ;;  # redis-tools, its dependency
        jq)              p=jq ;;
        curl)            p=curl ;;
        python3)         p=python3 ;;
        script)          p=bsdutils ;;
        npm)             p=npm ;;        # deps.sh installs it when missing
        systemd-analyze) p=systemd ;;
        ss)              p=iproute2 ;;
        ps|pgrep)        p=procps ;;
        logrotate)       p=logrotate ;;
        cc)              p=build-essential ;;
        sha256sum|nproc|dpkg|setpriv) p=essential ;;  # coreutils, dpkg, util-linux
        *)               p=unknown ;;
    esac
    case " $(echo $deps) npm essential " in
        *" $p "*) ;;
        *) unlisted="$unlisted $c($p)" ;;
    esac
done
rg_equal "deps.sh installs every program the tests use" "${unlisted# }" ""

# its package list, by its own command, out of deploy/deps.sh
cmd=$(sed -n 's/^RUN pkgs=\$(\(.*\)) \\$/\1/p' "$D")
pkgs=$(sh -c "$cmd" 2>&1 | tr -s ' \n' '  ')
bad=$(printf '%s\n' $pkgs | grep -Ev '^[a-z0-9][a-z0-9.+-]+$')
case " $pkgs " in
    *" build-essential "*" libevent-dev "*" libjansson-dev "*)
        if [ -n "$cmd" ] && [ -z "$bad" ]; then
            rg_ok "Dockerfile: deps.sh's package list, by the Dockerfile's command"
        else
            rg_fail "Dockerfile: deps.sh's package list: not package names: $bad"
        fi ;;
    *)
        rg_fail "Dockerfile: deps.sh's package list, by the Dockerfile's command"
        echo "#   command: $cmd"
        echo "#   got: $pkgs" ;;
esac

if [ -x "$R" ] && command -v dpkg >/dev/null 2>&1; then
    deploy/docker/runtime-deps.sh "$R" "$B"/modules/*.so "$B/rg_mock" \
        > "$tmp/runtime.out" 2>&1
    rc=$?
    ok=$rc
    for p in libevent-2.1-7 libcurl4 libjansson4 libmsgpackc2 libc6; do
        grep -qx "$p" "$tmp/runtime.out" || ok=1
    done
    if [ $ok -eq 0 ] && ! grep -q -- '-dev$' "$tmp/runtime.out"; then
        rg_ok "runtime-deps.sh: the packages of reagent's libraries, no -dev"
    else
        rg_fail "runtime-deps.sh: exit $rc"
        sed 's/^/#   /' "$tmp/runtime.out"
    fi

    # a library of no package: it says so and fails
    mkdir -p "$tmp/lib"
    jl=$(ldd "$R" | awk '/libjansson/ { print $3 }')
    cp "$jl" "$tmp/lib/"
    LD_LIBRARY_PATH=$tmp/lib deploy/docker/runtime-deps.sh "$R" \
        > "$tmp/runtime.bad" 2>&1
    rc=$?
    if [ $rc -ne 0 ] && grep -q "no package holds $tmp/lib/" "$tmp/runtime.bad"
    then
        rg_ok "runtime-deps.sh: a library no package holds fails the build"
    else
        rg_fail "runtime-deps.sh with a library of no package: exit $rc"
        sed 's/^/#   /' "$tmp/runtime.bad"
    fi
else
    rg_skip_check "runtime-deps.sh: the packages of reagent's libraries" \
        "no build in $B or no dpkg"
    rg_skip_check "runtime-deps.sh: a library no package holds" \
        "no build in $B or no dpkg"
fi


# --- the systemd unit --------------------------------------------------------

U=deploy/systemd/reagent.service
SC=deploy/systemd/reagent.conf

for want in 'Type=notify' 'NotifyAccess=main' \
            'ExecReload=/bin/kill -HUP $MAINPID' 'KillSignal=SIGQUIT' \
            'KillMode=mixed' 'Restart=on-failure' 'User=reagent' \
            'NoNewPrivileges=yes' 'ProtectSystem=strict' 'ProtectHome=yes' \
            'PrivateTmp=yes' 'PrivateDevices=yes' 'CapabilityBoundingSet=' \
            'RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6' \
            'SystemCallFilter=@system-service' 'RuntimeDirectory=reagent' \
            'LogsDirectory=reagent' 'StateDirectory=reagent' \
            'EnvironmentFile=-/etc/reagent/env'
do
    if grep -qxF -- "$want" "$U"; then
        rg_ok "reagent.service: $want"
    else
        rg_fail "reagent.service: $want"
    fi
done
rg_expect "reagent.service: ExecStartPre tests the configuration" "$U" \
    '^ExecStartPre=/usr/local/bin/reagent .*-t -c /etc/reagent/reagent.conf$'
rg_expect "reagent.service: ExecStart reagent serve, daemon off" "$U" \
    '^ExecStart=/usr/local/bin/reagent -c /etc/reagent/reagent.conf serve --foreground$'
rg_expect "reagent.sysusers creates the user" deploy/systemd/reagent.sysusers \
    '^u reagent '

nofile=$(sed -n 's/^LimitNOFILE=//p' "$U")
rg_check "reagent.service: LimitNOFILE=$nofile, thousands of sessions" \
    test "${nofile:-0}" -ge 16384
stop=$(sed -n 's/^TimeoutStopSec=\([0-9]*\)s*$/\1/p' "$U")
drain=$(sed -n 's/^drain_timeout *\([0-9]*\)s;.*/\1/p' "$SC")
rg_check "reagent.service: TimeoutStopSec=$stop > drain_timeout $drain" \
    test "${stop:-0}" -gt "${drain:-999}"
rg_expect "reagent.conf for systemd: the pid file in RuntimeDirectory" "$SC" \
    '^pid +/run/reagent/'
rg_expect "reagent.conf for systemd: the error log in LogsDirectory" "$SC" \
    '^error_log +/var/log/reagent/error\.log'
ns=$(sed -n 's/^RestrictNamespaces=//p' "$U")
rg_check "reagent.service: RestrictNamespaces=$ns lets exec's network off in" \
    sh -c "echo ' $ns ' | grep -q ' user ' && echo ' $ns ' | grep -q ' net '"

if command -v systemd-analyze >/dev/null 2>&1; then
    # the calls of the exec tool (modules/exec/): fork, limits, namespace,
    # Landlock, pidfds, waiting
    allowed=$(sed -n 's/^SystemCallFilter=//p' "$U" | tr ' ' '\n')
    : > "$tmp/calls"
    for g in $(printf '%s\n' $allowed | grep '^@'); do
        systemd-analyze syscall-filter "$g" >> "$tmp/calls" 2>/dev/null
    done
    # groups inside groups
    i=0
    while grep -q '^ *@' "$tmp/calls" && [ $i -lt 5 ]; do
        for g in $(sed -n 's/^ *\(@[a-z-]*\).*/\1/p' "$tmp/calls" | sort -u)
        do
            systemd-analyze syscall-filter "$g" 2>/dev/null
        done | grep -v '^ *@' > "$tmp/calls.more"
        grep -v '^ *@' "$tmp/calls" >> "$tmp/calls.more"
        mv "$tmp/calls.more" "$tmp/calls"
        i=$((i + 1))
    done
    printf '%s\n' $allowed | grep -v '^@' >> "$tmp/calls"
    lacks=
    for s in fork clone clone3 vfork execve wait4 waitid kill setrlimit \
             prlimit64 prctl unshare setgroups pidfd_open close_range \
             setpgid setsid landlock_create_ruleset landlock_add_rule \
             landlock_restrict_self socketpair pipe2 dup2
    do
        grep -Eq "^ *$s\$" "$tmp/calls" || lacks="$lacks $s"
    done
    rg_equal "reagent.service: SystemCallFilter allows the exec tool's calls" \
        "${lacks# }" ""

    if [ -x "$R" ]; then
        # verify checks that ExecStart's program exists: this build's
        mkdir -p "$tmp/unit"
        abs=$(cd "$B" && pwd)/reagent
        sed "s|/usr/local/bin/reagent|$abs|g" "$U" \
            > "$tmp/unit/reagent.service"
        (cd "$tmp/unit" && systemd-analyze verify ./reagent.service) \
            > "$tmp/verify.out" 2>&1
        rc=$?
        if [ $rc -eq 0 ] && ! grep -q 'reagent' "$tmp/verify.out"; then
            rg_ok "systemd-analyze verify reagent.service"
            sed 's/^/#   (not about this unit) /' "$tmp/verify.out"
        else
            rg_fail "systemd-analyze verify reagent.service: exit $rc"
            sed 's/^/#   /' "$tmp/verify.out"
        fi

        # and it says so of a unit that is wrong
        sed 's/^KillSignal=/KilSignal=/' "$tmp/unit/reagent.service" \
            > "$tmp/unit/bad.service"
        if (cd "$tmp/unit" && systemd-analyze verify ./bad.service) 2>&1 |
           grep -q "Unknown key.*KilSignal"
        then
            rg_ok "systemd-analyze verify: a wrong key is reported"
        else
            rg_fail "systemd-analyze verify: a wrong key is reported"
        fi
    else
        rg_skip_check "systemd-analyze verify reagent.service" \
            "no build in $B: ExecStart needs a program that exists"
    fi
else
    rg_skip_check "reagent.service: SystemCallFilter allows the exec tool's calls" \
        "no systemd-analyze"
    rg_skip_check "systemd-analyze verify reagent.service" "no systemd-analyze"
fi


# --- the example configurations pass reagent -t -----------------------------

have_redis=0
if command -v redis-server >/dev/null 2>&1; then
    # -t connects to the store: a redis-server with the password of the env
    export REDISCLI_AUTH=test-redis-pw
    rg_redis r --requirepass "$REDISCLI_AUTH"
    have_redis=1
fi
REAGENT_TOKEN=test-token
REDIS_PASSWORD=$REDISCLI_AUTH
OPENAI_API_KEY=sk-test
export REAGENT_TOKEN REDIS_PASSWORD OPENAI_API_KEY

# whether this build knows the http block
http=0
if [ -x "$R" ]; then
    cat > "$tmp/http.conf" <<'CONF'
http {
    listen 127.0.0.1:0;
    auth_token_env REAGENT_TOKEN;
    max_body 1m;
}
llm m { base_url http://127.0.0.1:9/v1; model mock-1; }
agent a { }
CONF
    "$R" -t -c "$tmp/http.conf" > "$tmp/http.out" 2>&1
    grep -q 'unknown directive "http"' "$tmp/http.out" || http=1
fi

mkdir -p "$tmp/log" "$tmp/run"
hport=$(rg_free_port)
mport=$(rg_free_port)

# rg_local_conf SRC DST: SRC with this test's folders, redis and one
# worker (and without its http block when this build has none)
rg_local_conf() {
    sed -e "s|/var/log/reagent|$tmp/log|g" -e "s|/run/reagent|$tmp/run|g" \
        -e "s|^\\( *\\)server .*;|\\1server unix:$redis_sock;|" \
        -e "s|^\\( *\\)listen .*;|\\1listen 127.0.0.1:$hport;|" \
        -e "s|^\\( *\\)metrics_listen .*;|\\1metrics_listen 127.0.0.1:$mport;|" \
        -e "s|^worker_processes .*|worker_processes 1;|" "$1" |
    if [ $http -eq 1 ]; then
        cat
    else
        awk '/^ *http *\{/ { skip = 1 } !skip { print }
             skip && /^ *\}/ { skip = 0 }'
    fi > "$2"
}

"$py" -c '
import sys, yaml
d = [x for x in yaml.safe_load_all(open("deploy/k8s/configmap.yaml")) if x]
sys.stdout.write(d[0]["data"]["reagent.conf"])' > "$tmp/k8s.conf.in" 2>&1

for c in deploy/systemd/reagent.conf deploy/docker/reagent.conf \
         "$tmp/k8s.conf.in"
do
    case $c in
        "$tmp"/*) what="the ConfigMap's reagent.conf" ;;
        *)        what=$c ;;
    esac
    if [ ! -x "$R" ]; then
        rg_skip_check "$what passes reagent -t" "no build in $B"
        continue
    fi
    if [ $have_redis -eq 0 ]; then
        rg_skip_check "$what passes reagent -t" "no redis-server"
        continue
    fi
    rg_local_conf "$c" "$tmp/t.conf"
    if "$R" -t -c "$tmp/t.conf" > "$tmp/t.out" 2>&1; then
        rg_ok "$what passes reagent -t"
    else
        rg_fail "$what passes reagent -t"
        sed 's/^/#   /' "$tmp/t.out"
    fi
    if [ $http -eq 0 ]; then
        rg_skip_check "$what: its http block" \
            "http block not yet in this build"
    fi
done


# --- logrotate ---------------------------------------------------------------

L=deploy/logrotate/reagent
rg_expect "logrotate: reagent's logs in LogsDirectory" "$L" \
    '^/var/log/reagent/\*\.log \{$'
rg_expect "logrotate: USR1 to the pid of the pid file" "$L" \
    'kill -USR1 "\$pid"'
rg_expect "logrotate: the pid file reagent.conf names" "$L" \
    "$(sed -n 's/^pid  *\([^;]*\);.*/\1/p' "$SC")"

if command -v logrotate >/dev/null 2>&1; then
    me="$(id -un) $(id -gn)"
    sed -e "s|/var/log/reagent|$tmp/log|g" -e "s|/run/reagent|$tmp/run|g" \
        -e "s|reagent reagent|$me|" "$L" > "$tmp/logrotate.conf"
    chmod 644 "$tmp/logrotate.conf"
    echo "a line" > "$tmp/log/error.log"
    logrotate -d -s "$tmp/lr.state" "$tmp/logrotate.conf" > "$tmp/lr.out" 2>&1
    rc=$?
    if [ $rc -eq 0 ] && ! grep -qi '^error' "$tmp/lr.out"; then
        rg_ok "logrotate -d accepts deploy/logrotate/reagent"
    else
        rg_fail "logrotate -d deploy/logrotate/reagent: exit $rc"
        sed 's/^/#   /' "$tmp/lr.out"
    fi

    if [ -x "$R" ] && [ $have_redis -eq 1 ]; then
        # a real rotation under reagent serve: the master and its worker
        # write to the new files after the postrotate's USR1 (the API's
        # access_log a file in the same folder, when this build has it)
        rg_local_conf "$SC" "$tmp/serve.conf"
        if [ $http -eq 1 ]; then
            sed "s|^\( *\)listen .*;|&\\
\1access_log $tmp/log/access.log;|" "$tmp/serve.conf" > "$tmp/s2.conf"
            mv "$tmp/s2.conf" "$tmp/serve.conf"
        fi
        rm -f "$tmp/log/error.log"
        "$R" -c "$tmp/serve.conf" serve --foreground > "$tmp/serve.out" 2>&1 &
        spid=$!
        pids="$pids $spid"
        rg_wait_long "$tmp/log/error.log" 'reading the queue'
        H=http://127.0.0.1:$hport
        if [ $http -eq 1 ]; then
            rg_wait_long "$tmp/log/error.log" 'answers on'
            curl -s -o /dev/null "$H/healthz?before"
        fi
        logrotate -f -s "$tmp/lr.state" "$tmp/logrotate.conf" \
            > "$tmp/lr.out" 2>&1
        rc=$?
        if [ $rc -eq 0 ] && [ -s "$tmp/log/error.log.1" ]; then
            rg_ok "logrotate -f: the log moved to error.log.1"
        else
            rg_fail "logrotate -f: exit $rc"
            sed 's/^/#   /' "$tmp/lr.out"
            ls -l "$tmp/log" | sed 's/^/#   /'
        fi
        if rg_wait_long "$tmp/log/error.log.1" 'reopening the logs'; then
            rg_ok "the postrotate's USR1 reached the master"
        else
            rg_fail "the postrotate's USR1 reached the master"
            sed 's/^/#   /' "$tmp/serve.out" "$tmp/log/error.log.1" \
                2>/dev/null | tail -n 20
        fi

        if [ $http -eq 1 ]; then
            # the worker reopened too: a request now is a line of the
            # new access log, and the old one keeps only what it had
            rg_wait_long "$tmp/log/error.log" 'worker [0-9]+: logs reopened'
            curl -s -o /dev/null "$H/healthz?after"
            rg_wait_long "$tmp/log/access.log" '"/healthz"'
            rg_equal "the worker reopened access_log: a request after USR1" \
                "$(grep -c '"/healthz"' "$tmp/log/access.log" 2>/dev/null)" 1
            rg_equal "  the rotated access log holds only the one before" \
                "$(grep -c '"/healthz"' "$tmp/log/access.log.1" 2>/dev/null)" 1
        else
            rg_skip_check "the worker reopened access_log" \
                "http block not yet in this build"
        fi

        # what they log from now on goes to the new file
        "$R" -c "$tmp/serve.conf" -s quit > "$tmp/quit.out" 2>&1
        rg_wait_gone "$spid" 60
        wait "$spid" 2>/dev/null
        rg_equal "reagent -s quit through the pid file: serve exits 0" "$?" 0
        rg_expect "the worker reopened its log: it drains in the new file" \
            "$tmp/log/error.log" 'worker [0-9]+: draining'
        rg_expect "the master reopened its log: it exits in the new file" \
            "$tmp/log/error.log" 'master process [0-9]+ exits'
    else
        rg_skip_check "logrotate -f under reagent serve" \
            "no build in $B or no redis-server"
    fi
else
    rg_skip_check "logrotate -d accepts deploy/logrotate/reagent" \
        "no logrotate (deploy/deps.sh)"
fi

rg_done
