/* fs.h: what the files of the fs module share (modules/fs/): its
 * configuration, the output buffer, a checked path argument, the state of
 * one grep, and the functions each file offers the others. The module
 * sees the host through rg_tool_module.h alone. The files:
 *
 *     fs.c         the module and its directives, read_file, list_dir
 *     fs_grep.c    grep
 *     fs_path.c    arguments, the walk of a path under the root, names
 *     fs_text.c    clocks, reads, text helpers, the output and the answer
 */

#ifndef RG_FS_H
#define RG_FS_H


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


/* fs_grep.c */
int rg_fs_grep(rg_tool_call_t *call);

/* fs_path.c */
int rg_fs_arg_path(rg_tool_call_t *call, int required, rg_fs_path_t *p);
int rg_fs_arg_count(rg_tool_call_t *call, const char *key, long long min,
    long long *v);
int rg_fs_open(const rg_fs_conf_t *fcf, const rg_fs_path_t *p,
    struct stat *st, char *err, size_t err_len);
char **rg_fs_names(DIR *dir, uint64_t deadline, size_t *n);
void rg_fs_names_free(char **names, size_t n);

/* fs_text.c */
uint64_t rg_fs_now(void);
uint64_t rg_fs_deadline(rg_tool_call_t *call);
ssize_t rg_fs_pread(int fd, char *buf, size_t len, off_t off);
size_t rg_fs_utf8_cut(const char *s, size_t len);
const char *rg_fs_strerror(int err, char *buf, size_t len);
void rg_fs_show(const char *s, size_t len, char *buf, size_t size);
void rg_fs_buf_add(rg_fs_buf_t *b, const char *data, size_t len);
void rg_fs_buf_printf(rg_fs_buf_t *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void rg_fs_buf_shown(rg_fs_buf_t *b, const char *s, size_t len);
void rg_fs_answer(rg_tool_call_t *call, rg_fs_buf_t *b);


#endif /* RG_FS_H */
