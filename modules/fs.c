/* fs.c: the "fs" tool module: read-only access to one directory tree.
 *
 * Owns the confinement of paths to the configured root and three tools:
 * read_file (the text of a file, capped), list_dir (a sorted listing) and
 * grep (a recursive search with PCRE2, whose match, depth and heap limits
 * bound the work of one line: a pattern that hits them is an error for
 * that call, never a thread held for good). Every path is relative to
 * the root and is opened by walking it one component at a time from a
 * descriptor of the root with openat(O_PATH | O_NOFOLLOW): a symlink is read
 * and its target spliced into the rest of the walk, so one that leads
 * outside the root (through "..", or an absolute target elsewhere) is
 * refused at the component where it would leave, with no window between a
 * check and an open. It never writes, follows no symlink during grep, and
 * returns text only (a file with NUL bytes is binary).
 *
 *     module fs { root /srv/notes; max_read 64k; max_results 100; }
 *
 * The tools are RG_TOOL_BLOCKING: the host runs them in its thread pool, so
 * everything here is reentrant: no static mutable state, readdir() on one
 * stream per call, strerror_r(), a PCRE2 pattern and match data per call.
 * Walks and searches look at the clock as they go and answer before the
 * host's deadline for the call (host->deadline(), else their own). */

#include <rg_tool_module.h>

#define PCRE2_CODE_UNIT_WIDTH  8

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pcre2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>


#define RG_FS_MAX_READ      65536
#define RG_FS_MAX_RESULTS   100
#define RG_FS_MAX_DEPTH     64          /* directories in a path or a grep */
#define RG_FS_MAX_LINKS     40          /* symlinks followed in one path */
#define RG_FS_SHOWN         200         /* bytes of a path quoted in errors */
#define RG_FS_ERR_LEN       512
#define RG_FS_HEAD          8192        /* bytes checked for NUL first */
#define RG_FS_LINE_CUT      200         /* bytes of a line grep shows */
#define RG_FS_GREP_BUF      65536       /* longer lines are cut */
#define RG_FS_GREP_FILES    20000       /* grep gives up after so many */
#define RG_FS_GREP_BYTES    (256 * 1024 * 1024)
#define RG_FS_PATTERN_MAX   1024
#define RG_FS_MATCH_LIMIT   5000000     /* PCRE2 backtracking steps a line */
#define RG_FS_MATCH_CHEAP   10000       /* steps a line takes unlooked at */
#define RG_FS_DEPTH_LIMIT   100000      /* nested backtracking points */
#define RG_FS_HEAP_LIMIT    16384       /* KiB for the match's frames */
#define RG_FS_JIT_STACK     (1024 * 1024)
#define RG_FS_TIME_LIMIT    10000       /* ms, when the host sets none */
#define RG_FS_CLOCK_EVERY   64          /* cheap lines or entries between
                                           looks at the clock */

#define RG_FS_EXAMPLE       "e.g. \"notes/a.txt\""

/* whether the host table has a member this module was built to use */
#define rg_fs_host_has(host, member)                                         \
    ((host)->size >= offsetof(rg_tool_host_t, member)                        \
                     + sizeof(((rg_tool_host_t *) 0)->member)                \
     && (host)->member != NULL)


typedef struct {
    char                     *root;         /* absolute, no symlinks */
    size_t                    root_len;
    size_t                    max_read;     /* 0: not set */
    size_t                    max_results;  /* 0: not set */
} rg_fs_conf_t;


/* a growing output buffer; oom sticks */
typedef struct {
    char                     *data;
    size_t                    len;
    size_t                    size;
    int                       oom;
} rg_fs_buf_t;


/* a path argument, checked, and its quoted form for messages */
typedef struct {
    const char               *path;
    size_t                    len;
    char                      shown[RG_FS_SHOWN + 8];
} rg_fs_path_t;


typedef struct {
    pcre2_code               *re;
    pcre2_match_data         *md;
    pcre2_match_context      *mc;
    pcre2_jit_stack          *js;
    rg_fs_buf_t               out;
    size_t                    matches;
    size_t                    max;
    size_t                    files;
    size_t                    bytes;
    size_t                    ticks;        /* lines since the last look */
    uint64_t                  deadline;     /* ms, CLOCK_MONOTONIC */
    int                       stopped;      /* RG_FS_STOP_* */
    int                       limit;        /* the PCRE2 error, when 4 */
    size_t                    limit_line;
    char                      limit_path[RG_FS_SHOWN + 8];
    size_t                    path_len;
    char                      path[PATH_MAX];
    char                      buf[RG_FS_GREP_BUF + 1];
} rg_fs_grep_t;

#define RG_FS_STOP_RESULTS  1
#define RG_FS_STOP_BUDGET   2
#define RG_FS_STOP_TIME     3
#define RG_FS_STOP_LIMIT    4


static const char *rg_fs_set_root(rg_tool_host_t *host, void *conf, int argc,
    const char **argv);
static const char *rg_fs_set_size(rg_tool_host_t *host, void *conf, int argc,
    const char **argv);
static const char *rg_fs_set_count(rg_tool_host_t *host, void *conf,
    int argc, const char **argv);
static void *rg_fs_create_conf(rg_tool_host_t *host);
static int rg_fs_init(rg_tool_host_t *host, void *conf);
static void rg_fs_exit(rg_tool_host_t *host, void *conf);
static int rg_fs_read_file(rg_tool_call_t *call);
static int rg_fs_list_dir(rg_tool_call_t *call);
static int rg_fs_grep(rg_tool_call_t *call);
static int rg_fs_grep_compile(rg_tool_call_t *call, rg_fs_grep_t *g,
    const char *pattern, size_t len, const char *shown);
static void rg_fs_grep_free(rg_fs_grep_t *g);
static int rg_fs_grep_late(rg_fs_grep_t *g);
static void rg_fs_grep_dir(rg_fs_grep_t *g, int fd, int depth);
static void rg_fs_grep_file(rg_fs_grep_t *g, int fd);
static void rg_fs_grep_line(rg_fs_grep_t *g, char *line, size_t len,
    size_t lineno);
static int rg_fs_arg_path(rg_tool_call_t *call, int required,
    rg_fs_path_t *p);
static int rg_fs_arg_count(rg_tool_call_t *call, const char *key,
    long long min, long long *v);
static int rg_fs_open(const rg_fs_conf_t *fcf, const rg_fs_path_t *p,
    struct stat *st, char *err, size_t err_len);
static void rg_fs_open_error(const rg_fs_path_t *p, int err, char *buf,
    size_t len);
static char **rg_fs_names(DIR *dir, uint64_t deadline, size_t *n);
static uint64_t rg_fs_now(void);
static uint64_t rg_fs_deadline(rg_tool_call_t *call);
static void rg_fs_names_free(char **names, size_t n);
static int rg_fs_name_cmp(const void *a, const void *b);
static ssize_t rg_fs_pread(int fd, char *buf, size_t len, off_t off);
static size_t rg_fs_utf8_cut(const char *s, size_t len);
static const char *rg_fs_strerror(int err, char *buf, size_t len);
static void rg_fs_show(const char *s, size_t len, char *buf, size_t size);
static void rg_fs_buf_add(rg_fs_buf_t *b, const char *data, size_t len);
static void rg_fs_buf_printf(rg_fs_buf_t *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void rg_fs_buf_shown(rg_fs_buf_t *b, const char *s, size_t len);
static void rg_fs_answer(rg_tool_call_t *call, rg_fs_buf_t *b);


static const rg_tool_directive_t  rg_fs_directives[] = {
    { "root", 1, 1, rg_fs_set_root },
    { "max_read", 1, 1, rg_fs_set_size },
    { "max_results", 1, 1, rg_fs_set_count },
    { NULL, 0, 0, NULL }
};


static const rg_tool_t  rg_fs_tools[] = {
    { "read_file",
      "Read a text file under the fs root. Returns its text, at most "
      "max_read bytes (64 KiB by default) from the given byte offset; a "
      "longer file ends with a note giving the offset to read on from. "
      "Binary files and directories are refused.",
      "{\"type\":\"object\","
       "\"properties\":{"
        "\"path\":{\"type\":\"string\","
         "\"description\":\"Path relative to the fs root, such as "
          "notes/a.txt; no leading / and no ..\","
         "\"examples\":[\"README.md\"]},"
        "\"offset\":{\"type\":\"integer\",\"minimum\":0,"
         "\"description\":\"Byte offset to start from, default 0\"},"
        "\"length\":{\"type\":\"integer\",\"minimum\":1,"
         "\"description\":\"Bytes to read, default and at most max_read\"}},"
       "\"required\":[\"path\"]}",
      RG_TOOL_READ_ONLY | RG_TOOL_BLOCKING, 0, rg_fs_read_file, NULL },

    { "list_dir",
      "List a directory under the fs root, sorted by name, one entry per "
      "line: \"name/\" for a directory, \"name (N bytes)\" for a file, "
      "\"name -> target\" for a symlink.",
      "{\"type\":\"object\","
       "\"properties\":{"
        "\"path\":{\"type\":\"string\","
         "\"description\":\"Directory relative to the fs root, default . "
          "(the root itself)\","
         "\"examples\":[\".\"]}}}",
      RG_TOOL_READ_ONLY | RG_TOOL_BLOCKING, 0, rg_fs_list_dir, NULL },

    { "grep",
      "Search the text files under a path of the fs root, recursively, "
      "for lines matching a regular expression (PCRE2, Perl syntax). "
      "Returns \"path:line: text\" lines in name order; binary files and "
      "symlinks are skipped. A pattern that backtracks too much is refused.",
      "{\"type\":\"object\","
       "\"properties\":{"
        "\"pattern\":{\"type\":\"string\","
         "\"description\":\"Regular expression (Perl syntax), such as "
          "error|warning or ^int main; case-sensitive\","
         "\"examples\":[\"error\"]},"
        "\"path\":{\"type\":\"string\","
         "\"description\":\"File or directory relative to the fs root, "
          "default .\"},"
        "\"max_results\":{\"type\":\"integer\",\"minimum\":1,"
         "\"description\":\"Stop after this many matching lines (capped by "
          "the configuration, 100 by default)\"}},"
       "\"required\":[\"pattern\"]}",
      RG_TOOL_READ_ONLY | RG_TOOL_BLOCKING, 0, rg_fs_grep, NULL },

    { NULL, NULL, NULL, 0, 0, NULL, NULL }
};


RG_TOOL_EXPORT
rg_tool_module_t  rg_tool_module = {
    RG_TOOL_MODULE_V1,
    "fs",
    rg_fs_directives,
    rg_fs_create_conf,
    rg_fs_init,
    rg_fs_exit,
    rg_fs_tools
};


/* configuration */


static const char *
rg_fs_set_root(rg_tool_host_t *host, void *conf, int argc, const char **argv)
{
    rg_fs_conf_t  *fcf;

    (void) host;
    (void) argc;

    fcf = conf;

    if (fcf->root != NULL) {
        return "is duplicate";
    }

    if (argv[0][0] == '\0') {
        return "must not be empty";
    }

    fcf->root = strdup(argv[0]);
    if (fcf->root == NULL) {
        return "cannot be stored: out of memory";
    }

    return NULL;
}


/* max_read SIZE in the host's units: bytes, or with a k, m or g suffix */
static const char *
rg_fs_set_size(rg_tool_host_t *host, void *conf, int argc, const char **argv)
{
    size_t         n;
    rg_fs_conf_t  *fcf;

    (void) argc;

    fcf = conf;

    if (fcf->max_read != 0) {
        return "is duplicate";
    }

    if (!rg_fs_host_has(host, parse_size)) {
        return "needs a newer reagent (no parse_size in the host table)";
    }

    if (host->parse_size(argv[0], &n) != 0 || n == 0
        || n > 64 * 1024 * 1024)
    {
        return "must be a size from 1 to 64m, such as 65536 or 64k";
    }

    fcf->max_read = n;

    return NULL;
}


static const char *
rg_fs_set_count(rg_tool_host_t *host, void *conf, int argc,
    const char **argv)
{
    char          *end;
    unsigned long  n;
    rg_fs_conf_t  *fcf;

    (void) host;
    (void) argc;

    fcf = conf;

    if (fcf->max_results != 0) {
        return "is duplicate";
    }

    errno = 0;
    n = strtoul(argv[0], &end, 10);

    if (argv[0][0] < '0' || argv[0][0] > '9' || *end != '\0' || errno != 0
        || n == 0 || n > 100000)
    {
        return "must be a number from 1 to 100000";
    }

    fcf->max_results = n;

    return NULL;
}


static void *
rg_fs_create_conf(rg_tool_host_t *host)
{
    (void) host;

    return calloc(1, sizeof(rg_fs_conf_t));
}


/* The root is resolved once, here, to an absolute path without symlinks:
 * the walk opens it, and absolute symlink targets are compared with it. */
static int
rg_fs_init(rg_tool_host_t *host, void *conf)
{
    char          *real, err[128];
    struct stat    st;
    rg_fs_conf_t  *fcf;

    fcf = conf;

    if (fcf->root == NULL) {
        host->log(host, RG_TOOL_LOG_ERR, "fs: the \"root\" directive is "
                  "required: add \"root /path/to/files;\" to \"module fs\"");
        return RG_TOOL_ERROR;
    }

    real = realpath(fcf->root, NULL);

    if (real == NULL || stat(real, &st) == -1) {
        host->log(host, RG_TOOL_LOG_ERR, "fs: root \"%s\": %s", fcf->root,
                  rg_fs_strerror(errno, err, sizeof(err)));
        free(real);
        return RG_TOOL_ERROR;
    }

    if (!S_ISDIR(st.st_mode)) {
        host->log(host, RG_TOOL_LOG_ERR, "fs: root \"%s\" is not a directory",
                  fcf->root);
        free(real);
        return RG_TOOL_ERROR;
    }

    free(fcf->root);
    fcf->root = real;
    fcf->root_len = strlen(real);

    if (fcf->max_read == 0) {
        fcf->max_read = RG_FS_MAX_READ;
    }

    if (fcf->max_results == 0) {
        fcf->max_results = RG_FS_MAX_RESULTS;
    }

    host->log(host, RG_TOOL_LOG_DEBUG, "fs: root \"%s\", max_read %zu, "
              "max_results %zu", fcf->root, fcf->max_read, fcf->max_results);

    return RG_TOOL_OK;
}


static void
rg_fs_exit(rg_tool_host_t *host, void *conf)
{
    rg_fs_conf_t  *fcf;

    (void) host;

    fcf = conf;

    if (fcf != NULL) {
        free(fcf->root);
    }

    free(fcf);
}


/* read_file */


static int
rg_fs_read_file(rg_tool_call_t *call)
{
    int            fd, binary, e;
    char           err[RG_FS_ERR_LEN], *text;
    size_t         want, got, size, head;
    ssize_t        n;
    long long      offset, length;
    struct stat    st;
    rg_fs_buf_t    out;
    rg_fs_path_t   p;
    rg_fs_conf_t  *fcf;

    fcf = call->conf;
    offset = 0;
    length = 0;

    if (rg_fs_arg_path(call, 1, &p) != 0
        || rg_fs_arg_count(call, "offset", 0, &offset) < 0
        || rg_fs_arg_count(call, "length", 1, &length) < 0)
    {
        return RG_TOOL_OK;
    }

    fd = rg_fs_open(fcf, &p, &st, err, sizeof(err));
    if (fd == -1) {
        call->host->fail(call, "%s", err);
        return RG_TOOL_OK;
    }

    if (S_ISDIR(st.st_mode)) {
        close(fd);
        call->host->fail(call, "path %s is a directory; use list_dir to see "
                         "what it holds", p.shown);
        return RG_TOOL_OK;
    }

    size = (size_t) st.st_size;

    if (size == 0) {
        close(fd);
        call->host->done(call, "(empty file)", sizeof("(empty file)") - 1);
        return RG_TOOL_OK;
    }

    if ((unsigned long long) offset >= size) {
        close(fd);
        call->host->fail(call, "offset %lld is past the end of %s (%zu "
                         "bytes); use an offset below %zu", offset, p.shown,
                         size, size);
        return RG_TOOL_OK;
    }

    want = fcf->max_read;

    if (length > 0 && (unsigned long long) length < want) {
        want = (size_t) length;
    }

    /* the head of the file and the part asked for are checked for NUL */

    head = size < RG_FS_HEAD ? size : RG_FS_HEAD;

    text = malloc((want > head ? want : head) + 1);
    if (text == NULL) {
        close(fd);
        call->host->fail(call, "out of memory");
        return RG_TOOL_OK;
    }

    /* a NUL in the head or in the part read: binary */

    binary = 0;
    n = 0;

    if (offset > 0) {
        n = rg_fs_pread(fd, text, head, 0);
        binary = (n > 0 && memchr(text, '\0', (size_t) n) != NULL);
    }

    if (n != -1 && !binary) {
        n = rg_fs_pread(fd, text, want, (off_t) offset);
        binary = (n > 0 && memchr(text, '\0', (size_t) n) != NULL);
    }

    if (n == -1) {
        e = errno;
        close(fd);
        free(text);
        call->host->fail(call, "cannot read %s: %s", p.shown,
                         rg_fs_strerror(e, err, sizeof(err)));
        return RG_TOOL_OK;
    }

    close(fd);

    if (binary) {
        free(text);
        call->host->fail(call, "path %s looks binary (NUL bytes); read_file "
                         "returns text only", p.shown);
        return RG_TOOL_OK;
    }

    got = (size_t) n;

    /* cut before a split UTF-8 sequence, so the next offset starts it */

    if ((size_t) offset + got < size) {
        got = rg_fs_utf8_cut(text, got);
    }

    memset(&out, 0, sizeof(out));
    rg_fs_buf_add(&out, text, got);
    free(text);

    if ((size_t) offset + got < size) {
        rg_fs_buf_printf(&out, "\n(truncated: file is %zu bytes; use offset "
                         "%zu to read more)", size, (size_t) offset + got);
    }

    rg_fs_answer(call, &out);

    return RG_TOOL_OK;
}


/* list_dir */


static int
rg_fs_list_dir(rg_tool_call_t *call)
{
    int            fd;
    DIR           *dir;
    char           err[RG_FS_ERR_LEN], target[PATH_MAX], **names;
    size_t         i, n, max;
    ssize_t        tn;
    struct stat    st;
    rg_fs_buf_t    out;
    rg_fs_path_t   p;
    rg_fs_conf_t  *fcf;

    fcf = call->conf;

    if (rg_fs_arg_path(call, 0, &p) != 0) {
        return RG_TOOL_OK;
    }

    fd = rg_fs_open(fcf, &p, &st, err, sizeof(err));
    if (fd == -1) {
        call->host->fail(call, "%s", err);
        return RG_TOOL_OK;
    }

    if (!S_ISDIR(st.st_mode)) {
        close(fd);
        call->host->fail(call, "path %s is a file; use read_file to read it",
                         p.shown);
        return RG_TOOL_OK;
    }

    dir = fdopendir(fd);
    if (dir == NULL) {
        call->host->fail(call, "cannot list %s: %s", p.shown,
                         rg_fs_strerror(errno, err, sizeof(err)));
        close(fd);
        return RG_TOOL_OK;
    }

    names = rg_fs_names(dir, rg_fs_deadline(call), &n);
    if (names == NULL && n == ETIMEDOUT) {
        closedir(dir);
        call->host->fail(call, "cannot list %s: it holds too many entries "
                         "to read in the time allowed; use grep on it, or a "
                         "subdirectory", p.shown);
        return RG_TOOL_OK;
    }

    if (names == NULL && n != 0) {
        closedir(dir);
        call->host->fail(call, "cannot list %s: %s", p.shown,
                         rg_fs_strerror((int) n, err, sizeof(err)));
        return RG_TOOL_OK;
    }

    memset(&out, 0, sizeof(out));
    max = fcf->max_results;

    for (i = 0; i < n && i < max; i++) {
        rg_fs_buf_shown(&out, names[i], strlen(names[i]));

        if (fstatat(dirfd(dir), names[i], &st, AT_SYMLINK_NOFOLLOW) == -1) {
            rg_fs_buf_add(&out, " (vanished)\n", 12);

        } else if (S_ISDIR(st.st_mode)) {
            rg_fs_buf_add(&out, "/\n", 2);

        } else if (S_ISREG(st.st_mode)) {
            rg_fs_buf_printf(&out, " (%lld bytes)\n",
                             (long long) st.st_size);

        } else if (S_ISLNK(st.st_mode)) {
            tn = readlinkat(dirfd(dir), names[i], target, sizeof(target) - 1);
            rg_fs_buf_add(&out, " -> ", 4);
            rg_fs_buf_shown(&out, target, tn > 0 ? (size_t) tn : 0);
            rg_fs_buf_add(&out, "\n", 1);

        } else {
            rg_fs_buf_printf(&out, " (%s)\n",
                             S_ISFIFO(st.st_mode) ? "fifo"
                             : S_ISSOCK(st.st_mode) ? "socket" : "device");
        }
    }

    if (n == 0) {
        rg_fs_buf_add(&out, "(empty directory)", 17);

    } else if (n > max) {
        rg_fs_buf_printf(&out, "(%zu more entries not shown; list a "
                         "subdirectory or use grep)", n - max);

    } else if (out.len > 0) {
        out.len--;              /* the last newline */
    }

    rg_fs_names_free(names, n);
    closedir(dir);

    rg_fs_answer(call, &out);

    return RG_TOOL_OK;
}


/* grep */


static int
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


/* arguments */


/* The path argument: relative, no "..", no NUL. An optional one that is
 * absent, null or empty is ".". 0, or -1 after fail(). */
static int
rg_fs_arg_path(rg_tool_call_t *call, int required, rg_fs_path_t *p)
{
    size_t       i, n;
    double       d;
    const char  *s;

    if (call->host->arg_string(call, "path", &p->path, &p->len) != 0
        || p->len == 0)
    {
        if (call->host->arg_number(call, "path", &d) == 0) {
            call->host->fail(call, "argument 'path' must be a string, "
                             RG_FS_EXAMPLE);
            return -1;
        }

        if (required) {
            call->host->fail(call, "missing argument 'path' (relative to the "
                             "fs root, " RG_FS_EXAMPLE ")");
            return -1;
        }

        p->path = ".";
        p->len = 1;
    }

    s = p->path;

    rg_fs_show(s, p->len, p->shown, sizeof(p->shown));

    if (strlen(s) != p->len) {
        call->host->fail(call, "path %s contains a NUL byte; send the path "
                         "as plain text, " RG_FS_EXAMPLE, p->shown);
        return -1;
    }

    if (p->len >= PATH_MAX) {
        call->host->fail(call, "path is too long (at most %d bytes)",
                         PATH_MAX - 1);
        return -1;
    }

    if (s[0] == '/') {
        call->host->fail(call, "path must be relative to the fs root, "
                         RG_FS_EXAMPLE ", not %s", p->shown);
        return -1;
    }

    for (i = 0; i < p->len; i += n + 1) {
        n = strcspn(s + i, "/");

        if (n == 2 && s[i] == '.' && s[i + 1] == '.') {
            call->host->fail(call, "path %s contains \"..\"; paths stay "
                             "inside the fs root: name the file from the "
                             "root, " RG_FS_EXAMPLE, p->shown);
            return -1;
        }
    }

    return 0;
}


/* An optional integer argument of at least min: 1 and *v set when given,
 * 0 when absent or null, -1 after fail(). */
static int
rg_fs_arg_count(rg_tool_call_t *call, const char *key, long long min,
    long long *v)
{
    int          b;
    double       d;
    size_t       len;
    const char  *s;

    if (call->host->arg_int(call, key, v) == 0) {
        if (*v < min) {
            call->host->fail(call, "argument '%s' must be at least %lld, not "
                             "%lld", key, min, *v);
            return -1;
        }

        return 1;
    }

    if (call->host->arg_number(call, key, &d) == 0
        || call->host->arg_string(call, key, &s, &len) == 0
        || call->host->arg_bool(call, key, &b) == 0)
    {
        call->host->fail(call, "argument '%s' must be an integer, such as "
                         "%lld", key, min > 0 ? min * 100 : 100);
        return -1;
    }

    return 0;
}


/* The walk. Opens p (checked by rg_fs_arg_path) under the root and returns
 * an O_RDONLY descriptor of the regular file or directory it names, with
 * its stat, or -1 with a message for the model in err.
 *
 * fds[0..depth] are the directories walked so far, fds[0] the root. Each
 * component is opened O_PATH | O_NOFOLLOW relative to fds[depth]: nothing
 * is followed by the kernel. A symlink's target replaces it at the head of
 * what is left to walk; ".." in a target pops one directory and, at the
 * root, is an escape; an absolute target must lie under the root's real
 * path, and restarts the walk at fds[0]. */
static int
rg_fs_open(const rg_fs_conf_t *fcf, const rg_fs_path_t *p, struct stat *st,
    char *err, size_t err_len)
{
    int          fds[RG_FS_MAX_DEPTH + 1], depth, links, fd, result, e;
    char         buf[PATH_MAX], target[PATH_MAX], name[NAME_MAX + 1];
    size_t       i, n, rest;
    ssize_t      tn;
    const char  *t;
    struct stat  lst;

    result = -1;
    depth = 0;
    links = 0;
    e = 0;

    memcpy(buf, p->path, p->len + 1);
    i = 0;

    fds[0] = open(fcf->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fds[0] == -1) {
        snprintf(err, err_len, "cannot open the fs root: %s",
                 rg_fs_strerror(errno, name, sizeof(name)));
        return -1;
    }

    for ( ;; ) {
        while (buf[i] == '/') {
            i++;
        }

        if (buf[i] == '\0') {
            /* the path names the directory reached */
            result = openat(fds[depth], ".",
                            O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            e = errno;

            if (result != -1 && fstat(result, st) == -1) {
                e = errno;
                close(result);
                result = -1;
            }

            break;
        }

        n = strcspn(buf + i, "/");

        if (n > NAME_MAX) {
            e = ENAMETOOLONG;
            break;
        }

        memcpy(name, buf + i, n);
        name[n] = '\0';
        i += n;

        if (n == 1 && name[0] == '.') {
            continue;
        }

        if (n == 2 && name[0] == '.' && name[1] == '.') {
            if (depth == 0) {
                e = EXDEV;
                break;
            }

            close(fds[depth--]);
            continue;
        }

        fd = openat(fds[depth], name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd == -1 || fstat(fd, &lst) == -1) {
            e = errno;
            if (fd != -1) {
                close(fd);
            }
            break;
        }

        if (S_ISLNK(lst.st_mode)) {
            tn = readlinkat(fd, "", target, sizeof(target));
            e = errno;
            close(fd);

            if (++links > RG_FS_MAX_LINKS) {
                e = ELOOP;
                break;
            }

            if (tn == -1) {
                break;
            }

            if ((size_t) tn >= sizeof(target) || tn == 0) {
                e = tn ? ENAMETOOLONG : ENOENT;
                break;
            }

            target[tn] = '\0';
            t = target;

            if (target[0] == '/') {
                /* under the root: its path, then "/" or the end (a root
                 * of "/" holds every absolute path) */

                n = (fcf->root_len == 1) ? 0 : fcf->root_len;

                if (strncmp(target, fcf->root, n) != 0
                    || (target[n] != '/' && target[n] != '\0'))
                {
                    e = EXDEV;
                    break;
                }

                t = target + n;

                while (depth > 0) {
                    close(fds[depth--]);
                }
            }

            /* buf = t + what is left after the symlink, which is empty
             * or starts with "/" */

            rest = strlen(buf + i);
            n = strlen(t);

            if (n + rest >= sizeof(buf)) {
                e = ENAMETOOLONG;
                break;
            }

            memmove(buf + n, buf + i, rest + 1);
            memcpy(buf, t, n);
            i = 0;
            continue;
        }

        if (S_ISDIR(lst.st_mode)) {
            if (depth == RG_FS_MAX_DEPTH) {
                close(fd);
                e = ENAMETOOLONG;
                break;
            }

            fds[++depth] = fd;
            continue;
        }

        close(fd);

        if (buf[i] == '/') {
            e = ENOTDIR;
            break;
        }

        if (!S_ISREG(lst.st_mode)) {
            e = ENODEV;
            break;
        }

        /* open the file itself; it must still be the one stat()ed */

        result = openat(fds[depth], name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK
                                          | O_NOCTTY | O_CLOEXEC);
        e = errno;

        if (result != -1
            && (fstat(result, st) == -1 || st->st_dev != lst.st_dev
                || st->st_ino != lst.st_ino))
        {
            close(result);
            result = -1;
            e = EAGAIN;
        }

        break;
    }

    while (depth >= 0) {
        close(fds[depth--]);
    }

    if (result == -1) {
        rg_fs_open_error(p, e, err, err_len);
    }

    return result;
}


static void
rg_fs_open_error(const rg_fs_path_t *p, int err, char *buf, size_t len)
{
    char  text[128];

    switch (err) {

    case ENOENT:
        snprintf(buf, len, "path %s does not exist; use list_dir to see "
                 "what is there", p->shown);
        break;

    case EXDEV:
        snprintf(buf, len, "path %s leads outside the fs root through a "
                 "symlink; use a path inside the root", p->shown);
        break;

    case ELOOP:
        snprintf(buf, len, "path %s is a symlink loop; use the file's real "
                 "path", p->shown);
        break;

    case ENOTDIR:
        snprintf(buf, len, "path %s goes through a file as if it were a "
                 "directory; use list_dir to check it", p->shown);
        break;

    case ENODEV:
        snprintf(buf, len, "path %s is not a regular file or a directory",
                 p->shown);
        break;

    case ENAMETOOLONG:
        snprintf(buf, len, "path %s is too long or too deep", p->shown);
        break;

    case EACCES:
    case EPERM:
        snprintf(buf, len, "path %s: permission denied", p->shown);
        break;

    case EAGAIN:
        snprintf(buf, len, "path %s changed while being opened; try again",
                 p->shown);
        break;

    default:
        snprintf(buf, len, "cannot open path %s: %s", p->shown,
                 rg_fs_strerror(err, text, sizeof(text)));
    }
}


/* directories */


/* The names in dir but "." and "..", sorted bytewise. NULL with *n = 0 when
 * empty; NULL with *n = errno on failure (ETIMEDOUT past the deadline, a
 * directory of millions of entries). readdir() is reentrant on
 * distinct streams (glibc, musl); readdir_r() is deprecated. */
static char **
rg_fs_names(DIR *dir, uint64_t deadline, size_t *n)
{
    char           **names, **nn;
    size_t           size;
    struct dirent   *de;

    names = NULL;
    size = 0;
    *n = 0;

    for ( ;; ) {
        if (*n % 1024 == 1023 && rg_fs_now() >= deadline) {
            errno = ETIMEDOUT;
            break;
        }

        errno = 0;
        de = readdir(dir);

        if (de == NULL) {
            if (errno != 0) {
                break;
            }

            if (*n > 1) {
                qsort(names, *n, sizeof(char *), rg_fs_name_cmp);
            }

            return names;
        }

        if (de->d_name[0] == '.'
            && (de->d_name[1] == '\0'
                || (de->d_name[1] == '.' && de->d_name[2] == '\0')))
        {
            continue;
        }

        if (*n == size) {
            size = size ? size * 2 : 64;

            nn = realloc(names, size * sizeof(char *));
            if (nn == NULL) {
                errno = ENOMEM;
                break;
            }

            names = nn;
        }

        names[*n] = strdup(de->d_name);
        if (names[*n] == NULL) {
            errno = ENOMEM;
            break;
        }

        (*n)++;
    }

    size = (size_t) errno;
    rg_fs_names_free(names, *n);
    *n = size;

    return NULL;
}


static void
rg_fs_names_free(char **names, size_t n)
{
    size_t  i;

    if (names == NULL) {
        return;
    }

    for (i = 0; i < n; i++) {
        free(names[i]);
    }

    free(names);
}


static int
rg_fs_name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *) a, *(char *const *) b);
}


/* helpers */


static uint64_t
rg_fs_now(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}


/* When this call stops looking: a tenth of its time before the host's
 * deadline (so the answer arrives before the host gives up), or
 * RG_FS_TIME_LIMIT from now when the host sets none. */
static uint64_t
rg_fs_deadline(rg_tool_call_t *call)
{
    uint64_t  now, end;

    now = rg_fs_now();
    end = rg_fs_host_has(call->host, deadline) ? call->host->deadline(call)
                                                : 0;

    if (end == 0) {
        return now + RG_FS_TIME_LIMIT;
    }

    if (end <= now) {
        return now;
    }

    return end - (end - now) / 10;
}


/* reads up to len bytes at off, fewer only at the end of the file */
static ssize_t
rg_fs_pread(int fd, char *buf, size_t len, off_t off)
{
    size_t   got;
    ssize_t  n;

    got = 0;

    while (got < len) {
        n = pread(fd, buf + got, len - got, off + (off_t) got);

        if (n == -1) {
            if (errno == EINTR) {
                continue;
            }

            return -1;
        }

        if (n == 0) {
            break;
        }

        got += (size_t) n;
    }

    return (ssize_t) got;
}


/* len, or less so that s[0..len) does not end inside a UTF-8 sequence */
static size_t
rg_fs_utf8_cut(const char *s, size_t len)
{
    size_t          i, need;
    unsigned char   c;

    for (i = len; i > 0 && len - i < 4; i--) {
        c = (unsigned char) s[i - 1];

        if ((c & 0xc0) == 0x80) {
            continue;           /* a continuation byte: look further back */
        }

        need = (c >= 0xf0) ? 4 : (c >= 0xe0) ? 3 : (c >= 0xc0) ? 2 : 1;

        return (len - (i - 1) < need) ? i - 1 : len;
    }

    return len;
}


/* strerror_r() of either flavour: GNU returns the text, XSI fills buf */
static const char *
rg_fs_strerror(int err, char *buf, size_t len)
{
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
    return strerror_r(err, buf, len);
#else
    return (strerror_r(err, buf, len) == 0) ? buf : "unknown error";
#endif
}


/* s quoted for a message: at most RG_FS_SHOWN bytes, control bytes as ? */
static void
rg_fs_show(const char *s, size_t len, char *buf, size_t size)
{
    size_t  i, n;

    n = len < RG_FS_SHOWN ? len : RG_FS_SHOWN;

    if (n + 6 > size) {
        n = size - 6;
    }

    buf[0] = '"';

    for (i = 0; i < n; i++) {
        buf[i + 1] = ((unsigned char) s[i] < 0x20 || s[i] == 0x7f)
                     ? '?' : s[i];
    }

    if (n < len) {
        memcpy(buf + n + 1, "...", 3);
        n += 3;
    }

    buf[n + 1] = '"';
    buf[n + 2] = '\0';
}


static void
rg_fs_buf_add(rg_fs_buf_t *b, const char *data, size_t len)
{
    char    *p;
    size_t   size;

    if (b->oom) {
        return;
    }

    if (b->len + len + 1 > b->size) {
        size = b->size ? b->size : 1024;

        while (size < b->len + len + 1) {
            size *= 2;
        }

        p = realloc(b->data, size);
        if (p == NULL) {
            b->oom = 1;
            return;
        }

        b->data = p;
        b->size = size;
    }

    memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
}


static void
rg_fs_buf_printf(rg_fs_buf_t *b, const char *fmt, ...)
{
    int      n;
    char     text[256];
    va_list  ap;

    va_start(ap, fmt);
    n = vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);

    if (n > 0) {
        rg_fs_buf_add(b, text, (size_t) n < sizeof(text)
                               ? (size_t) n : sizeof(text) - 1);
    }
}


/* a file name as listed: control bytes (a newline in a name) as ? */
static void
rg_fs_buf_shown(rg_fs_buf_t *b, const char *s, size_t len)
{
    size_t  i, start;

    for (start = 0, i = 0; i < len; i++) {
        if ((unsigned char) s[i] < 0x20 || s[i] == 0x7f) {
            rg_fs_buf_add(b, s + start, i - start);
            rg_fs_buf_add(b, "?", 1);
            start = i + 1;
        }
    }

    rg_fs_buf_add(b, s + start, len - start);
}


/* done() with the buffer, which is freed */
static void
rg_fs_answer(rg_tool_call_t *call, rg_fs_buf_t *b)
{
    if (b->oom) {
        call->host->fail(call, "out of memory");

    } else {
        call->host->done(call, b->data ? b->data : "", b->len);
    }

    free(b->data);
    b->data = NULL;
}

