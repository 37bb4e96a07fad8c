/* rg_conf_file.h: the configuration file parser, nginx's syntax:
 * `directive args…;` and `name { … }` blocks, # comments, quoted strings,
 * `include`. Directives are tables of rg_command_t, one per part, whose
 * setters write into a conf struct at an offset; every error names
 * FILE:LINE. */

#ifndef RG_CONF_FILE_H
#define RG_CONF_FILE_H

/* Contexts a directive is allowed in: the main level, and blocks. The
 * bits 0x0002 to 0x0080 are the blocks': each is declared by the part
 * whose block it is, in that part's header. */
#define RG_MAIN_CONF        0x0001
#define RG_ANY_CONF         0x00ff

/* argument counts */
#define RG_CONF_NOARGS      0x00000100
#define RG_CONF_TAKE1       0x00000200
#define RG_CONF_TAKE2       0x00000400
#define RG_CONF_TAKE3       0x00000800
#define RG_CONF_TAKE12      (RG_CONF_TAKE1|RG_CONF_TAKE2)
#define RG_CONF_TAKE123     (RG_CONF_TAKE1|RG_CONF_TAKE2|RG_CONF_TAKE3)
#define RG_CONF_1MORE       0x00001000
#define RG_CONF_2MORE       0x00002000
#define RG_CONF_FLAG        0x00004000   /* on | off */
#define RG_CONF_BLOCK       0x00010000
#define RG_CONF_MAYBE_BLOCK 0x00020000   /* ";" or a block: opens_block */
#define RG_CONF_ARGS_MASK   0x00007f00

#define RG_CONF_MAX_ARGS    16
#define RG_CONF_UNSET       -1
#define RG_CONF_UNSET_UINT  ((rg_uint_t) -1)
#define RG_CONF_UNSET_SIZE  ((size_t) -1)
#define RG_CONF_UNSET_MSEC  ((rg_msec_t) -1)

#define RG_CONF_OK          NULL
#define RG_CONF_ERROR       ((char *) -1)

typedef char *(*rg_conf_set_pt)(rg_conf_t *cf, rg_command_t *cmd, void *conf);

struct rg_command_s {
    rg_str_t            name;
    rg_uint_t           type;
    rg_conf_set_pt      set;
    size_t              offset;
    void               *post;       /* setter-specific: bounds, enums */
};

#define rg_null_command  { rg_null_string, 0, NULL, 0, NULL }


/* A directive's entry in the reference (`reagent directives`,
 * conf/directives.md). A part keeps a table of them beside its
 * rg_command_t table, keyed by name, and the last row of its directives
 * points to it (rg_null_command_doc). An entry whose context is given
 * either says where a directive of the table goes when the part names no
 * block for it, or, when the table has no directive of its name,
 * documents one the part reads for another (a module's, inside
 * `module NAME { }`). */
typedef struct {
    const char         *name;
    const char         *syntax;     /* "max_rounds N;" */
    const char         *dflt;       /* as written in a file; "—": none */
    const char         *what;       /* what it does, one line */
    const char         *context;    /* NULL: from the directive's type */
} rg_conf_doc_t;

#define rg_null_command_doc(docs)  { rg_null_string, 0, NULL, 0, docs }
#define rg_null_doc  { NULL, NULL, NULL, NULL, NULL }

typedef struct {
    rg_int_t            min;
    rg_int_t            max;
} rg_conf_num_bounds_t;

typedef struct {
    rg_str_t            name;
    rg_uint_t           value;
} rg_conf_enum_t;

typedef struct rg_conf_file_s  rg_conf_file_t;

struct rg_conf_s {
    rg_str_t            args[RG_CONF_MAX_ARGS];
    rg_uint_t           nargs;

    rg_pool_t          *pool;       /* the cycle's */
    rg_cycle_t         *cycle;
    rg_log_t           *log;

    rg_conf_file_t     *file;       /* the file being read */
    rg_uint_t           ctx_type;   /* RG_MAIN_CONF, or a block's bit */
    void               *ctx;        /* in a block, its conf struct; at
                                       the main level, the confs of the
                                       parts (void *[]) by index */
    rg_part_t         **parts;      /* whose directives, NULL-ended */

    /* a block may take directives no table lists (a module's own) */
    char             *(*handler)(rg_conf_t *cf, void *data);
    void               *handler_data;

    rg_uint_t           depth;      /* include nesting */
    rg_uint_t           block;      /* block nesting */
    rg_uint_t           opens_block; /* a MAYBE_BLOCK directive has "{" */

    char                errmsg[512]; /* the last error, for -t and tests */

    /* the line the directive being read starts on (0: between
     * directives, where an error names the line being read), and the
     * line each of its words starts on, whether it was quoted (a bit
     * each) */
    rg_uint_t           line;
    rg_uint_t           args_line[RG_CONF_MAX_ARGS];
    rg_uint_t           args_quoted;
};

char *rg_conf_parse_file(rg_conf_t *cf, const char *filename);
char *rg_conf_parse_string(rg_conf_t *cf, const char *name, const char *text);
char *rg_conf_parse_block(rg_conf_t *cf);
/* a block's setter: parses up to its "}" with ctx and type, then puts
 * back the context it was in */
char *rg_conf_block(rg_conf_t *cf, rg_uint_t type, void *ctx);
void rg_conf_log_error(rg_uint_t level, rg_conf_t *cf, int err,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
const char *rg_conf_file_name(rg_conf_t *cf);
/* the line being read: a setter's, its ";" (a block's: its "{") */
rg_uint_t rg_conf_line(rg_conf_t *cf);
char *rg_conf_full_path(rg_conf_t *cf, const rg_str_t *name);

/* Where a directive was read, for what a part finds wrong once the whole
 * file was (init_conf): the line of word, an argument of a directive
 * (the data of an rg_str_t a setter kept; NULL: none), else the line
 * the last directive called name read into conf starts on (conf: a
 * block's struct, or a part's main conf). *file and *line are left as
 * they were when the file had neither. */
void rg_conf_where(rg_cycle_t *cycle, const void *conf, const char *name,
    const char *word, const char **file, rg_uint_t *line);
/* rg_cycle_error() at that directive, or at file:line without one (the
 * block's: for what is missing from it) */
void rg_conf_error(rg_cycle_t *cycle, const void *conf, const char *name,
    const char *word, const char *file, rg_uint_t line, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));

/* the edit distance of two words (a swap of two letters is one edit) when
 * it is at most 2, else 3: for "did you mean" (directives, task keys) */
size_t rg_conf_distance(const char *a, size_t la, const char *b, size_t lb);

rg_int_t rg_conf_parse_size(const rg_str_t *s, size_t *out);
rg_int_t rg_conf_parse_msec(const rg_str_t *s, rg_msec_t *out);

char *rg_conf_set_str_slot(rg_conf_t *cf, rg_command_t *cmd, void *conf);
char *rg_conf_set_str_array_slot(rg_conf_t *cf, rg_command_t *cmd,
    void *conf);
char *rg_conf_set_num_slot(rg_conf_t *cf, rg_command_t *cmd, void *conf);
char *rg_conf_set_size_slot(rg_conf_t *cf, rg_command_t *cmd, void *conf);
char *rg_conf_set_msec_slot(rg_conf_t *cf, rg_command_t *cmd, void *conf);
char *rg_conf_set_flag_slot(rg_conf_t *cf, rg_command_t *cmd, void *conf);
char *rg_conf_set_double_slot(rg_conf_t *cf, rg_command_t *cmd, void *conf);
char *rg_conf_set_enum_slot(rg_conf_t *cf, rg_command_t *cmd, void *conf);

#define rg_conf_merge_value(conf, prev, def)                                 \
    if (conf == RG_CONF_UNSET) { conf = (prev == RG_CONF_UNSET) ? def : prev; }

/* a default for what the file left unset, as nginx's ngx_conf_init_*value */
#define rg_conf_init_value(conf, def)                                        \
    if (conf == RG_CONF_UNSET) { conf = def; }
#define rg_conf_init_uint_value(conf, def)                                   \
    if (conf == RG_CONF_UNSET_UINT) { conf = def; }
#define rg_conf_init_size_value(conf, def)                                   \
    if (conf == RG_CONF_UNSET_SIZE) { conf = def; }
#define rg_conf_init_msec_value(conf, def)                                   \
    if (conf == RG_CONF_UNSET_MSEC) { conf = def; }
#define rg_conf_init_double_value(conf, def)                                 \
    if (isnan(conf)) { conf = def; }
#define rg_conf_init_str_value(conf, text)                                   \
    if ((conf).data == NULL) { rg_str_set(&(conf), text); }

#endif /* RG_CONF_FILE_H */
