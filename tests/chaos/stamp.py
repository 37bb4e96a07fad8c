#!/usr/bin/env python3
# stamp.py: the results that come back, into a chaos run's history as they
# come (tests/chaos/chaos.sh): reads reagent's JSONL results on stdin
# (`reagent results --follow`, `reagent submit --wait`) and appends each
# to HISTORY as {"t": unix ms, "type": "result", "via": VIA, "r": result},
# one write per line (the history has other writers); a line that is not
# JSON is kept as {"type": "noise", "line": …}. With RAW, each line as it
# came is appended there too.
#
#     stamp.py VIA HISTORY [RAW]

import json
import sys
import time


def main(argv):
    if len(argv) < 3:
        sys.stderr.write("usage: stamp.py VIA HISTORY [RAW]\n")
        return 2

    via = argv[1]
    hist = open(argv[2], "a", buffering=1)
    raw = open(argv[3], "a", buffering=1) if len(argv) > 3 else None

    for line in sys.stdin:
        line = line.rstrip("\n")
        if not line:
            continue
        if raw:
            raw.write(line + "\n")
        t = int(time.time() * 1000)
        try:
            r = json.loads(line)
            rec = {"t": t, "type": "result", "via": via, "r": r}
        except ValueError:
            rec = {"t": t, "type": "noise", "via": via, "line": line[:300]}
        hist.write(json.dumps(rec, separators=(",", ":")) + "\n")

    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
