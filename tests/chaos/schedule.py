#!/usr/bin/env python3
# schedule.py: the seeded schedule of one chaos run (tests/chaos/chaos.sh):
# when the tasks are submitted, by which client, and when the nemesis
# strikes, what and for how long. The same seed, nemesis, length and
# number of tasks give the same schedule, line for line (Python's
# Mersenne Twister, of which only random() is used: stable across
# Python 3 versions); what the system does under it is not repeated
# exactly, since the processes run at the machine's pace.
#
#     schedule.py SEED NEMESIS DURATION_MS TASKS
#
# One line per action, sorted by time: "AT_MS ACTION ARGS...":
#     submit cli|wait|http FIRST COUNT    tasks FIRST .. FIRST+COUNT-1
#     kill-worker PICK                    kill -9 of a worker (PICK in
#                                         [0,1) chooses among those alive)
#     stop-worker PICK MS                 SIGSTOP for MS, then SIGCONT
#     redis-kill MS                       kill -9, down MS, restarted
#                                         from its AOF
#     redis-wipe MS                       kill -9, down MS, restarted
#                                         without its data
#     partition cut|hold MS               the workers cut off from Redis
#                                         (nemesis partition: cut;
#                                         partition-hold: hold)
#     storm 429|500 MS                    half the model's answers fail
#     kill-master                         kill -9 of the master; systemd's
#                                         restart (deploy/systemd/)
#     kill-master-only                    the same, its workers left alive
# Nemeses: kill-worker stop-worker redis-kill redis-wipe partition
# partition-hold storm kill-master kill-master-only all (every one but
# kill-master-only, each on its own timeline), none.

import random
import sys


NEMESES = ("none", "kill-worker", "stop-worker", "redis-kill", "redis-wipe",
           "partition", "partition-hold", "storm", "kill-master",
           "kill-master-only", "all")


class Rand:
    """uniform draws from random() alone"""

    def __init__(self, seed):
        self.r = random.Random(seed)

    def unit(self):
        return self.r.random()

    def between(self, lo, hi):
        return lo + (hi - lo) * self.r.random()

    def pick(self, seq):
        return seq[min(int(self.r.random() * len(seq)), len(seq) - 1)]


def timeline(rnd, end, first, gap, event):
    """events one after the other on one resource: each starts after the
    previous one's effect ended and a gap; event(at) gives its lines and
    how long it holds the resource"""
    out = []
    at = first
    while at < end:
        lines, hold = event(at)
        out.extend(lines)
        at += hold + gap()
    return out


def nemesis_lines(rnd, name, end, scale):
    """the lines of one nemesis over [0, end) ms; scale > 1 spaces the
    events out (the combination runs every nemesis at once)"""

    def ms(lo, hi):
        return int(rnd.between(lo, hi))

    def gap(lo, hi):
        return lambda: ms(lo * scale, hi * scale)

    first = ms(1500, 3000)

    if name == "kill-worker":
        return timeline(rnd, end, first, gap(1500, 4000),
                        lambda at: ([(at, "kill-worker %.4f" % rnd.unit())],
                                    0))

    if name == "stop-worker":
        def stop(at):
            d = ms(2500, 4000)
            return [(at, "stop-worker %.4f %d" % (rnd.unit(), d))], d
        return timeline(rnd, end, first, gap(1000, 3000), stop)

    if name == "redis-kill":
        def kill(at):
            d = ms(500, 3000)
            return [(at, "redis-kill %d" % d)], d
        return timeline(rnd, end, first, gap(3000, 8000), kill)

    if name == "redis-wipe":
        def wipe(at):
            d = ms(500, 2000)
            return [(at, "redis-wipe %d" % d)], d
        return timeline(rnd, end, first, gap(12000, 20000), wipe)

    if name == "redis":
        # the combination's Redis: restarts with their data, and now and
        # then one without
        def either(at):
            if rnd.unit() < 0.2:
                d = ms(500, 2000)
                return [(at, "redis-wipe %d" % d)], d
            d = ms(500, 3000)
            return [(at, "redis-kill %d" % d)], d
        return timeline(rnd, end, first, gap(3000, 8000), either)

    if name in ("partition", "partition-hold", "partitions"):
        # partition: cut; partition-hold: hold; the combination's: either
        def part(at):
            d = ms(1000, 5000)
            u = rnd.unit()
            kind = ("cut" if name == "partition" else "hold"
                    if name == "partition-hold" else
                    "cut" if u < 0.5 else "hold")
            return [(at, "partition %s %d" % (kind, d))], d
        return timeline(rnd, end, first, gap(2000, 6000), part)

    if name == "storm":
        def storm(at):
            d = ms(3000, 8000)
            kind = "429" if rnd.unit() < 0.5 else "500"
            return [(at, "storm %s %d" % (kind, d))], d
        return timeline(rnd, end, first, gap(2000, 5000), storm)

    if name in ("kill-master", "kill-master-only"):
        # the restart takes RestartSec (2 s) and the new master's start
        return timeline(rnd, end, first, gap(5000, 12000),
                        lambda at: ([(at, name)], 3000))

    return []


def main(argv):
    if len(argv) != 5 or argv[2] not in NEMESES:
        sys.stderr.write("usage: schedule.py SEED NEMESIS DURATION_MS TASKS\n"
                         "nemeses: %s\n" % " ".join(NEMESES))
        return 2

    seed = int(argv[1])
    name = argv[2]
    end = int(argv[3])
    tasks = int(argv[4])

    # one generator per purpose, each from the seed: the tasks' schedule
    # does not move when a nemesis draws more or fewer numbers
    work = Rand("%d/work" % seed)
    lines = []

    # the tasks go in chunks over the first 70% of the run, so that every
    # phase of a task (queued, at the model, in its side effect) meets
    # the nemesis; each chunk by one client, in turn from one drawn
    size = max(5, min(25, tasks // 6 or 1))
    chunks = (tasks + size - 1) // size
    span = end * 0.7
    first = 0
    clients = ("cli", "wait", "http")
    turn = int(work.unit() * 3)
    for c in range(chunks):
        count = min(size, tasks - first)
        at = int(span * c / max(chunks, 1) + work.between(0, 300))
        via = clients[(turn + c) % 3]
        lines.append((at, "submit %s %d %d" % (via, first, count)))
        first += count

    names = ("kill-worker", "stop-worker", "redis", "partitions", "storm",
             "kill-master") if name == "all" else (name,)

    for n in names:
        rnd = Rand("%d/%s" % (seed, n))
        lines.extend(nemesis_lines(rnd, n, end - 1000,
                                   2 if name == "all" else 1))

    lines.sort(key=lambda l: l[0])

    for at, what in lines:
        print("%d %s" % (at, what))

    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
