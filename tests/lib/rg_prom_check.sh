#!/bin/sh
# rg_prom_check.sh: checks that a file (or stdin) is valid Prometheus
# text exposition format 0.0.4, as GET /metrics must serve it: metric
# and label names of the allowed characters, label values quoted with
# only \\ \" \n escaped, numeric values, a # TYPE before the samples of
# its family and one group of lines per family, no series twice, and
# each histogram's buckets with increasing le, non-decreasing counts and
# a +Inf bucket equal to its _count. Exits 0 when it is; otherwise 1,
# naming each wrong line ("LINE: what is wrong") on stderr.
#
#     sh tests/lib/rg_prom_check.sh FILE      (or: … | sh rg_prom_check.sh)
#
# POSIX sh and awk only (mawk does), so that any test can use it.

f=${1:--}

awk '
function bad(what) {
    printf "line %d: %s: %s\n", NR, what, $0 > "/dev/stderr"
    errors++
}

function isnum(v) {
    return v ~ /^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$/ \
        || v ~ /^[-+]?Inf$/ || v == "NaN"
}

# the family a sample belongs to, from its name and the TYPEs seen
function family(name,    base) {
    if (name in type) {
        return name
    }
    if (name ~ /_(bucket|sum|count)$/) {
        base = name
        sub(/_(bucket|sum|count)$/, "", base)
        if ((base in type) \
            && (type[base] == "histogram" || type[base] == "summary"))
        {
            return base
        }
    }
    return ""
}

# parses the labels text between { and }; sets nl, lname[], lvalue[]
# and returns 1, or 0 when it is wrong
function labels(s,    i, c, state, name, value) {
    nl = 0
    state = "name"
    name = ""
    value = ""
    for (i = 1; i <= length(s); i++) {
        c = substr(s, i, 1)
        if (state == "name") {
            if (c == "=") {
                if (name !~ /^[a-zA-Z_][a-zA-Z0-9_]*$/) {
                    return 0
                }
                state = "open"
            } else if (c == "," && name == "" && nl > 0) {
                return 0
            } else {
                name = name c
            }
        } else if (state == "open") {
            if (c != "\"") {
                return 0
            }
            state = "value"
        } else if (state == "value") {
            if (c == "\\") {
                i++
                c = substr(s, i, 1)
                if (c != "\\" && c != "\"" && c != "n") {
                    return 0
                }
                value = value "\\" c
            } else if (c == "\"") {
                nl++
                lname[nl] = name
                lvalue[nl] = value
                name = ""
                value = ""
                state = "comma"
            } else {
                value = value c
            }
        } else if (state == "comma") {
            if (c != ",") {
                return 0
            }
            state = "name"
        }
    }
    return state == "comma" || (state == "name" && name == "")
}

BEGIN { errors = 0; current = "" }

/^[ \t]*$/ { next }

/^#/ {
    if ($2 == "HELP") {
        if ($3 !~ /^[a-zA-Z_:][a-zA-Z0-9_:]*$/) {
            bad("a HELP of an invalid metric name")
        } else if ($3 in help) {
            bad("a second HELP for " $3)
        }
        help[$3] = 1
    } else if ($2 == "TYPE") {
        if ($3 !~ /^[a-zA-Z_:][a-zA-Z0-9_:]*$/) {
            bad("a TYPE of an invalid metric name")
        } else if (NF != 4 || $4 !~ /^(counter|gauge|histogram|summary|untyped)$/) {
            bad("a TYPE that is not counter, gauge, histogram, summary or untyped")
        } else if ($3 in type) {
            bad("a second TYPE for " $3)
        } else if ($3 in sampled) {
            bad("the TYPE of " $3 " after its samples")
        }
        type[$3] = $4
    }
    next
}

{
    line = $0
    if (match(line, /^[a-zA-Z_:][a-zA-Z0-9_:]*/) == 0) {
        bad("a sample whose metric name is invalid")
        next
    }
    name = substr(line, 1, RLENGTH)
    rest = substr(line, RLENGTH + 1)
    nl = 0
    ltext = ""

    if (substr(rest, 1, 1) == "{") {
        # the labels end at the first } outside a quoted value
        inq = 0
        for (i = 2; i <= length(rest); i++) {
            c = substr(rest, i, 1)
            if (inq && c == "\\") { i++; continue }
            if (c == "\"") { inq = !inq; continue }
            if (!inq && c == "}") { break }
        }
        if (i > length(rest)) {
            bad("labels without their closing brace")
            next
        }
        ltext = substr(rest, 2, i - 2)
        rest = substr(rest, i + 1)
        if (!labels(ltext)) {
            bad("labels that are not name=\"value\" pairs")
            next
        }
    }

    if (rest !~ /^[ \t]+/) {
        bad("no blank between the series and its value")
        next
    }
    sub(/^[ \t]+/, "", rest)
    n = split(rest, v, /[ \t]+/)
    if (n < 1 || n > 2 || !isnum(v[1]) || (n == 2 && v[2] !~ /^-?[0-9]+$/)) {
        bad("a value that is not a number (or a timestamp that is not an integer)")
        next
    }

    fam = family(name)
    if (fam == "") {
        bad("a sample of " name " before any TYPE of its family")
        next
    }
    sampled[name] = 1
    sampled[fam] = 1

    if (fam != current) {
        if (fam in done) {
            bad("the samples of " fam " are not in one group")
        }
        if (current != "") {
            done[current] = 1
        }
        current = fam
    }

    # the series without le: the histogram of a bucket
    le = ""
    key = ""
    for (k = 1; k <= nl; k++) {
        for (j = 1; j < k; j++) {
            if (lname[j] == lname[k]) {
                bad("the label " lname[k] " twice")
            }
        }
        if (lname[k] == "le" && name ~ /_bucket$/) {
            le = lvalue[k]
        } else {
            key = key "," lname[k] "=\"" lvalue[k] "\""
        }
    }

    series = name "{" key ",le=" le "}"
    if (series in seen) {
        bad("a series twice")
    }
    seen[series] = 1

    if (type[fam] == "histogram") {
        h = fam "{" key "}"
        if (name == fam "_bucket") {
            if (le == "") {
                bad("a bucket without le")
                next
            }
            if (!isnum(le)) {
                bad("a bucket whose le is not a number")
                next
            }
            lev = (le == "+Inf") ? "inf" : le + 0
            if (h in lastle) {
                if (lastle[h] == "inf" || (lev != "inf" && lev <= lastle[h])) {
                    bad("a bucket whose le does not increase")
                }
                if (v[1] + 0 < lastcount[h]) {
                    bad("a bucket whose count went down (buckets are cumulative)")
                }
            }
            lastle[h] = lev
            lastcount[h] = v[1] + 0
            if (lev == "inf") {
                infcount[h] = v[1] + 0
                hasinf[h] = 1
            }
            hist[h] = 1
        } else if (name == fam "_count") {
            count[h] = v[1] + 0
            countline[h] = NR
            hist[h] = 1
        } else if (name != fam "_sum") {
            bad("a sample of histogram " fam " that is not _bucket, _sum or _count")
        }
    } else if (type[fam] == "counter" && v[1] ~ /^-/) {
        bad("a counter below zero")
    }
}

END {
    for (h in hist) {
        if (!(h in hasinf)) {
            printf "histogram %s: no +Inf bucket\n", h > "/dev/stderr"
            errors++
        } else if (!(h in count)) {
            printf "histogram %s: no _count\n", h > "/dev/stderr"
            errors++
        } else if (count[h] != infcount[h]) {
            printf "line %d: histogram %s: _count %s is not its +Inf bucket %s\n", \
                countline[h], h, count[h], infcount[h] > "/dev/stderr"
            errors++
        }
    }
    if (NR == 0) {
        print "no metrics at all" > "/dev/stderr"
        errors++
    }
    exit errors ? 1 : 0
}
' "$f"
