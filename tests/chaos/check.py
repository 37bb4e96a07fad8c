#!/usr/bin/env python3
# check.py: the checker of a chaos run (tests/chaos/chaos.sh), over what
# the run wrote in its folder and nothing else:
#
#   history.jsonl     what was submitted, by which client, when, and what
#                     each submission answered (ok, fail, info: unknown);
#                     the nemesis's events; every result that came back,
#                     when, and through what: submit --wait ("wait"),
#                     `reagent results --follow` all along ("follow"),
#                     `reagent results` at the end ("final"), GET
#                     /v1/tasks/ID of a task with no other ("get")
#   sweep.jsonl       for each task with no result: what Redis still holds
#                     of it (its mark, its session's status, its result,
#                     its entry in the shard) and what GET /v1/tasks/ID
#                     answers
#   counters.json     the side effects, as the count plugin counted them in
#                     a Redis of its own: count:chaos:<idempotency key>,
#                     the key being <session>:<round>:<call>, the session
#                     named after the task (rg_stream_session_id)
#   requests.log      every request the mock model got (what the model was
#                     told: "outcome unknown", "did not run")
#   error.log, serve.out   reagent's logs (the tasks it says it lost)
#
#     check.py collect DIR --reagent BIN --conf FILE --redis PORT
#                          --counter SOCK [--api URL]
#         adds the results at the end to the history, writes sweep.jsonl
#         and counters.json
#     check.py check DIR [--name NAME] [--seed S] [--json FILE]
#         prints the run's row and what it found; exits 1 when a task
#         accepted was lost without reagent saying so, is stuck, a side
#         effect ran twice without its outcome said unknown, or a result
#         is wrong
#     check.py table FILE...
#         the rows of several runs (their --json files) as one table

import hashlib
import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request


# what the model script answers last (tests/chaos/chaos.sh writes it)
ANSWER = "done: counted"
FINAL = ("done", "failed", "max_rounds", "budget_exceeded",
         "deadline_exceeded", "loop_detected", "cancelled", "filtered",
         "invalid", "approval_timed_out")

# what src/agent/rg_turn.c tells the model of a side effect in doubt
UNKNOWN_RE = re.compile(r"^outcome unknown: count may or may not have "
                        r"completed before a restart \(idempotency key "
                        r"(t-[0-9a-f]+):(\d+):([^)]+)\)")
NOT_RUN_RE = re.compile(r"^error: (count )?did not run")

# a line of reagent's log that says tasks were lost (their results will
# never come): naming them ("task ID lost", "lost task ID", "tasks lost:
# ID, ID") or counting them ("N tasks lost", "lost N tasks"); not a
# session's lease, a connection or events, which are other losses
LOST_ID_RES = (
    re.compile(r"\btask \"?([A-Za-z0-9._:-]+)\"? (?:was |is |has been )?"
               r"lost\b"),
    re.compile(r"\blost task \"?([A-Za-z0-9._:-]+)\"?"),
)
LOST_LIST_RE = re.compile(r"\btasks? (?:were |was )?lost[^:]*: (.*)$")
# the ledger's (src/queue/rg_stream_ledger.c): "N tasks that this worker
# queued or took were lost with the store's memory (…): ID, ID"
LEDGER_RE = re.compile(r"queued or took (?:was|were) lost with the store's "
                       r"memory \(.*\): (.*)$")
LOST_COUNT_RES = (
    re.compile(r"\b(\d+) (?:queued |accepted |running )?tasks? "
               r"(?:\w+ )?(?:were |was |are |is |have been )?lost\b"),
    re.compile(r"\blost (\d+) (?:queued |accepted |running )?tasks?\b"),
)
NOT_A_TASK_LOSS = re.compile(r"lease|connection|events? (?:are|is|were) "
                             r"lost|redis \S+ lost|its answer was lost|"
                             r"queued again|if this worker stops")
# a loss said of a class of tasks, without their names: "the store lost
# its memory: … lost for good: tasks queued and not yet taken by a worker"
# (src/serve/rg_serve_lost.c): the tasks queued before it and never taken
# by a worker are the ones it speaks of
LOST_CLASS_RE = re.compile(r"lost for good: tasks queued and not yet taken")
# the store's loss while no worker ran, said by the first that starts
# (src/store/rg_store_epoch.c): every task accepted before it and not
# ended is one it speaks of, taken by a worker or not
LOST_AWAY_RE = re.compile(r"lost its memory while no worker of this serve "
                          r"ran")
LOG_TIME_RE = re.compile(r"^(\d{4})/(\d\d)/(\d\d) (\d\d):(\d\d):(\d\d) ")


def sid_of(task_id):
    return "t-" + hashlib.sha256(b"task\0" + task_id.encode()).hexdigest()[:32]


def read_jsonl(path):
    out = []
    try:
        with open(path, errors="replace") as f:
            for line in f:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    except OSError:
        pass
    return out


def run(argv, stdin=None, timeout=60):
    try:
        p = subprocess.run(argv, input=stdin, capture_output=True,
                           timeout=timeout, text=True)
        return p.returncode, p.stdout, p.stderr
    except (OSError, subprocess.TimeoutExpired) as e:
        return -1, "", str(e)


# collect ---------------------------------------------------------------

def history_ids(d):
    """every task submitted, once, in the order of its first attempt"""
    ids = {}
    for h in read_jsonl(os.path.join(d, "history.jsonl")):
        if h.get("type") == "invoke":
            for i in h.get("ids", []):
                ids.setdefault(i, None)
    return list(ids)


def history_results(d):
    """(via, result) of each result the history holds"""
    out = []
    for h in read_jsonl(os.path.join(d, "history.jsonl")):
        r = h.get("r")
        if h.get("type") == "result" and isinstance(r, dict) \
           and r.get("status") in FINAL and "id" in r:
            out.append((h.get("via"), r))
    return out


def append_history(d, recs):
    with open(os.path.join(d, "history.jsonl"), "a") as f:
        for rec in recs:
            f.write(json.dumps(rec, separators=(",", ":")) + "\n")


def now_ms():
    return int(time.time() * 1000)


def collect(d, args):
    # the results stream as it is at the end: into the history too
    rc, out, err = run([args["--reagent"], "-c", args["--conf"], "results"])
    with open(os.path.join(d, "final-results.jsonl"), "w") as f:
        f.write(out)
    if rc != 0:
        sys.stderr.write("check.py: reagent results: %s" % err)
    t = now_ms()
    append_history(d, [{"t": t, "type": "result", "via": "final", "r": r}
                       for r in read_jsonl(os.path.join(
                           d, "final-results.jsonl"))])

    ids = history_ids(d)
    got = set(r["id"] for _, r in history_results(d))
    missing = [i for i in ids if i not in got]

    # what Redis holds of each task without a result, in one pipeline
    port = args["--redis"]
    cmds = []
    for i in missing:
        s = sid_of(i)
        cmds.append("EXISTS rg:{%s}:task" % s)
        cmds.append("HGET rg:{%s}:meta status" % s)
        cmds.append("GET rg:{%s}:result" % s)
    rc, out, err = run(["redis-cli", "-p", port], "\n".join(cmds) + "\n")
    lines = out.split("\n")

    shard = {}
    rc2, out2, _ = run(["redis-cli", "-p", port, "--no-raw", "XRANGE",
                        "rg:{q:tasks:0}", "-", "+"])
    for i in missing:
        if ('"%s"' % i) in out2 or ("\\\"%s\\\"" % i) in out2:
            shard[i] = True

    api = args.get("--api")
    gets = []
    with open(os.path.join(d, "sweep.jsonl"), "w") as f:
        for k, i in enumerate(missing):
            row = {"id": i, "sid": sid_of(i)}
            if rc == 0 and len(lines) >= 3 * k + 3:
                row["mark"] = lines[3 * k].strip() == "1"
                row["meta"] = lines[3 * k + 1].strip() or None
                row["result"] = lines[3 * k + 2].strip() or None
            else:
                row["redis_error"] = err.strip()[:200]
            row["in_shard"] = shard.get(i, False)
            if api:
                g = api_get(api, i)
                row["get"] = g
                if g.get("status") in FINAL:
                    gets.append({"t": now_ms(), "type": "result",
                                 "via": "get", "r": dict(g["body"],
                                                         id=i)})
            f.write(json.dumps(row) + "\n")
    append_history(d, gets)

    # the side effects, as counted apart from reagent
    sock = args["--counter"]
    rc, out, err = run(["redis-cli", "-s", sock, "--scan", "--pattern",
                        "count:chaos*"])
    keys = [k for k in out.split("\n") if k]
    counters = {}
    if keys:
        rc, out, err = run(["redis-cli", "-s", sock],
                           "\n".join("GET %s" % k for k in keys) + "\n")
        vals = out.split("\n")
        for k, v in zip(keys, vals):
            try:
                counters[k] = int(v)
            except ValueError:
                counters[k] = v
    with open(os.path.join(d, "counters.json"), "w") as f:
        json.dump(counters, f, indent=0, sort_keys=True)

    return 0


def api_get(api, i):
    try:
        with urllib.request.urlopen("%s/v1/tasks/%s" % (api, i),
                                    timeout=3) as r:
            body = r.read().decode(errors="replace")
            code = r.status
    except urllib.error.HTTPError as e:
        body = e.read().decode(errors="replace")
        code = e.code
    except (OSError, ValueError) as e:
        return {"code": 0, "error": str(e)[:120]}
    try:
        j = json.loads(body)
    except ValueError:
        j = {"body": body[:120]}
    return {"code": code, "status": j.get("status"),
            "answer": j.get("answer"), "body": j,
            "error": (j.get("error") or {}).get("code")
            if isinstance(j.get("error"), dict) else j.get("error")}


# check -----------------------------------------------------------------

def named_losses(d, ids):
    """the tasks reagent says it lost (its log, `reagent queue`): by id,
    in counts beyond the ids a line names (the largest a file says: the
    log and `reagent queue` say the same losses), and as a class (the
    times it said so)"""
    by_id = {}
    counted = 0
    lines = []
    classes = []
    away = []
    idset = set(ids)
    for path in (os.path.join(d, "error.log"), os.path.join(d, "serve.out"),
                 os.path.join(d, "queue.txt")):
        try:
            f = open(path, errors="replace")
        except OSError:
            continue
        in_file = 0
        with f:
            for line in f:
                if "lost" not in line:
                    continue
                for rx, into in ((LOST_CLASS_RE, classes),
                                 (LOST_AWAY_RE, away)):
                    if rx.search(line):
                        m = LOG_TIME_RE.match(line)
                        if m:
                            into.append(1000 * int(time.mktime(tuple(
                                int(x) for x in m.groups()) + (0, 0, -1))))
                            lines.append(line.strip())
                if NOT_A_TASK_LOSS.search(line):
                    continue
                named_here = set()
                for rx in LOST_ID_RES:
                    for m in rx.finditer(line):
                        if m.group(1) in idset:
                            named_here.add(m.group(1))
                m = LOST_LIST_RE.search(line) or LEDGER_RE.search(line)
                if m:
                    for tok in re.split(r"[,\s\"()]+", m.group(1)):
                        if tok in idset:
                            named_here.add(tok)
                n = 0
                for rx in LOST_COUNT_RES:
                    m = rx.search(line)
                    if m:
                        n = int(m.group(1))
                        break
                for i in named_here:
                    by_id[i] = line.strip()
                in_file += max(0, n - len(named_here))
                if named_here or n:
                    lines.append(line.strip())
        counted = max(counted, in_file)
    return by_id, counted, lines, classes, away


def log_summary(d, limit):
    """reagent's warnings and worse, each message once with its count,
    numbers and names made alike"""
    seen = {}
    order = []
    for path in (os.path.join(d, "error.log"),):
        try:
            f = open(path, errors="replace")
        except OSError:
            continue
        with f:
            for line in f:
                m = re.match(r"^\S+ \S+ \[(warn|error|crit|alert|emerg)\] "
                             r"\d+#\d+: (.*)$", line.strip())
                if not m:
                    continue
                msg = m.group(2)
                msg = re.sub(r", agent: .*$", "", msg)
                msg = re.sub(r"\bt-[0-9a-f]{32}\b", "t-…", msg)
                msg = re.sub(r"\b[0-9]+-[0-9]+\b", "N-N", msg)
                msg = re.sub(r"\b\d+(\.\d+)?\b", "N", msg)
                msg = re.sub(r"\bc\d{4,}\b", "cN", msg)
                key = (m.group(1), msg)
                if key not in seen:
                    seen[key] = 0
                    order.append(key)
                seen[key] += 1
    order.sort(key=lambda k: -seen[k])
    return [(seen[k], k[0], k[1]) for k in order[:limit]]


def check(d, name, seed, json_out):
    hist = read_jsonl(os.path.join(d, "history.jsonl"))
    via = {}
    answers = {}
    why = {}
    before = set()
    retried = set()
    events = []
    for h in hist:
        t = h.get("type")
        if t == "invoke":
            for i in h.get("ids", []):
                via.setdefault(i, h.get("via"))
                if h.get("try"):
                    retried.add(i)
        elif t in ("ok", "fail", "info") and "id" in h:
            answers.setdefault(h["id"], []).append(t)
            if h.get("before"):
                before.add(h["id"])
            if "why" in h:
                why[h["id"]] = h["why"]
        elif t == "nemesis":
            events.append(h)

    # a task is queued when any attempt says so (or says reagent has it);
    # refused when every attempt was refused; else nobody can tell
    outcome = {}
    for i in via:
        a = answers.get(i, [])
        outcome[i] = ("ok" if "ok" in a else "info" if "info" in a or not a
                      else "fail")
    ids = list(via)
    idset = set(ids)

    # results: every one that came back, from any client, kept per task
    results = {}
    strays = set()
    for src, r in history_results(d):
        i = r["id"]
        if i not in idset:
            strays.add(i)
            continue
        results.setdefault(i, []).append((src, r))

    sweep = {r["id"]: r for r in read_jsonl(os.path.join(d, "sweep.jsonl"))}

    try:
        with open(os.path.join(d, "counters.json")) as f:
            counters = json.load(f)
    except (OSError, ValueError):
        counters = {}

    # what the model was told, from the mock's own log of requests
    told_unknown = {}
    told_not_run = set()
    asked = {}
    by_sid = {sid_of(i): i for i in ids}
    for req in read_jsonl(os.path.join(d, "requests.log")):
        msgs = (req.get("body") or {}).get("messages") or []
        tid = None
        for m in msgs:
            if m.get("role") == "user" and isinstance(m.get("content"), str) \
               and m["content"].startswith("chaos "):
                tid = m["content"][6:].strip()
                break
        if tid is None:
            continue
        asked[tid] = asked.get(tid, 0) + 1
        for m in msgs:
            if m.get("role") != "tool" or not isinstance(m.get("content"),
                                                        str):
                continue
            u = UNKNOWN_RE.match(m["content"])
            if u:
                told_unknown[by_sid.get(u.group(1), tid)] = m["content"]
            elif NOT_RUN_RE.match(m["content"]):
                told_not_run.add(tid)

    def ran(i):
        return counters.get("count:chaos:%s:1:c1" % sid_of(i), 0)

    named_ids, named_count, lost_lines, lost_classes, lost_away = \
        named_losses(d, ids)
    accepted_at = {}
    for h in hist:
        if h.get("type") == "ok" and "id" in h:
            accepted_at.setdefault(h["id"], h.get("t", 0))

    # each task accepted: definitely (ok), or as its traces show (a
    # result, a model request, a side effect, a mark in the store)
    row = {"name": name, "seed": seed, "submitted": len(ids),
           "ok": 0, "fail": 0, "info": 0, "ended": {}, "lost": 0,
           "named": 0, "stuck": 0, "twice": 0, "twice_unsaid": 0,
           "unknown": 0, "unknown_ran": 0, "wrong": 0}
    lost, stuck, named, twice, wrong, refused_ran = [], [], [], [], [], []
    marked_only = []

    for i in ids:
        row[outcome[i]] += 1
        s = sweep.get(i, {})
        g = s.get("get") or {}
        trace = bool(s.get("mark") or s.get("meta") or s.get("result")
                     or s.get("in_shard")
                     or (g.get("code") == 200 and g.get("status")))
        # accepted: reagent said so to a client, or the task ran, or its
        # entry or session is in the store; a mark alone is not (it is set
        # before the entry is added, and stays when that fails)
        accepted = (outcome[i] == "ok" or i in results or i in asked
                    or ran(i) > 0 or s.get("in_shard") or s.get("meta"))
        if not accepted and s.get("mark"):
            marked_only.append((i, outcome[i], g.get("status")))

        if outcome[i] == "fail" and (i in results or ran(i) > 0):
            refused_ran.append(i)

        if i in results:
            rs = results[i]
            st = rs[0][1].get("status")
            row["ended"][st] = row["ended"].get(st, 0) + 1
            forms = set((r.get("status"), r.get("answer")) for _, r in rs)
            if len(forms) > 1:
                wrong.append((i, "results differ: %s" % sorted(
                    forms, key=str)))
            elif st == "done" and rs[0][1].get("answer") != ANSWER:
                wrong.append((i, "answer %r" % rs[0][1].get("answer")))

        elif accepted:
            # said in a log, or by the task's own result (GET: "lost")
            if i in named_ids or g.get("status") == "lost":
                named.append(i)
            elif trace:
                stuck.append((i, s))
            else:
                lost.append(i)

        if ran(i) >= 2:
            twice.append(i)

    # a loss said of the tasks queued and not taken: those accepted before
    # it (a second's slack: the log's clock has seconds) and never taken
    if lost_classes and lost:
        keep = []
        for i in lost:
            at = accepted_at.get(i)
            if at is not None and i not in asked and any(
                    at <= c + 1000 for c in lost_classes):
                named.append(i)
            else:
                keep.append(i)
        lost = keep

    # a loss said while no worker ran: every task accepted before it
    if lost_away and lost:
        keep = []
        for i in lost:
            at = accepted_at.get(i)
            if at is not None and any(at <= c + 1000 for c in lost_away):
                named.append(i)
            else:
                keep.append(i)
        lost = keep

    # a count of losses said without names covers as many unnamed ones
    if named_count and lost:
        k = min(named_count, len(lost))
        named.extend(lost[:k])
        lost = lost[k:]

    row["lost"] = len(lost)
    row["named"] = len(named)
    row["stuck"] = len(stuck)
    row["twice"] = len(twice)
    row["twice_unsaid"] = len([i for i in twice if i not in told_unknown])
    row["unknown"] = len([i for i in told_unknown if i in idset])
    row["unknown_ran"] = len([i for i in told_unknown
                              if i in idset and ran(i) > 0])
    row["not_run_said"] = len(told_not_run & idset)
    row["wrong"] = len(wrong) + len(strays)
    row["accepted_no_result"] = len(lost) + len(named) + len(stuck)

    total = counters.get("count:chaos", 0)
    per_task = sum(v for k, v in counters.items()
                   if k.startswith("count:chaos:") and isinstance(v, int))
    known = set("count:chaos:%s:1:c1" % sid_of(i) for i in ids)
    stray_keys = [k for k in counters if k.startswith("count:chaos:")
                  and k not in known]
    row["side_effects"] = total
    row["model_calls"] = sum(asked.values())

    bad = []
    if row["lost"]:
        bad.append("lost")
    if row["stuck"]:
        bad.append("stuck")
    if row["twice_unsaid"]:
        bad.append("twice")
    if row["wrong"]:
        bad.append("wrong")
    row["verdict"] = "FAIL (%s)" % ", ".join(bad) if bad else "pass"

    print(format_row(row))

    # what it found, for a reader: lines that start with "#"
    def say(fmt, *a):
        print("#   " + (fmt % a if a else fmt))

    say("submissions: %d ok, %d refused, %d unknown (%s); %d submitted "
        "again after an unknown answer, %d of them answered \"submitted "
        "before\"", row["ok"], row["fail"], row["info"],
        ", ".join("%s %d" % (v, list(via.values()).count(v))
                  for v in ("cli", "wait", "http")), len(retried),
        len(before & retried))
    stuck_before = [i for i, _ in stuck if i in before] + \
        [i for i in lost if i in before]
    if stuck_before:
        say("no result though reagent answered \"submitted before\" to "
            "a retry: %d, e.g. %s", len(stuck_before), stuck_before[0])
    say("side effects: %d executions counted for %d tasks (%d tasks ran "
        "none); model requests: %d", total,
        len([i for i in ids if ran(i) > 0]),
        len([i for i in ids if ran(i) == 0]), row["model_calls"])
    if total != per_task or stray_keys:
        say("side effects not of one task's call: %d (counted %d, per "
            "task %d)", len(stray_keys), total, per_task)
    reasons = {}
    for i, rs in results.items():
        r = rs[0][1]
        if r.get("status") != "done":
            why_ = re.sub(r"\d+(\.\d+)?", "N", str(r.get("error")
                                                   or r.get("reason")))
            k = "%s: %s" % (r.get("status"), why_[:120])
            reasons[k] = reasons.get(k, 0) + 1
    for k, n in sorted(reasons.items(), key=lambda kv: -kv[1])[:3]:
        say("ended %s (%d)", k, n)
    nem = {}
    for e in events:
        if e.get("phase", "start") == "start" and e.get("f") != "heal":
            nem[e.get("f")] = nem.get(e.get("f"), 0) + 1
    if nem:
        say("nemesis: %s", ", ".join("%s ×%d" % kv for kv in
                                     sorted(nem.items())))
    if told_unknown:
        say("outcome unknown said for %d tasks: %d of them had run, %d had "
            "not", row["unknown"], row["unknown_ran"],
            row["unknown"] - row["unknown_ran"])
    if told_not_run:
        say("\"did not run\" said for %d tasks", len(told_not_run))
    if lost:
        say("lost (no result, nothing in Redis, nothing said): %d, e.g. %s",
            len(lost), " ".join(lost[:8]))
    if named:
        say("named lost by reagent: %d", len(named))
    if lost_lines:
        for l in lost_lines[:3]:
            say("reagent said: %s", l[:200])
    elif lost:
        say("reagent said no task was lost (no line of its log says so)")
    for i, s in stuck[:5]:
        g = s.get("get") or {}
        say("stuck: %s (mark %s, session %s, in the shard %s, GET %s %s)",
            i, "yes" if s.get("mark") else "no", s.get("meta") or "none",
            "yes" if s.get("in_shard") else "no", g.get("code"),
            g.get("status") or g.get("error") or "")
    for i in twice[:5]:
        say("ran %d times: %s (%s)", ran(i), i,
            "outcome unknown said" if i in told_unknown else "nothing said")
    for i, w in wrong[:5]:
        say("wrong: %s: %s", i, w[:160])
    if strays:
        say("results for tasks never submitted: %s", " ".join(
            sorted(strays)[:5]))
    only_get = [i for i, rs in results.items()
                if all(src == "get" for src, _ in rs)]
    if only_get:
        say("ended, but never on the results stream (GET /v1/tasks found "
            "the result): %d, e.g. %s", len(only_get), only_get[0])
    if marked_only:
        say("not accepted (%s), yet marked in Redis and GET /v1/tasks says "
            "%s, with no entry to run it: %d, e.g. %s",
            "/".join(sorted(set({"fail": "refused", "info": "unknown"}
                                .get(o, o) for _, o, _ in marked_only))),
            "/".join(sorted(set(str(st) for _, _, st in marked_only))),
            len(marked_only), marked_only[0][0])
    if refused_ran:
        say("refused at submission, yet ran: %d, e.g. %s (%s)",
            len(refused_ran), refused_ran[0], why.get(refused_ran[0], ""))
    for n, level, msg in log_summary(d, 6):
        say("log %s ×%d: %s", level, n, msg[:170])

    if json_out:
        with open(json_out, "w") as f:
            json.dump(row, f)

    return 1 if bad else 0


COLS = ("nemesis", "seed", "subm", "ok", "unkn", "ended", "lost", "named",
        "stuck", "twice", "unknown", "wrong", "verdict")


def header():
    return ("%-16s %6s %5s %5s %4s  %-24s %5s %5s %5s %9s %7s %5s  %s"
            % COLS)


def format_row(r):
    ended = ", ".join("%s %d" % (k, v) for k, v in
                      sorted(r["ended"].items(), key=lambda kv: -kv[1]))
    return ("%-16s %6s %5d %5d %4d  %-24s %5d %5d %5d %9s %7s %5d  %s"
            % (r["name"], r["seed"], r["submitted"], r["ok"], r["info"],
               ended or "-", r["lost"], r["named"], r["stuck"],
               "%d (%d)" % (r["twice"], r["twice_unsaid"]),
               "%d/%d" % (r["unknown"], r["unknown_ran"]), r["wrong"],
               r["verdict"]))


def table(paths):
    print(header())
    bad = 0
    for p in paths:
        try:
            with open(p) as f:
                r = json.load(f)
        except (OSError, ValueError):
            continue
        print(format_row(r))
        if r["verdict"] != "pass":
            bad = 1
    return bad


def options(argv):
    args = {}
    rest = []
    i = 0
    while i < len(argv):
        if argv[i].startswith("--") and i + 1 < len(argv):
            args[argv[i]] = argv[i + 1]
            i += 2
        else:
            rest.append(argv[i])
            i += 1
    return args, rest


def main(argv):
    if len(argv) < 2:
        sys.stderr.write("usage: check.py collect|check|table|header ...\n")
        return 2
    cmd = argv[1]
    args, rest = options(argv[2:])
    if cmd == "header":
        print(header())
        return 0
    if cmd == "table":
        return table(rest)
    if not rest:
        sys.stderr.write("check.py: %s DIR\n" % cmd)
        return 2
    if cmd == "collect":
        return collect(rest[0], args)
    if cmd == "check":
        return check(rest[0], args.get("--name", "?"),
                     args.get("--seed", "?"), args.get("--json"))
    sys.stderr.write("check.py: unknown command %s\n" % cmd)
    return 2


if __name__ == "__main__":
    import signal
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)   # | head: quietly
    sys.exit(main(sys.argv))
