/* rg_directives.c: `reagent directives [NAME]`, the reference of the
 * configuration, printed as Markdown from what the binary reads: each
 * part's table of directives and the entries beside it (rg_conf_doc_t,
 * which the table's last row points to), one table per part in the order
 * of the parts; with NAME, only the entries of that name.
 * conf/directives.md is its output (make directives).
 *
 * It also says, on stderr and in its exit code, what the reference lacks:
 * a directive without an entry, an entry without a directive, a context
 * no part names; so a directive added without its line fails the tests.
 * Reads no configuration and knows no part by name. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_directives.h>


static int rg_directives_main(rg_cycle_t *cycle, void *opts,
    const char *arg);


const rg_cli_t  rg_directives_cli = {
    "directives",
    "  directives [NAME]\n"
    "      the reference of every directive as Markdown, a table per part:\n"
    "      syntax, default, context and what it does (conf/directives.md);\n"
    "      with NAME, its entries; reads no configuration\n",
    NULL,
    0,
    NULL,
    rg_directives_main,
    0
};


static const char  rg_directives_intro[] =
"# Directives\n"
"\n"
"Every directive of reagent's configuration, a table per part in the\n"
"order the parts start: how it is written, its default (\"—\": none),\n"
"where it goes (main: the top level; `llm`: inside `llm NAME { }`;\n"
"`module exec`: inside `module exec { }`, once exec.so is loaded) and\n"
"what it does. The syntax of the file itself (blocks, quotes, sizes such\n"
"as 64k, times such as 30s, `include`) is in conf/reagent.conf.\n"
"\n"
"This file is the output of `reagent directives` (`reagent directives\n"
"NAME` prints the entries of one name): regenerate it with\n"
"`make directives`. tests/cli/test_directives.sh fails when it differs\n"
"from what the binary prints, or when a directive has no entry.\n";


/* the entries of a part: the last row of its directives points to them */
static const rg_conf_doc_t *
rg_directives_docs(const rg_command_t *cmds)
{
    const rg_command_t  *c;

    if (cmds == NULL) {
        return NULL;
    }

    for (c = cmds; c->name.len; c++) {
        /* void */
    }

    return c->post;
}


static rg_uint_t
rg_directives_is(const char *a, const rg_str_t *b)
{
    return strlen(a) == b->len && memcmp(a, b->data, b->len) == 0;
}


/* the entry of a directive of the table: the one of its name without a
 * context, else one with a context (where its part names no block) */
static const rg_conf_doc_t *
rg_directives_entry(const rg_conf_doc_t *docs, const rg_str_t *name)
{
    const rg_conf_doc_t  *d, *any;

    any = NULL;

    for (d = docs; d && d->name; d++) {
        if (!rg_directives_is(d->name, name)) {
            continue;
        }

        if (d->context == NULL) {
            return d;
        }

        if (any == NULL) {
            any = d;
        }
    }

    return any;
}


static const rg_command_t *
rg_directives_command(const rg_command_t *cmds, const char *name)
{
    const rg_command_t  *c;

    for (c = cmds; c && c->name.len; c++) {
        if (rg_directives_is(name, &c->name)) {
            return c;
        }
    }

    return NULL;
}


/* "main, agent": where a directive of these types may be written, from
 * the blocks the parts name ("store redis { }": store redis, "llm NAME
 * { }": llm); RG_ERROR when a bit is no part's block */
static rg_int_t
rg_directives_context(rg_uint_t type, char *buf, size_t size)
{
    int          n;
    size_t       len, wlen;
    rg_uint_t    bit, i;
    const char  *w, *end;

    len = 0;
    buf[0] = '\0';

    for (bit = 1; bit & RG_ANY_CONF; bit <<= 1) {
        if (!(type & bit)) {
            continue;
        }

        w = NULL;
        wlen = 0;

        if (bit == RG_MAIN_CONF) {
            w = "main";
            wlen = 4;
        }

        for (i = 0; w == NULL && rg_parts[i]; i++) {
            if (rg_parts[i]->conf_ctx != bit || !rg_parts[i]->conf_block) {
                continue;
            }

            w = rg_parts[i]->conf_block;
            end = strstr(w, " {");
            wlen = end ? (size_t) (end - w) : strlen(w);

            if (wlen > 5 && memcmp(w + wlen - 5, " NAME", 5) == 0) {
                wlen -= 5;
            }
        }

        if (w == NULL) {
            return RG_ERROR;
        }

        n = snprintf(buf + len, size - len, "%s%.*s", len ? ", " : "",
                     (int) wlen, w);
        if (n < 0 || (size_t) n >= size - len) {
            return RG_ERROR;
        }

        len += n;
    }

    return len ? RG_OK : RG_ERROR;
}


/* a cell of a Markdown table: "|" would end it */
static void
rg_directives_cell(FILE *f, const char *s, const char *quote)
{
    fprintf(f, " %s", quote);

    for ( /* void */ ; *s; s++) {
        if (*s == '|') {
            fputs("\\|", f);
        } else {
            fputc(*s == '\n' ? ' ' : *s, f);
        }
    }

    fprintf(f, "%s |", quote);
}


static void
rg_directives_row(FILE *f, const char *name, const rg_conf_doc_t *d,
    const char *context)
{
    fputc('|', f);
    rg_directives_cell(f, name, "`");
    rg_directives_cell(f, d->syntax ? d->syntax : "", "`");
    rg_directives_cell(f, d->dflt ? d->dflt : "—", "");
    rg_directives_cell(f, context, "");
    rg_directives_cell(f, d->what ? d->what : "", "");
    fputc('\n', f);
}


/* The table of a part (of the rows called name, when it is given), said
 * once the first row is known: a part without one prints nothing. What
 * the reference lacks counts in *missing, said on stderr when name is
 * NULL. The number of rows printed. */
static rg_uint_t
rg_directives_part(FILE *f, const rg_part_t *part, const char *name,
    rg_uint_t *missing)
{
    char                  context[128];
    const char           *why;
    rg_uint_t             rows, type;
    const rg_command_t   *c, *o;
    const rg_conf_doc_t  *docs, *d;

    docs = rg_directives_docs(part->commands);
    rows = 0;

    for (c = part->commands; c && c->name.len; c++) {

        /* a name in several contexts (approval_timeout) is one row */
        o = rg_directives_command(part->commands, c->name.data);
        if (o != c) {
            continue;
        }

        if (name && !rg_directives_is(name, &c->name)) {
            continue;
        }

        type = 0;
        for (o = c; o->name.len; o++) {
            if (o->name.len == c->name.len
                && memcmp(o->name.data, c->name.data, c->name.len) == 0)
            {
                type |= o->type;
            }
        }

        d = rg_directives_entry(docs, &c->name);

        why = NULL;

        if (d == NULL || d->syntax == NULL || d->what == NULL) {
            why = "has no entry in the reference: add one to the part's "
                  "rg_conf_doc_t table";

        } else if (d->context) {
            snprintf(context, sizeof(context), "%s", d->context);

        } else if (rg_directives_context(type, context, sizeof(context))
                   != RG_OK)
        {
            why = "goes in a block no part names: give its entry a context";
        }

        if (why) {
            if (name == NULL) {
                fprintf(stderr, "reagent: directives: \"%s\" (part %s) %s\n",
                        c->name.data, part->name, why);
            }
            (*missing)++;
            continue;
        }

        if (rows++ == 0) {
            fprintf(f, "\n## %s\n\n| directive | syntax | default | context "
                    "| what it does |\n|---|---|---|---|---|\n", part->name);
        }

        rg_directives_row(f, c->name.data, d, context);
    }

    /* the directives the part reads for another (a module's) */
    for (d = docs; d && d->name; d++) {
        if (rg_directives_command(part->commands, d->name)) {
            continue;
        }

        if (d->context == NULL) {
            if (name == NULL) {
                fprintf(stderr, "reagent: directives: the entry \"%s\" (part "
                        "%s) names no directive of the part and no "
                        "context\n", d->name, part->name);
            }
            (*missing)++;
            continue;
        }

        if (name && strcmp(name, d->name) != 0) {
            continue;
        }

        if (rows++ == 0) {
            fprintf(f, "\n## %s\n\n| directive | syntax | default | context "
                    "| what it does |\n|---|---|---|---|---|\n", part->name);
        }

        rg_directives_row(f, d->name, d, d->context);
    }

    return rows;
}


/* the name of any table or entry nearest to a misspelled one */
static const char *
rg_directives_nearest(const char *name)
{
    size_t                d, best;
    rg_uint_t             i;
    const char           *near;
    const rg_command_t   *c;
    const rg_conf_doc_t  *e;

    best = 3;
    near = NULL;

    for (i = 0; rg_parts[i]; i++) {
        for (c = rg_parts[i]->commands; c && c->name.len; c++) {
            d = rg_conf_distance(name, strlen(name), c->name.data,
                                 c->name.len);
            if (d < best) {
                best = d;
                near = c->name.data;
            }
        }

        for (e = rg_directives_docs(rg_parts[i]->commands); e && e->name;
             e++)
        {
            d = rg_conf_distance(name, strlen(name), e->name,
                                 strlen(e->name));
            if (d < best) {
                best = d;
                near = e->name;
            }
        }
    }

    return near;
}


static int
rg_directives_main(rg_cycle_t *cycle, void *opts, const char *arg)
{
    rg_uint_t    i, rows, missing;
    const char  *near;

    rows = 0;
    missing = 0;

    if (arg == NULL) {
        fputs(rg_directives_intro, stdout);
    }

    for (i = 0; rg_parts[i]; i++) {
        rows += rg_directives_part(stdout, rg_parts[i], arg, &missing);
    }

    /* a reader that stopped early (| head) was told enough */
    if (fflush(stdout) != 0 || ferror(stdout)) {
        if (errno != EPIPE) {
            fprintf(stderr, "reagent: directives: writing failed (%d: %s)\n",
                    errno, strerror(errno));
        }
        return 1;
    }

    if (missing) {
        if (arg) {
            fprintf(stderr, "reagent: directives: \"%s\" has no entry in "
                    "the reference\n", arg);
        } else {
            fprintf(stderr, "reagent: directives: %lu entr%s missing or "
                    "wrong in the reference\n", (unsigned long) missing,
                    missing == 1 ? "y is" : "ies are");
        }
        return 1;
    }

    if (arg && rows == 0) {
        near = rg_directives_nearest(arg);
        fprintf(stderr, "reagent: no directive \"%s\"%s%s%s\n", arg,
                near ? " (did you mean \"" : "", near ? near : "",
                near ? "\"?)" : "");
        return 1;
    }

    return 0;
}
