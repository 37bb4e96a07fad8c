/* rg_secret.c: the secrets of the configuration and their scrubbing.
 *
 * Owns a small process-wide table of secrets (API keys as read from the
 * environment, and their JSON-escaped forms) and of the environment
 * variables they were taken from. Registration happens while a
 * configuration is read, on the main thread; scrubbing may happen on any
 * thread (pool threads log), so an entry is complete before the count
 * that publishes it grows, and entries are never changed once published.
 * Knows nothing of where texts go: the writers call rg_secret_scrub(). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_secret.h>
#include <stdatomic.h>
#include <sys/prctl.h>


#define RG_SECRET_MAX        64
#define RG_SECRET_ENV_MAX    32
#define RG_SECRET_SHOWN      20     /* from this length on: "sk-…abcd" */
#define RG_SECRET_MASK_MAX   16
#define RG_SECRET_CUT_MIN    12     /* a cut secret's shortest masked tail */


typedef struct {
    char                *text;
    size_t               len;
    char                 mask[RG_SECRET_MASK_MAX];
    size_t               mask_len;
} rg_secret_t;


typedef struct {
    char                *name;
    char                *value;
} rg_secret_env_t;


extern char  **environ;

static rg_secret_t       rg_secrets[RG_SECRET_MAX];
static atomic_size_t     rg_nsecrets;
static rg_secret_env_t   rg_secret_envs[RG_SECRET_ENV_MAX];
static size_t            rg_secret_nenvs;


void
rg_secret_wipe(void *p, size_t len)
{
    if (p && len) {
        explicit_bzero(p, len);
    }
}


void
rg_secret_mask(const char *s, size_t len, char *buf, size_t size)
{
    if (size < RG_SECRET_MASK_MAX) {
        if (size) {
            buf[0] = '\0';
        }
        return;
    }

    /* never longer than the secret, so scrubbing works in place */
    if (len >= RG_SECRET_SHOWN) {
        snprintf(buf, size, "%.3s\xe2\x80\xa6%.4s", s, s + len - 4);

    } else {
        snprintf(buf, size, "\xe2\x80\xa6");
    }
}


static rg_int_t
rg_secret_add_one(const char *s, size_t len)
{
    size_t        i, n;
    rg_secret_t  *sec;

    n = atomic_load_explicit(&rg_nsecrets, memory_order_acquire);

    for (i = 0; i < n; i++) {
        if (rg_secrets[i].len == len && memcmp(rg_secrets[i].text, s, len)
                                        == 0)
        {
            return RG_OK;
        }
    }

    if (n == RG_SECRET_MAX) {
        return RG_ERROR;
    }

    sec = &rg_secrets[n];

    sec->text = malloc(len);
    if (sec->text == NULL) {
        return RG_ERROR;
    }

    memcpy(sec->text, s, len);
    sec->len = len;
    rg_secret_mask(s, len, sec->mask, sizeof(sec->mask));
    sec->mask_len = strlen(sec->mask);

    atomic_store_explicit(&rg_nsecrets, n + 1, memory_order_release);

    return RG_OK;
}


rg_int_t
rg_secret_add(const char *s, size_t len)
{
    char      *esc;
    size_t     i, n;
    rg_int_t   rc;

    if (len < RG_SECRET_MIN) {
        return RG_ERROR;
    }

    rc = rg_secret_add_one(s, len);

    /* as a JSON string shows it: transcripts and results are JSON */
    n = 0;
    for (i = 0; i < len; i++) {
        n += (s[i] == '"' || s[i] == '\\') ? 2 : 1;
    }

    if (n == len || rc != RG_OK) {
        return rc;
    }

    esc = malloc(n);
    if (esc == NULL) {
        return RG_ERROR;
    }

    for (i = 0, n = 0; i < len; i++) {
        if (s[i] == '"' || s[i] == '\\') {
            esc[n++] = '\\';
        }
        esc[n++] = s[i];
    }

    rc = rg_secret_add_one(esc, n);

    rg_secret_wipe(esc, n);
    free(esc);

    return rc;
}


/* A text cut to a size (a reason, a log line, the start of a body) may
 * end inside a secret: a tail of RG_SECRET_CUT_MIN bytes or more that
 * begins the secret is masked too (a shorter one tells next to nothing,
 * and a longer one is seldom anything else). In place, never longer. */
static size_t
rg_secret_scrub_cut(const rg_secret_t *sec, char *buf, size_t len)
{
    size_t       k, from;
    const char  *mask;

    if (len < RG_SECRET_CUT_MIN) {
        return len;
    }

    from = len > sec->len - 1 ? len - (sec->len - 1) : 0;

    for (k = len - from; k >= RG_SECRET_CUT_MIN; k--) {
        if (buf[len - k] != sec->text[0]
            || memcmp(buf + len - k, sec->text, k) != 0)
        {
            continue;
        }

        mask = k >= sec->mask_len ? sec->mask : "\xe2\x80\xa6";
        memcpy(buf + len - k, mask, strlen(mask));

        return len - k + strlen(mask);
    }

    return len;
}


size_t
rg_secret_scrub(char *buf, size_t len)
{
    char         *p, *end;
    size_t        i, n;
    rg_secret_t  *sec;

    n = atomic_load_explicit(&rg_nsecrets, memory_order_acquire);

    if (buf == NULL) {
        return 0;
    }

    for (i = 0; i < n; i++) {
        sec = &rg_secrets[i];
        p = buf;
        end = buf + len;

        while ((size_t) (end - p) >= sec->len
               && (p = memmem(p, (size_t) (end - p), sec->text, sec->len)))
        {
            memcpy(p, sec->mask, sec->mask_len);
            memmove(p + sec->mask_len, p + sec->len,
                    (size_t) (end - p) - sec->len);
            len -= sec->len - sec->mask_len;
            end = buf + len;
            p += sec->mask_len;
        }

        len = rg_secret_scrub_cut(sec, buf, len);
    }

    return len;
}


size_t
rg_secret_tail(const char *buf, size_t len)
{
    size_t        i, k, n, tail;
    rg_secret_t  *sec;

    n = atomic_load_explicit(&rg_nsecrets, memory_order_acquire);
    tail = 0;

    for (i = 0; i < n; i++) {
        sec = &rg_secrets[i];

        for (k = rg_min(len, sec->len - 1); k > tail; k--) {
            if (buf[len - k] == sec->text[0]
                && memcmp(buf + len - k, sec->text, k) == 0)
            {
                tail = k;
                break;
            }
        }
    }

    return tail;
}


char *
rg_secret_scrub_str(char *s)
{
    size_t  len;

    if (s) {
        len = strlen(s);
        s[rg_secret_scrub(s, len)] = '\0';
    }

    return s;
}


/* where the kernel placed the initial environment: [start, end) from
 * /proc/self/stat (fields 50 and 51), or 0, 0 */
static void
rg_secret_env_block(uintptr_t *start, uintptr_t *end)
{
    int        fd, field;
    char       buf[2048], *p, *next;
    ssize_t    n;
    uintptr_t  v;

    *start = 0;
    *end = 0;

    fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    if (fd == -1) {
        return;
    }

    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);

    if (n <= 0) {
        return;
    }

    buf[n] = '\0';

    /* the command name, field 2, may hold blanks and parentheses */
    p = strrchr(buf, ')');
    if (p == NULL) {
        return;
    }

    p++;

    for (field = 3; field <= 51; field++) {
        v = (uintptr_t) strtoull(p, &next, 10);
        if (next == p && field > 3) {
            return;
        }

        if (field == 3) {
            /* the state, a letter */
            while (*p == ' ') {
                p++;
            }
            next = p + 1;
        }

        if (field == 50) {
            *start = v;
        } else if (field == 51) {
            *end = v;
        }

        p = next;
    }

    if (*end <= *start) {
        *start = 0;
        *end = 0;
    }
}


const char *
rg_secret_env(const char *name)
{
    char             **e, *value, *copy, *found[8];
    size_t             i, nlen, nfound;
    uintptr_t          start, end, at;
    rg_secret_env_t   *kept;

    nlen = strlen(name);
    value = NULL;
    nfound = 0;

    for (e = environ; e && *e; e++) {
        if (strncmp(*e, name, nlen) == 0 && (*e)[nlen] == '=') {
            if (value == NULL) {
                value = *e + nlen + 1;
            }
            if (nfound < rg_nelems(found)) {
                found[nfound++] = *e;
            }
        }
    }

    kept = NULL;

    for (i = 0; i < rg_secret_nenvs; i++) {
        if (strcmp(rg_secret_envs[i].name, name) == 0) {
            kept = &rg_secret_envs[i];
            break;
        }
    }

    if (value == NULL) {
        return kept ? kept->value : NULL;
    }

    if (value[0] == '\0') {
        return NULL;                    /* set, but empty: not a key */
    }

    copy = strdup(value);
    if (copy == NULL) {
        return NULL;
    }

    if (kept == NULL) {
        if (rg_secret_nenvs == RG_SECRET_ENV_MAX) {
            free(copy);
            return NULL;
        }

        kept = &rg_secret_envs[rg_secret_nenvs];
        kept->name = strdup(name);
        if (kept->name == NULL) {
            free(copy);
            return NULL;
        }

        rg_secret_nenvs++;

    } else {
        rg_secret_wipe(kept->value, strlen(kept->value));
        free(kept->value);
    }

    kept->value = copy;

    (void) rg_secret_add(copy, strlen(copy));

    /* out of the environment, and out of the block /proc/PID/environ
     * reads (setenv()'s own copies are libc's, and no longer listed) */
    rg_secret_env_block(&start, &end);
    (void) unsetenv(name);

    for (i = 0; i < nfound; i++) {
        at = (uintptr_t) found[i];

        if (at >= start && at < end) {
            rg_secret_wipe(found[i], strnlen(found[i], end - at));
        }
    }

    return copy;
}


rg_int_t
rg_secret_protect(void)
{
    return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0 ? RG_OK : RG_ERROR;
}


void
rg_secret_reset(void)
{
    size_t  i, n;

    n = atomic_load_explicit(&rg_nsecrets, memory_order_acquire);
    atomic_store_explicit(&rg_nsecrets, 0, memory_order_release);

    for (i = 0; i < n; i++) {
        rg_secret_wipe(rg_secrets[i].text, rg_secrets[i].len);
        free(rg_secrets[i].text);
        memset(&rg_secrets[i], 0, sizeof(rg_secret_t));
    }

    for (i = 0; i < rg_secret_nenvs; i++) {
        rg_secret_wipe(rg_secret_envs[i].value,
                       strlen(rg_secret_envs[i].value));
        free(rg_secret_envs[i].value);
        free(rg_secret_envs[i].name);
    }

    rg_secret_nenvs = 0;
}
