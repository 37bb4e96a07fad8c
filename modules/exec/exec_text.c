/* exec_text.c: the text of the exec tool's answers (sections of output,
 * programs shown in messages, error strings) in a buffer that never
 * fails halfway, and the clock the run's timers read. */

#include "exec.h"


/* "\n--- NAME ---\n" and the output; one trailing newline is dropped, so
 * that the answer never ends with one and the next header follows */
void
rg_exec_section(rg_exec_buf_t *b, const char *name, const rg_exec_pipe_t *pp)
{
    rg_exec_buf_printf(b, "\n--- %s ---\n", name);
    rg_exec_buf_add(b, pp->data, pp->len);

    if (pp->dropped > 0) {
        rg_exec_buf_printf(b, "%s(truncated: %zu more bytes)",
                           (pp->len > 0 && pp->data[pp->len - 1] != '\n')
                           ? "\n" : "", pp->dropped);
    }

    if (!b->oom && b->data[b->len - 1] == '\n') {
        b->len--;
        b->data[b->len] = '\0';
    }
}


/* helpers */


uint64_t
rg_exec_now(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}


/* s quoted for a message: at most RG_EXEC_SHOWN bytes, control bytes as ? */
void
rg_exec_show(const char *s, size_t len, char *buf, size_t size)
{
    size_t  i, n;

    n = len < RG_EXEC_SHOWN ? len : RG_EXEC_SHOWN;

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


/* strerror_r() of either flavour: GNU returns the text, XSI fills buf */
const char *
rg_exec_strerror(int err, char *buf, size_t len)
{
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
    return strerror_r(err, buf, len);
#else
    return (strerror_r(err, buf, len) == 0) ? buf : "unknown error";
#endif
}


void
rg_exec_buf_add(rg_exec_buf_t *b, const char *data, size_t len)
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


void
rg_exec_buf_printf(rg_exec_buf_t *b, const char *fmt, ...)
{
    int      n;
    char     text[512];
    va_list  ap;

    va_start(ap, fmt);
    n = vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);

    if (n > 0) {
        rg_exec_buf_add(b, text, (size_t) n < sizeof(text)
                                 ? (size_t) n : sizeof(text) - 1);
    }
}
