/* rg_test_host.h: a fake rg_tool_host_t, to drive the bundled modules'
 * tools in the test's own process as the host would (tests/unit/
 * test_module_*.c). The built .so files are dlopen()ed from
 * $RG_MODULES_DIR (default objs/modules) with RTLD_NOW|RTLD_LOCAL;
 * arguments are read with jansson, answers captured in an
 * rg_test_call_t, sizes and times parsed by the host's rules (written
 * again here); http_get() and agent_run() record what they were asked in
 * rg_test_async and return, and the test calls their callbacks by hand.
 * Uses nothing of the host but rg_tool_module.h.
 *
 * rg_test_host_setup() loads fs, exec, http and agent and builds the tree
 * that fs and exec work on, in a fresh folder (rg_test_base):
 *
 *     outside.txt, outdir/f.txt         what the escapes aim at
 *     root/                             rg_test_root, the tools' root
 *         a.txt "hello\nworld\n"  notes/b.txt "alpha\nTODO one\nbeta\n
 *         TODO two\n"  notes/c.md "TODO three\n"  notes/deep/d.txt
 *         "todo lower\r\nTODO four\r\n"  bin.dat "TODO bin\0x"
 *         empty.txt  emptydir/  big.txt (100 digits)  utf8.txt (39 x,
 *         then "\xc3\xa9tail")  wide/long.txt ("TODO " and 295 w)  sub/
 *         link-in -> notes/b.txt  link-dir -> notes  link-abs-in ->
 *         ROOT/a.txt  link-out -> ../outside.txt  link-outdir ->
 *         ../outdir  link-abs -> /etc/passwd  link-abs-out ->
 *         BASE/outside.txt  loop1 <-> loop2  sub/up -> ..  sub/up2 -> ../..
 *
 * rg_test_host_reset() (each case's setup) forgets what the last case
 * logged and asked. */

#ifndef RG_TEST_HOST_H
#define RG_TEST_HOST_H

#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include <rg_tool_module.h>


/* a call as the fake host sees it; `call` first, so that the host's
 * callbacks can cast back */
typedef struct {
    rg_tool_call_t            call;
    json_t                   *root;
    char                     *args;
    int                       answers;
    int                       failed;
    char                     *result;
    size_t                    result_len;
} rg_test_call_t;


typedef struct {
    void                     *handle;
    const rg_tool_module_t   *module;
} rg_test_so_t;


/* what http_get() and agent_run() were asked last */
typedef struct {
    int                       calls;
    int                       refuse;       /* return -1 */
    int                       cancelled;
    rg_tool_call_t           *call;
    char                      url[2048];
    size_t                    max_bytes;
    uint64_t                  timeout;
    rg_tool_http_pt           http_cb;
    char                      agent[128];
    char                      input[1024];
    size_t                    input_len;
    rg_tool_agent_pt          agent_cb;
    const char               *error;
} rg_test_async_t;


extern rg_tool_host_t   rg_test_host;

/* the last line a tool logged, and its level */
extern int              rg_test_log_level;
extern char             rg_test_log_text[1024];
extern rg_test_async_t  rg_test_async;

extern rg_test_so_t     rg_test_mod_fs;
extern rg_test_so_t     rg_test_mod_exec;
extern rg_test_so_t     rg_test_mod_http;
extern rg_test_so_t     rg_test_mod_agent;

/* the tree: base/root is the fs and exec root; base/outside.txt and
 * base/outdir are what the escapes aim at */
extern char             rg_test_base[PATH_MAX];
extern char             rg_test_root[PATH_MAX];


/* the group's setup and teardown, and each case's setup */
int rg_test_host_setup(void **state);
int rg_test_host_teardown(void **state);
int rg_test_host_reset(void **state);

/* runs a group of cases (each cmocka_unit_test_setup(f, rg_test_host_reset))
 * with the modules loaded and the tree made */
#define rg_test_host_run(tests)                                              \
    cmocka_run_group_tests(tests, rg_test_host_setup, rg_test_host_teardown)

/* calls */
void rg_test_call_init(rg_test_call_t *tc, const rg_tool_t *tool, void *conf,
    const char *args, size_t len);
void rg_test_call_free(rg_test_call_t *tc);
int rg_test_call_run(rg_test_call_t *tc, const rg_tool_t *tool, void *conf,
    const char *args);

#define rg_test_ok(tool, conf, args, expect)                                 \
    rg_test_expect(tool, conf, args, sizeof(args) - 1, 0, expect,            \
                   __FILE__, __LINE__)

#define rg_test_err(tool, conf, args, expect)                                \
    rg_test_expect(tool, conf, args, sizeof(args) - 1, 1, expect,            \
                   __FILE__, __LINE__)

void rg_test_expect(const rg_tool_t *tool, void *conf, const char *args,
    size_t len, int failed, const char *expect, const char *file, int line);

/* loading and configuring */
int rg_test_load(rg_test_so_t *so, const char *name);
void rg_test_unload(rg_test_so_t *so);
const rg_tool_t *rg_test_tool(const rg_tool_module_t *m, const char *name);
/* applies `name args...;` (NULL-ended) as the host would; returns set()'s
 * phrase, NULL when taken */
const char *rg_test_set(const rg_tool_module_t *m, void *conf,
    const char *name, ...);
/* the same through another host table, such as an older one */
const char *rg_test_set_with(rg_tool_host_t *host, const rg_tool_module_t *m,
    void *conf, const char *name, ...);
void rg_test_module_valid(const rg_tool_module_t *m, const char *name,
    size_t ntools);

/* an fs conf on rg_test_root, with max_read and max_results unless NULL */
void *rg_test_fs_conf(const char *max_read, const char *max_results);
/* an exec conf on rg_test_root, with timeout, max_output and
 * `allow allow1 allow2` unless NULL */
void *rg_test_exec_conf(const char *timeout, const char *max_output,
    const char *allow1, const char *allow2);

/* a malloc()ed string from a format */
char *rg_test_strf(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* the tree: paths relative to rg_test_base */
void rg_test_write(const char *rel, const char *data, size_t len);
void rg_test_mkdir(const char *rel);
void rg_test_symlink(const char *target, const char *rel);
/* nftw()'s callback that removes what it walks (FTW_DEPTH | FTW_PHYS) */
struct stat;
struct FTW;
int rg_test_rm(const char *path, const struct stat *st, int flag,
    struct FTW *ftw);

/* the host's http_get(): records what it was asked in rg_test_async */
int rg_test_host_http_get(rg_tool_call_t *call, const char *url,
    size_t max_bytes, uint64_t timeout_ms, rg_tool_http_pt cb, void *data);

#endif /* RG_TEST_HOST_H */
