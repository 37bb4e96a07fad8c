/* fs_grep.c: the grep tool of the fs module (fs.c): a recursive search
 * of the text files under a path of the root, with PCRE2 (JIT when it can,
 * match, depth and heap limits per line, a per-call pattern and match
 * data), in name order, following no symlink; it stops at max_results,
 * at a budget of files and bytes, and before the call's deadline. */

#include "fs.h"


static int rg_fs_grep_compile(rg_tool_call_t *call, rg_fs_grep_t *g,
    const char *pattern, size_t len, const char *shown);
static void rg_fs_grep_free(rg_fs_grep_t *g);
static int rg_fs_grep_late(rg_fs_grep_t *g);
static void rg_fs_grep_dir(rg_fs_grep_t *g, int fd, int depth);
static void rg_fs_grep_file(rg_fs_grep_t *g, int fd);
static void rg_fs_grep_line(rg_fs_grep_t *g, char *line, size_t len,
    size_t lineno);


int
rg_fs_grep(rg_tool_call_t *call)
{
    int            fd;
    char           err[RG_FS_ERR_LEN], shown[RG_FS_SHOWN + 8];
    size_t         len, i, plen;
    long long      max;
    const char    *pattern;
    struct stat    st;
    rg_fs_grep_t  *g;
    rg_fs_path_t   p;
    rg_fs_conf_t  *fcf;

    fcf = call->conf;
    max = 0;

    if (call->host->arg_string(call, "pattern", &pattern, &len) != 0
        || len == 0)
    {
        call->host->fail(call, "missing argument 'pattern' (a regular "
                         "expression such as \"error|warning\")");
        return RG_TOOL_OK;
    }

    if (strlen(pattern) != len || len > RG_FS_PATTERN_MAX) {
        call->host->fail(call, "argument 'pattern' must be at most %d bytes "
                         "of text without NUL bytes", RG_FS_PATTERN_MAX);
        return RG_TOOL_OK;
    }

    if (rg_fs_arg_path(call, 0, &p) != 0
        || rg_fs_arg_count(call, "max_results", 1, &max) < 0)
    {
        return RG_TOOL_OK;
    }

    g = calloc(1, sizeof(rg_fs_grep_t));
    if (g == NULL) {
        call->host->fail(call, "out of memory");
        return RG_TOOL_OK;
    }

    rg_fs_show(pattern, len, shown, sizeof(shown));

    if (rg_fs_grep_compile(call, g, pattern, len, shown) != 0) {
        rg_fs_grep_free(g);
        return RG_TOOL_OK;
    }

    g->max = fcf->max_results;

    if (max > 0 && (unsigned long long) max < g->max) {
        g->max = (size_t) max;
    }

    fd = rg_fs_open(fcf, &p, &st, err, sizeof(err));
    if (fd == -1) {
        rg_fs_grep_free(g);
        call->host->fail(call, "%s", err);
        return RG_TOOL_OK;
    }

    /* names in the answer are relative to the root: the path as given,
     * without "." components and repeated slashes */

    for (i = 0; i < p.len; i += plen) {
        plen = strcspn(p.path + i, "/");

        if (plen == 0) {
            plen = 1;
            continue;
        }

        if (plen == 1 && p.path[i] == '.') {
            continue;
        }

        if (g->path_len > 0) {
            g->path[g->path_len++] = '/';
        }

        memcpy(g->path + g->path_len, p.path + i, plen);
        g->path_len += plen;
    }

    g->path[g->path_len] = '\0';

    if (S_ISDIR(st.st_mode)) {
        rg_fs_grep_dir(g, fd, 0);

    } else {
        rg_fs_grep_file(g, fd);
        close(fd);
    }

    if (g->stopped == RG_FS_STOP_LIMIT) {
        call->host->fail(call, "pattern %s is too costly to match: it hit "
                         "the %s limit on %s line %zu (nested quantifiers "
                         "such as (a+)+ and back-references backtrack "
                         "without end); simplify it", shown,
                         g->limit == PCRE2_ERROR_DEPTHLIMIT ? "depth"
                         : g->limit == PCRE2_ERROR_HEAPLIMIT ? "memory"
                         : "backtracking", g->limit_path, g->limit_line);
        free(g->out.data);
        rg_fs_grep_free(g);
        return RG_TOOL_OK;
    }

    if (g->matches == 0 && g->stopped == 0) {
        rg_fs_buf_printf(&g->out, "no lines match %s under %s", shown,
                         p.shown);

    } else if (g->stopped == RG_FS_STOP_RESULTS) {
        rg_fs_buf_printf(&g->out, "(stopped at %zu matches; narrow the "
                         "pattern or the path to see the rest)", g->max);

    } else if (g->stopped == RG_FS_STOP_BUDGET) {
        rg_fs_buf_printf(&g->out, "(stopped after searching %zu files; give "
                         "a narrower path)", g->files);

    } else if (g->stopped == RG_FS_STOP_TIME) {
        rg_fs_buf_printf(&g->out, "(stopped at the time limit after "
                         "searching %zu files, %zu matches so far; give a "
                         "narrower path or pattern)", g->files, g->matches);

    } else if (g->out.len > 0) {
        g->out.len--;           /* the last newline */
    }

    rg_fs_answer(call, &g->out);
    rg_fs_grep_free(g);

    return RG_TOOL_OK;
}


/* The pattern, compiled for UTF-8 text that may hold invalid bytes (JIT
 * where it is available), and the match limits of every line (the cheap
 * one first: see rg_fs_grep_line). 0, or -1 after fail(). */
static int
rg_fs_grep_compile(rg_tool_call_t *call, rg_fs_grep_t *g,
    const char *pattern, size_t len, const char *shown)
{
    int          rc;
    PCRE2_SIZE   off;
    PCRE2_UCHAR  msg[256];

    g->re = pcre2_compile((PCRE2_SPTR) pattern, len,
                          PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, &rc, &off,
                          NULL);
    if (g->re == NULL) {
        if (pcre2_get_error_message(rc, msg, sizeof(msg)) < 0) {
            strcpy((char *) msg, "unknown error");
        }

        call->host->fail(call, "invalid regular expression %s: %s at "
                         "offset %zu; write one such as \"foo|bar\" (escape "
                         "( [ { . * + ? with \\)", shown, (char *) msg,
                         (size_t) off);
        return -1;
    }

    g->md = pcre2_match_data_create_from_pattern(g->re, NULL);
    g->mc = pcre2_match_context_create(NULL);

    if (g->md == NULL || g->mc == NULL) {
        call->host->fail(call, "out of memory");
        return -1;
    }

    /* JIT when it compiles, with room for long lines (its stack is the
     * limit that stands for the depth limit there) */
    if (pcre2_jit_compile(g->re, PCRE2_JIT_COMPLETE) == 0) {
        g->js = pcre2_jit_stack_create(32 * 1024, RG_FS_JIT_STACK, NULL);
        if (g->js) {
            pcre2_jit_stack_assign(g->mc, NULL, g->js);
        }
    }

    pcre2_set_match_limit(g->mc, RG_FS_MATCH_CHEAP);
    pcre2_set_depth_limit(g->mc, RG_FS_DEPTH_LIMIT);
    pcre2_set_heap_limit(g->mc, RG_FS_HEAP_LIMIT);

    g->deadline = rg_fs_deadline(call);

    return 0;
}


static void
rg_fs_grep_free(rg_fs_grep_t *g)
{
    pcre2_match_context_free(g->mc);
    pcre2_jit_stack_free(g->js);
    pcre2_match_data_free(g->md);
    pcre2_code_free(g->re);
    free(g);
}


/* 1 when the search is past its deadline (looked up now and then) */
static int
rg_fs_grep_late(rg_fs_grep_t *g)
{
    if (++g->ticks < RG_FS_CLOCK_EVERY) {
        return 0;
    }

    g->ticks = 0;

    if (rg_fs_now() >= g->deadline) {
        g->stopped = RG_FS_STOP_TIME;
        return 1;
    }

    return 0;
}


/* Searches the directory fd (O_RDONLY, owned: closed here) whose path from
 * the root is g->path, in name order. Symlinks are not followed. */
static void
rg_fs_grep_dir(rg_fs_grep_t *g, int fd, int depth)
{
    int           cfd;
    DIR          *dir;
    char        **names;
    size_t        i, n, len, saved;
    struct stat   st;

    dir = fdopendir(fd);
    if (dir == NULL) {
        close(fd);
        return;
    }

    names = rg_fs_names(dir, g->deadline, &n);
    if (names == NULL) {
        if (n == ETIMEDOUT) {
            g->stopped = RG_FS_STOP_TIME;
        }
        closedir(dir);
        return;
    }

    saved = g->path_len;

    for (i = 0; i < n && g->stopped == 0 && !rg_fs_grep_late(g); i++) {
        if (fstatat(dirfd(dir), names[i], &st, AT_SYMLINK_NOFOLLOW) == -1
            || !(S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)))
        {
            continue;
        }

        len = strlen(names[i]);

        if (saved + 1 + len >= sizeof(g->path)) {
            continue;
        }

        g->path_len = saved;

        if (saved > 0) {
            g->path[g->path_len++] = '/';
        }

        memcpy(g->path + g->path_len, names[i], len + 1);
        g->path_len += len;

        if (S_ISDIR(st.st_mode)) {
            if (depth >= RG_FS_MAX_DEPTH) {
                continue;
            }

            cfd = openat(dirfd(dir), names[i],
                         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (cfd != -1) {
                rg_fs_grep_dir(g, cfd, depth + 1);
            }

            continue;
        }

        cfd = openat(dirfd(dir), names[i],
                     O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY
                     | O_CLOEXEC);
        if (cfd == -1) {
            continue;
        }

        if (fstat(cfd, &st) == 0 && S_ISREG(st.st_mode)) {
            rg_fs_grep_file(g, cfd);
        }

        close(cfd);
    }

    g->path_len = saved;
    g->path[saved] = '\0';

    rg_fs_names_free(names, n);
    closedir(dir);
}


/* Searches one regular file line by line. A NUL byte anywhere makes it
 * binary: what it matched so far is taken back. A line longer than the
 * buffer is matched on its first RG_FS_GREP_BUF bytes. */
static void
rg_fs_grep_file(rg_fs_grep_t *g, int fd)
{
    int       skip, eof;
    char     *s, *nl;
    size_t    len, lineno, matches, out_len;
    ssize_t   n;

    if (g->files >= RG_FS_GREP_FILES || g->bytes >= RG_FS_GREP_BYTES) {
        g->stopped = RG_FS_STOP_BUDGET;
        return;
    }

    g->files++;

    matches = g->matches;
    out_len = g->out.len;
    len = 0;
    lineno = 1;
    skip = 0;

    for ( ;; ) {
        n = read(fd, g->buf + len, RG_FS_GREP_BUF - len);

        if (n == -1 && errno == EINTR) {
            continue;
        }

        if (n == -1 || memchr(g->buf + len, '\0', (size_t) n) != NULL) {
            g->matches = matches;       /* binary or unreadable */
            g->out.len = out_len;
            return;
        }

        eof = (n == 0);
        g->bytes += (size_t) n;
        len += (size_t) n;
        s = g->buf;

        while (g->stopped == 0 && !rg_fs_grep_late(g)
               && (nl = memchr(s, '\n', (size_t) (g->buf + len - s))))
        {
            if (!skip) {
                rg_fs_grep_line(g, s, (size_t) (nl - s), lineno);
            }

            skip = 0;
            lineno++;
            s = nl + 1;
        }

        if (g->stopped) {
            return;
        }

        len -= (size_t) (s - g->buf);
        memmove(g->buf, s, len);

        if (eof) {
            if (len > 0 && !skip) {
                rg_fs_grep_line(g, g->buf, len, lineno);
            }

            return;
        }

        if (g->bytes >= RG_FS_GREP_BYTES) {
            g->stopped = RG_FS_STOP_BUDGET;
            return;
        }

        if (len == RG_FS_GREP_BUF) {
            rg_fs_grep_line(g, g->buf, len, lineno);
            skip = 1;
            len = 0;
        }
    }
}


static void
rg_fs_grep_line(rg_fs_grep_t *g, char *line, size_t len, size_t lineno)
{
    int     rc;
    size_t  cut;

    if (len > 0 && line[len - 1] == '\r') {
        len--;
    }

    line[len] = '\0';

    rc = pcre2_match(g->re, (PCRE2_SPTR) line, len, 0, 0, g->md, g->mc);

    /* A line past the cheap limit may take seconds under the whole one:
     * the clock is looked at before it is matched again, and before the
     * next line. Between looks there are at most RG_FS_CLOCK_EVERY cheap
     * lines, or one costly one. */
    if (rc == PCRE2_ERROR_MATCHLIMIT) {
        g->ticks = RG_FS_CLOCK_EVERY - 1;
        if (rg_fs_grep_late(g)) {
            return;
        }

        pcre2_set_match_limit(g->mc, RG_FS_MATCH_LIMIT);
        rc = pcre2_match(g->re, (PCRE2_SPTR) line, len, 0, 0, g->md, g->mc);
        pcre2_set_match_limit(g->mc, RG_FS_MATCH_CHEAP);

        g->ticks = RG_FS_CLOCK_EVERY - 1;
    }

    if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT
        || rc == PCRE2_ERROR_HEAPLIMIT || rc == PCRE2_ERROR_JIT_STACKLIMIT)
    {
        g->stopped = RG_FS_STOP_LIMIT;
        g->limit = rc;
        g->limit_line = lineno;
        rg_fs_show(g->path, g->path_len, g->limit_path,
                   sizeof(g->limit_path));
        return;
    }

    if (rc < 0) {
        return;                 /* no match */
    }

    cut = len > RG_FS_LINE_CUT ? rg_fs_utf8_cut(line, RG_FS_LINE_CUT) : len;

    rg_fs_buf_shown(&g->out, g->path, g->path_len);
    rg_fs_buf_printf(&g->out, ":%zu: ", lineno);
    rg_fs_buf_add(&g->out, line, cut);
    rg_fs_buf_add(&g->out, cut < len ? "...\n" : "\n", cut < len ? 4 : 1);

    if (++g->matches >= g->max) {
        g->stopped = RG_FS_STOP_RESULTS;
    }
}
