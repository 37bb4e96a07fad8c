/* rg_log.c: writes log lines: "2026/11/29 13:40:00 [error] 123#0: text
 * (13: Permission denied), session: \"s-9f\"". A line is written with one
 * write(2), so lines from several processes never interleave, and with
 * every configured secret scrubbed out of it (a provider's error may quote
 * the key). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_secret.h>


static const char  *rg_log_levels[] = {
    "stderr", "emerg", "alert", "crit", "error", "warn", "notice", "info",
    "debug"
};

static rg_log_t  rg_log_default = { RG_LOG_NOTICE, STDERR_FILENO, NULL, NULL,
                                    NULL };


rg_log_t *
rg_log_stderr(void)
{
    return &rg_log_default;
}


void
rg_log_verror(rg_uint_t level, rg_log_t *log, int err, const char *fmt,
    va_list args)
{
    int         n;
    char        line[RG_LOG_MAX_LINE];
    size_t      len, max;
    time_t      now;
    struct tm   tm;

    if (log == NULL) {
        log = &rg_log_default;
    }

    if (level > log->log_level) {
        return;
    }

    max = sizeof(line) - 1;   /* room for the newline */

    now = time(NULL);
    localtime_r(&now, &tm);

    len = strftime(line, max, "%Y/%m/%d %H:%M:%S ", &tm);

    n = snprintf(line + len, max - len, "[%s] %d#0: ",
                 rg_log_levels[level > RG_LOG_DEBUG ? RG_LOG_DEBUG : level],
                 (int) getpid());
    len += n > 0 ? rg_min((size_t) n, max - len) : 0;

    n = vsnprintf(line + len, max - len, fmt, args);
    /* the message may be cut inside a secret: scrubbed before what
     * follows it (rg_secret_scrub masks a cut secret at a text's end) */
    if (n > 0) {
        n = (int) rg_secret_scrub(line + len,
                                  rg_min((size_t) n, max - len - 1));
        len += (size_t) n;
    }

    if (err && len < max) {
        n = snprintf(line + len, max - len, " (%d: %s)", err, strerror(err));
        len += n > 0 ? rg_min((size_t) n, max - len - 1) : 0;
    }

    if (log->handler && len < max) {
        len += log->handler(log, line + len, max - len);
    }

    len = rg_secret_scrub(line, len);
    line[len++] = '\n';

    if (write(log->fd, line, len) < 0) {
        /* nowhere left to report it */
    }
}


void
rg_log_error(rg_uint_t level, rg_log_t *log, int err, const char *fmt, ...)
{
    va_list  args;

    va_start(args, fmt);
    rg_log_verror(level, log, err, fmt, args);
    va_end(args);
}


rg_int_t
rg_log_level_parse(const char *name, size_t len)
{
    rg_uint_t  i;

    for (i = 1; i < rg_nelems(rg_log_levels); i++) {
        if (strlen(rg_log_levels[i]) == len
            && memcmp(rg_log_levels[i], name, len) == 0)
        {
            return i;
        }
    }

    if (len == 7 && memcmp(name, "warning", 7) == 0) {
        return RG_LOG_WARN;
    }

    return RG_ERROR;
}


const char *
rg_log_level_name(rg_uint_t level)
{
    return level < rg_nelems(rg_log_levels) ? rg_log_levels[level] : "?";
}
