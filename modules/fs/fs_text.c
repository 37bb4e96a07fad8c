/* fs_text.c: the small helpers of the fs module (fs.c): clocks and
 * deadlines, a read that retries, UTF-8 cuts, errno as text, quoted
 * names, the growing output buffer, and the answer made of it. */

#include "fs.h"


uint64_t
rg_fs_now(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}


/* When this call stops looking: a tenth of its time before the host's
 * deadline (so the answer arrives before the host gives up), or
 * RG_FS_TIME_LIMIT from now when the host sets none. */
uint64_t
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
ssize_t
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
size_t
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
const char *
rg_fs_strerror(int err, char *buf, size_t len)
{
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
    return strerror_r(err, buf, len);
#else
    return (strerror_r(err, buf, len) == 0) ? buf : "unknown error";
#endif
}


/* s quoted for a message: at most RG_FS_SHOWN bytes, control bytes as ? */
void
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


void
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


void
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
void
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
void
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
