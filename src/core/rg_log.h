/* rg_log.h: levelled logging, one line per event, nginx's error_log.
 * A log may carry a handler that appends context (agent, session) to
 * every line written through it. */

#ifndef RG_LOG_H
#define RG_LOG_H

#define RG_LOG_STDERR   0
#define RG_LOG_EMERG    1
#define RG_LOG_ALERT    2
#define RG_LOG_CRIT     3
#define RG_LOG_ERR      4
#define RG_LOG_WARN     5
#define RG_LOG_NOTICE   6
#define RG_LOG_INFO     7
#define RG_LOG_DEBUG    8

#define RG_LOG_MAX_LINE 2048

typedef size_t (*rg_log_handler_pt)(rg_log_t *log, char *buf, size_t len);

struct rg_log_s {
    rg_uint_t           log_level;
    int                 fd;
    rg_log_handler_pt   handler;   /* appends ", session: ..." */
    void               *data;      /* the handler's */
    rg_log_t           *next;      /* unused for now */
};

void rg_log_error(rg_uint_t level, rg_log_t *log, int err,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void rg_log_verror(rg_uint_t level, rg_log_t *log, int err,
    const char *fmt, va_list args);
rg_int_t rg_log_level_parse(const char *name, size_t len);
const char *rg_log_level_name(rg_uint_t level);
rg_log_t *rg_log_stderr(void);

#define rg_log_debug(log, ...)                                               \
    do {                                                                     \
        if ((log)->log_level >= RG_LOG_DEBUG) {                              \
            rg_log_error(RG_LOG_DEBUG, log, 0, __VA_ARGS__);                 \
        }                                                                    \
    } while (0)

#define rg_log_enabled(log, level)   ((log)->log_level >= (level))

#endif /* RG_LOG_H */
