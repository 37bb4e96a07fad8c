/* rg_conf_file.c: reads configuration files in nginx's syntax. The
 * tokenizer turns text into words ending at ";", "{" or "}"; the parser
 * looks each directive up in the tables of the parts, checks its context
 * and argument count and calls its setter with the conf it sets. Every
 * error names the line the directive starts on; where each directive was
 * read is kept with the cycle, for the errors the parts find once the
 * whole file was read. Knows nothing about what the directives mean or
 * which parts there are. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <glob.h>
#include <math.h>


#define RG_CONF_BLOCK_START  1
#define RG_CONF_BLOCK_DONE   2
#define RG_CONF_FILE_DONE    3

#define RG_CONF_MAX_FILE     (16 * 1024 * 1024)
#define RG_CONF_MAX_INCLUDE  16


struct rg_conf_file_s {
    const char         *name;
    const char         *buf;
    size_t              len;
    size_t              pos;
    rg_uint_t           line;
};


/* where a directive was read: its conf, its name, its words */
typedef struct rg_conf_pos_s  rg_conf_pos_t;

struct rg_conf_pos_s {
    const void         *conf;
    const char         *name;
    const char         *file;
    rg_uint_t           line;
    rg_uint_t           nargs;
    const char        **words;      /* the data of its arguments */
    rg_uint_t          *lines;      /* the line each starts on */
    rg_conf_pos_t      *next;       /* read before it */
};


static rg_int_t rg_conf_read_token(rg_conf_t *cf);
static char *rg_conf_handler(rg_conf_t *cf, rg_int_t last);
static char *rg_conf_include(rg_conf_t *cf);


const char *
rg_conf_file_name(rg_conf_t *cf)
{
    return cf->file ? cf->file->name : "(command line)";
}


rg_uint_t
rg_conf_line(rg_conf_t *cf)
{
    return cf->file ? cf->file->line : 0;
}


void
rg_conf_log_error(rg_uint_t level, rg_conf_t *cf, int err, const char *fmt,
    ...)
{
    int      n;
    size_t   len;
    va_list  args;

    va_start(args, fmt);
    n = vsnprintf(cf->errmsg, sizeof(cf->errmsg), fmt, args);
    va_end(args);

    len = n < 0 ? 0 : rg_min((size_t) n, sizeof(cf->errmsg) - 1);

    if (err && len < sizeof(cf->errmsg) - 1) {
        n = snprintf(cf->errmsg + len, sizeof(cf->errmsg) - len, " (%d: %s)",
                     err, strerror(err));
        len += n < 0 ? 0 : rg_min((size_t) n, sizeof(cf->errmsg) - len - 1);
    }

    /* the line the directive starts on, not the one its ";" is on */
    if (cf->file && len < sizeof(cf->errmsg) - 1) {
        snprintf(cf->errmsg + len, sizeof(cf->errmsg) - len, " in %s:%lu",
                 cf->file->name,
                 (unsigned long) (cf->line ? cf->line : cf->file->line));
    }

    rg_log_error(level, cf->log, 0, "%s", cf->errmsg);
}


/* The positions live in the pool of the configuration as the data of a
 * cleanup that does nothing, found again by its handler (as nginx finds
 * a file's cleanup): the cycle needs no field for them. */
static void
rg_conf_pos_tag(void *data)
{
}


static rg_conf_pos_t **
rg_conf_pos_head(rg_pool_t *pool, rg_uint_t create)
{
    rg_conf_pos_t     **head;
    rg_pool_cleanup_t  *c;

    for (c = pool->cleanup; c; c = c->next) {
        if (c->handler == rg_conf_pos_tag) {
            return c->data;
        }
    }

    if (!create) {
        return NULL;
    }

    head = rg_pcalloc(pool, sizeof(rg_conf_pos_t *));
    if (head == NULL || rg_pool_cleanup_add(pool, rg_conf_pos_tag, head)
                        == NULL)
    {
        return NULL;
    }

    return head;
}


static rg_int_t
rg_conf_pos_add(rg_conf_t *cf, const void *conf, const char *name)
{
    rg_uint_t       i;
    rg_conf_pos_t  *p, **head;

    head = rg_conf_pos_head(cf->pool, 1);
    p = rg_palloc(cf->pool, sizeof(rg_conf_pos_t));
    if (head == NULL || p == NULL) {
        return RG_ERROR;
    }

    p->words = rg_palloc(cf->pool, cf->nargs * sizeof(char *));
    p->lines = rg_palloc(cf->pool, cf->nargs * sizeof(rg_uint_t));
    if (p->words == NULL || p->lines == NULL) {
        return RG_ERROR;
    }

    for (i = 0; i < cf->nargs; i++) {
        p->words[i] = cf->args[i].data;
        p->lines[i] = cf->args_line[i];
    }

    p->conf = conf;
    p->name = name;
    p->file = cf->file->name;
    p->line = cf->args_line[0];
    p->nargs = cf->nargs;
    p->next = *head;
    *head = p;

    return RG_OK;
}


void
rg_conf_where(rg_cycle_t *cycle, const void *conf, const char *name,
    const char *word, const char **file, rg_uint_t *line)
{
    rg_uint_t       i;
    rg_conf_pos_t  *p, **head;

    head = cycle ? rg_conf_pos_head(cycle->pool, 0) : NULL;
    if (head == NULL) {
        return;
    }

    /* a word is one allocation: its pointer names its directive, and the
     * line it is on */
    for (p = *head; word && p; p = p->next) {
        for (i = 1; i < p->nargs; i++) {
            if (p->words[i] == word) {
                *file = p->file;
                *line = p->lines[i];
                return;
            }
        }
    }

    for (p = *head; name && p; p = p->next) {
        if (p->conf == conf && strcmp(p->name, name) == 0) {
            *file = p->file;
            *line = p->line;
            return;
        }
    }
}


size_t
rg_conf_distance(const char *a, size_t la, const char *b, size_t lb)
{
    size_t  i, j, d[34][34];

    if (la > 32 || lb > 32 || (la > lb ? la - lb : lb - la) > 2) {
        return 3;
    }

    for (i = 0; i <= la; i++) {
        d[i][0] = i;
    }

    for (j = 0; j <= lb; j++) {
        d[0][j] = j;
    }

    for (i = 1; i <= la; i++) {
        for (j = 1; j <= lb; j++) {
            d[i][j] = rg_min(rg_min(d[i - 1][j] + 1, d[i][j - 1] + 1),
                             d[i - 1][j - 1] + (a[i - 1] != b[j - 1]));

            /* two letters swapped ("modle") are one slip, not two */
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2]
                && a[i - 2] == b[j - 1])
            {
                d[i][j] = rg_min(d[i][j], d[i - 2][j - 2] + 1);
            }
        }
    }

    return rg_min(d[la][lb], 3);
}


static char *
rg_conf_parse_buffer(rg_conf_t *cf, rg_conf_file_t *file)
{
    char            *rv;
    rg_int_t         rc;
    rg_conf_file_t  *prev;

    prev = cf->file;
    cf->file = file;

    rv = RG_CONF_OK;

    for ( ;; ) {
        rc = rg_conf_read_token(cf);

        if (rc == RG_ERROR) {
            rv = RG_CONF_ERROR;
            break;
        }

        if (rc == RG_CONF_FILE_DONE) {
            break;
        }

        if (rc == RG_CONF_BLOCK_DONE) {
            /* blocks end in rg_conf_parse_block(), never here */
            rg_conf_log_error(RG_LOG_EMERG, cf, 0, "unexpected \"}\"");
            rv = RG_CONF_ERROR;
            break;
        }

        rv = rg_conf_handler(cf, rc);
        if (rv != RG_CONF_OK) {
            break;
        }
    }

    cf->file = prev;

    return rv;
}


/* Called by a block's setter after it set ctx and ctx_type: parses up to
 * the closing "}". */
char *
rg_conf_parse_block(rg_conf_t *cf)
{
    char      *rv;
    rg_int_t   rc;
    rg_uint_t  line;

    /* what its setter says after the "}" is said at its first line */
    line = cf->line;
    cf->block++;

    for ( ;; ) {
        rc = rg_conf_read_token(cf);

        if (rc == RG_ERROR) {
            rv = RG_CONF_ERROR;
            break;
        }

        if (rc == RG_CONF_FILE_DONE) {
            rg_conf_log_error(RG_LOG_EMERG, cf, 0,
                              "unexpected end of file, expecting \"}\"");
            rv = RG_CONF_ERROR;
            break;
        }

        if (rc == RG_CONF_BLOCK_DONE) {
            rv = RG_CONF_OK;
            break;
        }

        rv = rg_conf_handler(cf, rc);
        if (rv != RG_CONF_OK) {
            break;
        }
    }

    cf->block--;

    if (rv == RG_CONF_OK) {
        cf->line = line;
    }

    return rv;
}


char *
rg_conf_block(rg_conf_t *cf, rg_uint_t type, void *ctx)
{
    char      *rv;
    void      *pctx;
    rg_uint_t  ptype;

    pctx = cf->ctx;
    ptype = cf->ctx_type;

    cf->ctx = ctx;
    cf->ctx_type = type;

    rv = rg_conf_parse_block(cf);

    cf->ctx = pctx;
    cf->ctx_type = ptype;

    return rv;
}


/* Reads a whole configuration file. It is opened without blocking, so
 * that a FIFO (or any file that is not a regular one) is refused rather
 * than waited on, and read in a loop: read() may return less than asked. */
char *
rg_conf_parse_file(rg_conf_t *cf, const char *filename)
{
    int             fd, flags;
    char           *buf, *p, *rv;
    size_t          n, cap;
    ssize_t         got;
    struct stat     st;
    rg_conf_file_t  file;

    fd = open(filename, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd == -1) {
        rg_conf_log_error(RG_LOG_EMERG, cf, errno, "open() \"%s\" failed",
                          filename);
        return RG_CONF_ERROR;
    }

    if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)
        || st.st_size > RG_CONF_MAX_FILE)
    {
        rg_conf_log_error(RG_LOG_EMERG, cf, 0,
                          "\"%s\" is not a regular file of at most 16m",
                          filename);
        close(fd);
        return RG_CONF_ERROR;
    }

    flags = fcntl(fd, F_GETFL);
    if (flags != -1) {
        (void) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    }

    /* the size is a hint: the file may change while it is read */
    cap = (size_t) st.st_size + 1;
    n = 0;

    buf = malloc(cap + 1);
    if (buf == NULL) {
        close(fd);
        return RG_CONF_ERROR;
    }

    for ( ;; ) {
        if (n == cap) {
            if (cap > RG_CONF_MAX_FILE) {
                rg_conf_log_error(RG_LOG_EMERG, cf, 0,
                                  "\"%s\" is not a regular file of at most "
                                  "16m", filename);
                free(buf);
                close(fd);
                return RG_CONF_ERROR;
            }

            p = realloc(buf, 2 * cap + 1);
            if (p == NULL) {
                free(buf);
                close(fd);
                return RG_CONF_ERROR;
            }

            buf = p;
            cap *= 2;
        }

        got = read(fd, buf + n, cap - n);

        if (got > 0) {
            n += (size_t) got;
            continue;
        }

        if (got == 0) {
            break;
        }

        if (errno == EINTR) {
            continue;
        }

        rg_conf_log_error(RG_LOG_EMERG, cf, errno, "read() \"%s\" failed",
                          filename);
        free(buf);
        close(fd);
        return RG_CONF_ERROR;
    }

    close(fd);

    buf[n] = '\0';

    file.name = rg_pstrdup(cf->pool, filename, strlen(filename));
    file.buf = buf;
    file.len = n;
    file.pos = 0;
    file.line = 1;

    rv = file.name ? rg_conf_parse_buffer(cf, &file) : RG_CONF_ERROR;

    free(buf);

    return rv;
}


char *
rg_conf_parse_string(rg_conf_t *cf, const char *name, const char *text)
{
    rg_conf_file_t  file;

    /* kept with the positions of its directives */
    file.name = rg_pstrdup(cf->pool, name, strlen(name));
    if (file.name == NULL) {
        return RG_CONF_ERROR;
    }

    file.buf = text;
    file.len = strlen(text);
    file.pos = 0;
    file.line = 1;

    return rg_conf_parse_buffer(cf, &file);
}


/* The directive called name that the context allows, and the conf it
 * sets: at the main level its part's, in a block the block's. *known gets
 * the contexts any part allows a directive of that name in (0: none has
 * one), for the error that says where it belongs. */
static rg_command_t *
rg_conf_find(rg_conf_t *cf, rg_str_t *name, void **conf, rg_uint_t *known)
{
    rg_part_t    **p;
    rg_command_t  *cmd;

    *known = 0;

    for (p = cf->parts; p && *p; p++) {
        for (cmd = (*p)->commands; cmd && cmd->name.len; cmd++) {
            if (cmd->name.len != name->len
                || memcmp(cmd->name.data, name->data, name->len) != 0)
            {
                continue;
            }

            *known |= cmd->type & RG_ANY_CONF;

            if (!(cmd->type & cf->ctx_type)) {
                continue;
            }

            *conf = cf->ctx_type == RG_MAIN_CONF
                    ? ((void **) cf->ctx)[(*p)->index] : cf->ctx;

            return cmd;
        }
    }

    return NULL;
}


/* where a directive of the contexts ctx goes: "at the top level or
 * inside agent NAME { }"; empty when no part names them */
static void
rg_conf_places(rg_conf_t *cf, rg_uint_t ctx, char *buf, size_t len)
{
    size_t        n;
    rg_part_t   **p;

    n = 0;
    buf[0] = '\0';

    if (ctx & RG_MAIN_CONF) {
        n = snprintf(buf, len, "at the top level");
    }

    for (p = cf->parts; p && *p && n < len; p++) {
        if ((*p)->conf_ctx && (ctx & (*p)->conf_ctx) && (*p)->conf_block) {
            n += snprintf(buf + n, len - n, "%sinside %s", n ? " or " : "",
                          (*p)->conf_block);
        }
    }
}


/* The directive nearest to a misspelled name, for "did you mean": any
 * one this context allows before one it does not; NULL when none is
 * near. */
static const char *
rg_conf_nearest(rg_conf_t *cf, const rg_str_t *name)
{
    size_t         d, max, best;
    rg_part_t    **p;
    const char    *near;
    rg_command_t  *cmd;

    /* two edits turn most short names into others */
    max = name->len <= 4 ? 1 : 2;
    best = 2 * max + 2;
    near = NULL;

    /* the score: the distance, then max + 1 more when not allowed here */

    for (p = cf->parts; p && *p; p++) {
        for (cmd = (*p)->commands; cmd && cmd->name.len; cmd++) {
            d = rg_conf_distance(name->data, name->len, cmd->name.data,
                                 cmd->name.len);
            if (d > max) {
                continue;
            }

            d += (cmd->type & cf->ctx_type) ? 0 : max + 1;

            if (d < best) {
                best = d;
                near = cmd->name.data;
            }
        }
    }

    return near;
}


/* The first n words read, as the file has them: "tools calc time_now",
 * cut with " ..." past what words holds. */
static void
rg_conf_words(rg_conf_t *cf, rg_uint_t n, char *words, size_t size)
{
    int        w;
    size_t     len;
    rg_uint_t  j;

    len = 0;
    words[0] = '\0';

    for (j = 0; j < n && len < size; j++) {
        w = snprintf(words + len, size - len, "%s%.*s", j ? " " : "",
                     (int) cf->args[j].len, cf->args[j].data);
        len += w < 0 ? 0 : (size_t) w;
    }

    if (len >= size && size > 5) {
        memcpy(words + size - 5, " ...", 5);
    }
}


/* "tools calc⏎ dedupe global;": a directive whose ";" was forgotten
 * takes the words of the next line for its own, and fails later for a
 * reason that hides this one. An unquoted word that starts a line and
 * names a directive of this context is taken for that. */
static rg_int_t
rg_conf_unterminated(rg_conf_t *cf)
{
    char           words[72];
    void          *conf;
    rg_uint_t      i, known;
    rg_command_t  *cmd;

    for (i = 1; i < cf->nargs; i++) {
        if (cf->args_line[i] == cf->args_line[i - 1]
            || (cf->args_quoted & (1u << i)))
        {
            continue;
        }

        cmd = rg_conf_find(cf, &cf->args[i], &conf, &known);

        if (cmd == NULL && !rg_str_eq(&cf->args[i], "include")) {
            continue;
        }

        /* the words before the line break */
        rg_conf_words(cf, i, words, sizeof(words));

        rg_conf_log_error(RG_LOG_EMERG, cf, 0,
                          "missing \";\" after \"%s\": line %lu starts with "
                          "the directive \"%.*s\" (quote it if it is an "
                          "argument)", words,
                          (unsigned long) cf->args_line[i],
                          (int) cf->args[i].len, cf->args[i].data);
        return RG_ERROR;
    }

    return RG_OK;
}


static char *
rg_conf_handler(rg_conf_t *cf, rg_int_t last)
{
    char          *rv;
    void          *conf;
    rg_str_t      *name;
    rg_uint_t      argn, known;
    const char    *near;
    rg_command_t  *cmd;

    name = &cf->args[0];

    /* every error from here on names the line the directive starts on */
    cf->line = cf->args_line[0];

    if (rg_str_eq(name, "include")) {
        if (last != RG_OK) {
            rg_conf_log_error(RG_LOG_EMERG, cf, 0,
                              "directive \"include\" is not terminated "
                              "by \";\"");
            return RG_CONF_ERROR;
        }

        if (cf->nargs != 2) {
            rg_conf_log_error(RG_LOG_EMERG, cf, 0,
                              "invalid number of arguments in \"include\" "
                              "directive, expecting one file name or mask");
            return RG_CONF_ERROR;
        }

        return rg_conf_include(cf);
    }

    conf = NULL;
    cmd = rg_conf_find(cf, name, &conf, &known);

    if (cmd == NULL) {
        if (cf->handler) {
            if (last != RG_OK) {
                rg_conf_log_error(RG_LOG_EMERG, cf, 0,
                                  "directive \"%.*s\" is not terminated "
                                  "by \";\"", (int) name->len, name->data);
                return RG_CONF_ERROR;
            }

            return cf->handler(cf, cf->handler_data);
        }

        if (known) {
            char  places[256];

            rg_conf_places(cf, known, places, sizeof(places));

            rg_conf_log_error(RG_LOG_EMERG, cf, 0,
                              "\"%.*s\" directive is not allowed here%s%s",
                              (int) name->len, name->data,
                              places[0] ? "; it belongs " : "", places);
            return RG_CONF_ERROR;
        }

        near = rg_conf_nearest(cf, name);

        rg_conf_log_error(RG_LOG_EMERG, cf, 0,
                          "unknown directive \"%.*s\"%s%s%s",
                          (int) name->len, name->data,
                          near ? " (did you mean \"" : "",
                          near ? near : "", near ? "\"?)" : "");
        return RG_CONF_ERROR;
    }

    if (rg_conf_unterminated(cf) != RG_OK) {
        return RG_CONF_ERROR;
    }

    cf->opens_block = last == RG_CONF_BLOCK_START;

    if (!(cmd->type & (RG_CONF_BLOCK | RG_CONF_MAYBE_BLOCK))
        && last != RG_OK)
    {
        rg_conf_log_error(RG_LOG_EMERG, cf, 0,
                          "directive \"%.*s\" is not terminated by \";\"",
                          (int) name->len, name->data);
        return RG_CONF_ERROR;
    }

    if ((cmd->type & RG_CONF_BLOCK) && last != RG_CONF_BLOCK_START) {
        rg_conf_log_error(RG_LOG_EMERG, cf, 0,
                          "directive \"%.*s\" has no opening \"{\"",
                          (int) name->len, name->data);
        return RG_CONF_ERROR;
    }

    argn = cf->nargs - 1;

    if (!((cmd->type & RG_CONF_NOARGS) && argn == 0)
        && !((cmd->type & RG_CONF_FLAG) && argn == 1)
        && !((cmd->type & RG_CONF_1MORE) && argn >= 1)
        && !((cmd->type & RG_CONF_2MORE) && argn >= 2)
        && !(argn >= 1 && argn <= 3
             && (cmd->type & (RG_CONF_TAKE1 << (argn - 1)))))
    {
        rg_conf_log_error(RG_LOG_EMERG, cf, 0,
                          "invalid number of arguments in \"%.*s\" directive",
                          (int) name->len, name->data);
        return RG_CONF_ERROR;
    }

    if (rg_conf_pos_add(cf, conf, cmd->name.data) != RG_OK) {
        return RG_CONF_ERROR;
    }

    rv = cmd->set(cf, cmd, conf);

    if (rv == RG_CONF_OK || rv == RG_CONF_ERROR) {
        return rv;
    }

    /* a block's setter read other words into cf->args since */
    rg_conf_log_error(RG_LOG_EMERG, cf, 0, "\"%.*s\" directive %s",
                      (int) cmd->name.len, cmd->name.data, rv);

    return RG_CONF_ERROR;
}


char *
rg_conf_full_path(rg_conf_t *cf, const rg_str_t *name)
{
    char        *p;
    const char  *slash;
    size_t       dirlen;

    if (name->len && name->data[0] == '/') {
        return rg_pstrdup(cf->pool, name->data, name->len);
    }

    /* relative to the file that names it */
    slash = cf->file ? strrchr(cf->file->name, '/') : NULL;
    if (slash == NULL) {
        return rg_pstrdup(cf->pool, name->data, name->len);
    }

    dirlen = slash - cf->file->name + 1;

    p = rg_palloc(cf->pool, dirlen + name->len + 1);
    if (p == NULL) {
        return NULL;
    }

    memcpy(p, cf->file->name, dirlen);
    memcpy(p + dirlen, name->data, name->len);
    p[dirlen + name->len] = '\0';

    return p;
}


static char *
rg_conf_include(rg_conf_t *cf)
{
    int        rc;
    char      *path, *rv;
    size_t     i;
    glob_t     g;
    rg_uint_t  block;

    if (cf->depth >= RG_CONF_MAX_INCLUDE) {
        rg_conf_log_error(RG_LOG_EMERG, cf, 0,
                          "includes nested deeper than %d",
                          RG_CONF_MAX_INCLUDE);
        return RG_CONF_ERROR;
    }

    path = rg_conf_full_path(cf, &cf->args[1]);
    if (path == NULL) {
        return RG_CONF_ERROR;
    }

    if (strpbrk(path, "*?[") == NULL) {
        cf->depth++;
        block = cf->block;
        cf->block = 0;
        rv = rg_conf_parse_file(cf, path);
        cf->block = block;
        cf->depth--;
        return rv;
    }

    rc = glob(path, 0, NULL, &g);

    if (rc == GLOB_NOMATCH) {
        return RG_CONF_OK;       /* like nginx: an empty mask is fine */
    }

    if (rc != 0) {
        rg_conf_log_error(RG_LOG_EMERG, cf, 0, "glob() \"%s\" failed", path);
        return RG_CONF_ERROR;
    }

    rv = RG_CONF_OK;

    for (i = 0; i < g.gl_pathc && rv == RG_CONF_OK; i++) {
        cf->depth++;
        block = cf->block;
        cf->block = 0;
        rv = rg_conf_parse_file(cf, g.gl_pathv[i]);
        cf->block = block;
        cf->depth--;
    }

    globfree(&g);

    return rv;
}


/* The tokenizer. Words are kept in the pool; quotes group blanks;
 * \" \\ \n \t are the escapes inside quotes. */
static rg_int_t
rg_conf_read_token(rg_conf_t *cf)
{
    char            ch, quote, *w;
    size_t          start;
    rg_buf_t        word;
    rg_uint_t       need_space;
    rg_conf_file_t *f;

    f = cf->file;
    cf->nargs = 0;
    cf->line = 0;
    cf->args_quoted = 0;
    need_space = 0;

    for ( ;; ) {

        /* blanks and comments */
        while (f->pos < f->len) {
            ch = f->buf[f->pos];

            if (ch == '\n') {
                f->line++;
                f->pos++;
                need_space = 0;
                continue;
            }

            if (ch == ' ' || ch == '\t' || ch == '\r') {
                f->pos++;
                need_space = 0;
                continue;
            }

            if (ch == '#') {
                while (f->pos < f->len && f->buf[f->pos] != '\n') {
                    f->pos++;
                }
                continue;
            }

            break;
        }

        if (f->pos >= f->len) {
            if (cf->nargs > 0) {
                rg_conf_log_error(RG_LOG_EMERG, cf, 0,
                                  "unexpected end of file, "
                                  "expecting \";\" or \"}\"");
                return RG_ERROR;
            }

            return RG_CONF_FILE_DONE;
        }

        ch = f->buf[f->pos];

        if (ch == ';' || ch == '{') {
            if (cf->nargs == 0) {
                rg_conf_log_error(RG_LOG_EMERG, cf, 0, "unexpected \"%c\"",
                                  ch);
                return RG_ERROR;
            }

            f->pos++;
            return ch == ';' ? RG_OK : RG_CONF_BLOCK_START;
        }

        if (ch == '}') {
            if (cf->nargs > 0) {
                char  words[72];

                /* "max_rounds 2 }": said at the directive's line, and
                 * of the first ";" missing when two are */
                cf->line = cf->args_line[0];

                if (rg_conf_unterminated(cf) != RG_OK) {
                    return RG_ERROR;
                }

                rg_conf_words(cf, cf->nargs, words, sizeof(words));
                rg_conf_log_error(RG_LOG_EMERG, cf, 0,
                                  "missing \";\" after \"%s\" before \"}\"",
                                  words);
                return RG_ERROR;
            }

            f->pos++;
            return RG_CONF_BLOCK_DONE;
        }

        if (need_space) {
            rg_conf_log_error(RG_LOG_EMERG, cf, 0, "unexpected \"%c\"", ch);
            return RG_ERROR;
        }

        if (cf->nargs == RG_CONF_MAX_ARGS) {
            rg_conf_log_error(RG_LOG_EMERG, cf, 0, "too many arguments");
            return RG_ERROR;
        }

        /* a word */
        word.data = NULL;
        word.len = 0;
        word.cap = 0;

        cf->args_line[cf->nargs] = f->line;

        if (ch == '"' || ch == '\'') {
            cf->args_quoted |= 1u << cf->nargs;
            quote = ch;
            f->pos++;

            for ( ;; ) {
                if (f->pos >= f->len) {
                    rg_conf_log_error(RG_LOG_EMERG, cf, 0,
                                      "unexpected end of file in a quoted "
                                      "string, expecting %s",
                                      quote == '"' ? "'\"'" : "\"'\"");
                    rg_buf_free(&word);
                    return RG_ERROR;
                }

                ch = f->buf[f->pos++];

                if (ch == quote) {
                    break;
                }

                if (ch == '\n') {
                    f->line++;
                }

                if (ch == '\\' && f->pos < f->len) {
                    ch = f->buf[f->pos++];
                    switch (ch) {
                    case 'n':  ch = '\n'; break;
                    case 't':  ch = '\t'; break;
                    case 'r':  ch = '\r'; break;
                    case '"': case '\'': case '\\': break;
                    case '\n':
                        f->line++;
                        /* fall through */
                    default:
                        if (rg_buf_append(&word, "\\", 1) != RG_OK) {
                            rg_buf_free(&word);
                            return RG_ERROR;
                        }
                    }
                }

                if (rg_buf_append(&word, &ch, 1) != RG_OK) {
                    rg_buf_free(&word);
                    return RG_ERROR;
                }
            }

            need_space = 1;

        } else {
            start = f->pos;

            while (f->pos < f->len) {
                ch = f->buf[f->pos];
                /* like nginx, # starts a comment only before a word */
                if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n'
                    || ch == ';' || ch == '{' || ch == '}')
                {
                    break;
                }

                if (ch == '"' || ch == '\'') {
                    rg_conf_log_error(RG_LOG_EMERG, cf, 0,
                                      "unexpected quote inside a word");
                    return RG_ERROR;
                }

                f->pos++;
            }

            if (rg_buf_append(&word, f->buf + start, f->pos - start)
                != RG_OK)
            {
                rg_buf_free(&word);
                return RG_ERROR;
            }
        }

        w = rg_pstrdup(cf->pool, word.data ? word.data : "", word.len);
        cf->args[cf->nargs].len = word.len;
        cf->args[cf->nargs].data = w;
        rg_buf_free(&word);

        if (w == NULL) {
            return RG_ERROR;
        }

        cf->nargs++;
    }
}


/* "64k", "1m", "1g" or bytes */
rg_int_t
rg_conf_parse_size(const rg_str_t *s, size_t *out)
{
    size_t    len, mul;
    rg_int_t  v;

    len = s->len;
    mul = 1;

    if (len == 0) {
        return RG_ERROR;
    }

    switch (s->data[len - 1]) {
    case 'k': case 'K': mul = 1024; len--; break;
    case 'm': case 'M': mul = 1024 * 1024; len--; break;
    case 'g': case 'G': mul = 1024 * 1024 * 1024; len--; break;
    }

    v = rg_atoi(s->data, len);
    if (v == RG_ERROR || (size_t) v > SIZE_MAX / mul / 2) {
        return RG_ERROR;
    }

    *out = (size_t) v * mul;

    return RG_OK;
}


/* "500ms", "30s", "2m", "1h", "1d", "1m30s"; a bare number is seconds */
rg_int_t
rg_conf_parse_msec(const rg_str_t *s, rg_msec_t *out)
{
    size_t     i;
    uint64_t   total, n, mul;
    rg_uint_t  digits;

    if (s->len == 0) {
        return RG_ERROR;
    }

    total = 0;
    i = 0;

    while (i < s->len) {
        n = 0;
        digits = 0;

        while (i < s->len && s->data[i] >= '0' && s->data[i] <= '9') {
            if (n > UINT64_MAX / 10 - 10) {
                return RG_ERROR;
            }
            n = n * 10 + (s->data[i++] - '0');
            digits++;
        }

        if (digits == 0) {
            return RG_ERROR;
        }

        if (i == s->len) {
            mul = 1000;

        } else if (s->data[i] == 'm' && i + 1 < s->len
                   && s->data[i + 1] == 's')
        {
            mul = 1;
            i += 2;

        } else {
            switch (s->data[i++]) {
            case 's': mul = 1000; break;
            case 'm': mul = 60 * 1000; break;
            case 'h': mul = 3600 * 1000; break;
            case 'd': mul = 86400 * 1000; break;
            default:
                return RG_ERROR;
            }
        }

        if (n > (UINT64_MAX / 2 - total) / mul) {
            return RG_ERROR;
        }

        total += n * mul;
    }

    *out = total;

    return RG_OK;
}


char *
rg_conf_set_str_slot(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    rg_str_t  *field;

    field = (rg_str_t *) ((char *) conf + cmd->offset);

    if (field->data) {
        return "is duplicate";
    }

    *field = cf->args[1];

    return RG_CONF_OK;
}


char *
rg_conf_set_str_array_slot(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    rg_str_t     *s;
    rg_uint_t     i;
    rg_array_t  **a;

    a = (rg_array_t **) ((char *) conf + cmd->offset);

    if (*a == NULL) {
        *a = rg_array_create(cf->pool, 4, sizeof(rg_str_t));
        if (*a == NULL) {
            return RG_CONF_ERROR;
        }
    }

    for (i = 1; i < cf->nargs; i++) {
        s = rg_array_push(*a);
        if (s == NULL) {
            return RG_CONF_ERROR;
        }
        *s = cf->args[i];
    }

    return RG_CONF_OK;
}


/* what the num and double setters say of a value out of their bounds
 * (b: NULL, none) */
static char *
rg_conf_check_bounds(const rg_conf_num_bounds_t *b, double v)
{
    static char  msg[96];

    if (b && (v < b->min || v > b->max)) {
        snprintf(msg, sizeof(msg), "expects a number from %ld to %ld",
                 (long) b->min, (long) b->max);
        return msg;
    }

    return RG_CONF_OK;
}


char *
rg_conf_set_num_slot(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    char      *rv;
    rg_int_t  *np, v;

    np = (rg_int_t *) ((char *) conf + cmd->offset);

    if (*np != RG_CONF_UNSET) {
        return "is duplicate";
    }

    v = rg_atoi(cf->args[1].data, cf->args[1].len);
    if (v == RG_ERROR) {
        return "expects a non-negative integer";
    }

    rv = rg_conf_check_bounds(cmd->post, v);
    if (rv != RG_CONF_OK) {
        return rv;
    }

    *np = v;

    return RG_CONF_OK;
}


char *
rg_conf_set_size_slot(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    size_t  *sp;

    sp = (size_t *) ((char *) conf + cmd->offset);

    if (*sp != RG_CONF_UNSET_SIZE) {
        return "is duplicate";
    }

    if (rg_conf_parse_size(&cf->args[1], sp) != RG_OK) {
        return "expects a size such as 512, 64k or 1m";
    }

    return RG_CONF_OK;
}


char *
rg_conf_set_msec_slot(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    rg_msec_t             *mp;
    rg_conf_num_bounds_t  *b;

    mp = (rg_msec_t *) ((char *) conf + cmd->offset);
    b = cmd->post;

    if (*mp != RG_CONF_UNSET_MSEC) {
        return "is duplicate";
    }

    if (rg_conf_parse_msec(&cf->args[1], mp) != RG_OK) {
        return "expects a time such as 500ms, 30s, 5m or 1h";
    }

    /* bounds, when given, are in ms: a min of 1 refuses 0 */
    if (b && *mp < (rg_msec_t) b->min) {
        return b->min == 1 ? "must be more than 0"
                           : "is shorter than the least allowed";
    }

    return RG_CONF_OK;
}


char *
rg_conf_set_flag_slot(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    rg_int_t  *fp;

    fp = (rg_int_t *) ((char *) conf + cmd->offset);

    if (*fp != RG_CONF_UNSET) {
        return "is duplicate";
    }

    if (rg_str_eq(&cf->args[1], "on")) {
        *fp = 1;

    } else if (rg_str_eq(&cf->args[1], "off")) {
        *fp = 0;

    } else {
        return "expects \"on\" or \"off\"";
    }

    return RG_CONF_OK;
}


char *
rg_conf_set_double_slot(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    char    *end, *rv;
    double  *dp, v;

    dp = (double *) ((char *) conf + cmd->offset);

    if (!isnan(*dp)) {
        return "is duplicate";
    }

    errno = 0;
    v = strtod(cf->args[1].data, &end);
    if (errno || end != cf->args[1].data + cf->args[1].len
        || cf->args[1].len == 0 || !isfinite(v))
    {
        return "expects a number such as 0.7";
    }

    rv = rg_conf_check_bounds(cmd->post, v);
    if (rv != RG_CONF_OK) {
        return rv;
    }

    *dp = v;

    return RG_CONF_OK;
}


char *
rg_conf_set_enum_slot(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    static char      msg[256];
    size_t           len;
    rg_uint_t       *up;
    rg_conf_enum_t  *e;

    up = (rg_uint_t *) ((char *) conf + cmd->offset);

    if (*up != RG_CONF_UNSET_UINT) {
        return "is duplicate";
    }

    for (e = cmd->post; e->name.len; e++) {
        if (e->name.len == cf->args[1].len
            && memcmp(e->name.data, cf->args[1].data, e->name.len) == 0)
        {
            *up = e->value;
            return RG_CONF_OK;
        }
    }

    len = snprintf(msg, sizeof(msg), "expects one of:");
    for (e = cmd->post; e->name.len && len < sizeof(msg); e++) {
        len += snprintf(msg + len, sizeof(msg) - len, " \"%.*s\"",
                        (int) e->name.len, e->name.data);
    }

    return msg;
}
