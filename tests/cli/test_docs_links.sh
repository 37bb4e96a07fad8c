#!/bin/sh
# test_docs_links.sh: every relative link of README.md and of the guides
# beside the parts they document points at a file or folder that exists
# and, with a #fragment, at a heading of that file (its anchor as GitHub
# makes it: the heading's text without markup, lowercased, punctuation
# dropped, spaces made hyphens, "-1", "-2" after a repeat). Links inside
# code (indented or fenced blocks, `spans`) are not links; absolute URLs
# are not checked. Also: each guide README.md's map names is linked from
# README.md.
#
# Run from the repository root by tests/run.sh (or by hand: sh
# tests/cli/test_docs_links.sh [FILE.md...]); it needs no build. Prints
# "ok N - what" or "not ok N - what" per file and exits 1 if any link is
# broken, naming each with its line.

DOCS=${*:-README.md deploy/OPERATIONS.md src/http/API.md
      src/store/README.md src/llm/README.md src/tools/README.md
      src/mcp/README.md src/agent/README.md src/queue/README.md
      tests/bench/README.md tests/mock/README.md}

command -v python3 >/dev/null 2>&1 || {
    echo "SKIPPED: test_docs_links.sh: no python3"
    exit 0
}

# shellcheck disable=SC2086
python3 - $DOCS <<'PY'
import os, re, sys

def slug(text):
    t = re.sub(r'!?\[([^\]]*)\]\([^)]*\)', r'\1', text)    # links: text
    t = re.sub(r'<[^>]+>', '', t)                          # html tags
    t = t.replace('`', '').replace('*', '')
    t = t.strip().lower()
    t = re.sub(r'[^\w\- ]', '', t)                         # punctuation
    return t.replace(' ', '-')

def lines_outside_code(path):
    """(line number, text, text with its code spans blanked out) of the
    lines that are not in code blocks"""
    out, fence, prev_blank = [], None, True
    in_indented = False
    for no, line in enumerate(open(path, encoding='utf-8'), 1):
        line = line.rstrip('\n')
        m = re.match(r'^ {0,3}(`{3,}|~{3,})', line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            continue
        if m:
            fence = m.group(1)
            continue
        if line.startswith('    ') and (prev_blank or in_indented):
            in_indented = True
            continue
        if line.strip():
            in_indented = False
        prev_blank = not line.strip()
        out.append((no, line, re.sub(r'(`+)(.+?)\1', '', line)))
    return out

anchors_of = {}
def anchors(path):
    if path not in anchors_of:
        seen, found = {}, set()
        for _, line, _ in lines_outside_code(path):
            m = re.match(r'^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$', line)
            if not m:
                continue
            s = slug(m.group(1))
            if s in seen:
                seen[s] += 1
                found.add('%s-%d' % (s, seen[s]))
            else:
                seen[s] = 0
                found.add(s)
        anchors_of[path] = found
    return anchors_of[path]

link = re.compile(r'\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)')
ref = re.compile(r'^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$')

n = failed = 0
linked_from_readme = set()
for doc in sys.argv[1:]:
    n += 1
    if not os.path.isfile(doc):
        failed += 1
        print('not ok %d - %s exists' % (n, doc))
        continue
    bad, count = [], 0
    base = os.path.dirname(doc)
    for no, _, line in lines_outside_code(doc):
        targets = link.findall(line)
        m = ref.match(line)
        if m:
            targets.append(m.group(1))
        for t in targets:
            if re.match(r'^[a-zA-Z][a-zA-Z0-9+.-]*:', t):   # http:, mailto:
                continue
            count += 1
            path, _, frag = t.partition('#')
            target = os.path.normpath(os.path.join(base, path)) if path \
                     else doc
            if doc == 'README.md':
                linked_from_readme.add(target)
            if not os.path.exists(target):
                bad.append('%s:%d: %s: no such file' % (doc, no, t))
                continue
            if frag:
                if not target.endswith('.md') or os.path.isdir(target):
                    bad.append('%s:%d: %s: a #fragment of a file that is '
                               'not Markdown' % (doc, no, t))
                elif frag not in anchors(target):
                    bad.append('%s:%d: %s: no heading "%s" in %s'
                               % (doc, no, t, frag, target))
    if bad:
        failed += 1
        print('not ok %d - %s: %d of %d relative links resolve'
              % (n, doc, count - len(bad), count))
        for b in bad:
            print('#   ' + b)
    else:
        print('ok %d - %s: its %d relative links resolve' % (n, doc, count))

if 'README.md' in sys.argv[1:]:
    for doc in sys.argv[1:]:
        if doc == 'README.md':
            continue
        n += 1
        if os.path.normpath(doc) in linked_from_readme:
            print('ok %d - README.md links to %s' % (n, doc))
        else:
            failed += 1
            print('not ok %d - README.md links to %s' % (n, doc))

print('# %d checks, %d failed' % (n, failed))
sys.exit(1 if failed else 0)
PY
