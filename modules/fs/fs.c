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
 * host's deadline for the call (host->deadline(), else their own).
 *
 * This file owns the module, its directives and tools and the two simple
 * ones (read_file, list_dir); grep is fs_grep.c's, the walk of a path
 * fs_path.c's, the output and small helpers fs_text.c's. */

#include "fs.h"


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
