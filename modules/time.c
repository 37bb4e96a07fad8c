/* time.c: the "time" tool module: tells the model the current time.
 *
 * Owns the checking of a timezone name (an IANA name whose TZif file exists
 * under /usr/share/zoneinfo), a small cache of the zones it has read, and
 * the formatting of the answer, such as
 * "2026-11-29T13:45:07+01:00 (Europe/Paris, Sunday)". The zone rules are
 * GLib's GTimeZone: each zone is read once from its file, into a value of
 * its own, so no call touches the process's TZ, its environment or the C
 * library's zone state, and calls may run at once in any threads. It
 * answers at once. */

#include <rg_tool_module.h>

#include <glib.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>


#define RG_TIME_ZONEINFO     "/usr/share/zoneinfo/"
#define RG_TIME_NAME_MAX     64
#define RG_TIME_CACHE        64           /* zones kept once read */


typedef struct {
    char                      name[RG_TIME_NAME_MAX + 1];
    GTimeZone                *tz;
} rg_time_zone_t;


static void rg_time_exit(rg_tool_host_t *host, void *conf);
static int rg_time_start(rg_tool_call_t *call);
static int rg_time_check_name(const char *name, size_t len);
static int rg_time_check_file(const char *path);
static GTimeZone *rg_time_zone(const char *name, size_t len,
    const char *path);
static int rg_time_local(rg_tool_call_t *call, const char *name, size_t len,
    const char *path, time_t now, struct tm *tm);
static void rg_time_fail_unknown(rg_tool_call_t *call, const char *name,
    size_t len);


/* the zones read so far, under the lock; never more than RG_TIME_CACHE
 * (past that a zone is read for its call and let go) */
static pthread_mutex_t  rg_time_lock = PTHREAD_MUTEX_INITIALIZER;
static rg_time_zone_t   rg_time_zones[RG_TIME_CACHE];
static size_t           rg_time_nzones;


static const char  *rg_time_weekdays[] = {
    "Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday",
    "Saturday"
};


static const rg_tool_t  rg_time_tools[] = {
    { "time_now",
      "Return the current date and time as ISO 8601 with the UTC offset, "
      "followed by the timezone and the day of the week, such as "
      "2026-11-29T13:45:07+01:00 (Europe/Paris, Sunday).",
      "{\"type\":\"object\","
       "\"properties\":{"
        "\"timezone\":{\"type\":\"string\","
         "\"description\":\"IANA timezone name, default UTC\","
         "\"examples\":[\"UTC\",\"Europe/Paris\",\"Asia/Tokyo\","
         "\"America/New_York\"]}}}",
      0, 0, rg_time_start, NULL },

    { NULL, NULL, NULL, 0, 0, NULL, NULL }
};


__attribute__((visibility("default")))
rg_tool_module_t  rg_tool_module = {
    RG_TOOL_MODULE_V1,
    "time",
    NULL,
    NULL,
    NULL,
    rg_time_exit,
    rg_time_tools
};


static void
rg_time_exit(rg_tool_host_t *host, void *conf)
{
    size_t  i;

    (void) host;
    (void) conf;

    pthread_mutex_lock(&rg_time_lock);

    for (i = 0; i < rg_time_nzones; i++) {
        g_time_zone_unref(rg_time_zones[i].tz);
        rg_time_zones[i].tz = NULL;
    }

    rg_time_nzones = 0;

    pthread_mutex_unlock(&rg_time_lock);
}


static int
rg_time_start(rg_tool_call_t *call)
{
    int          n;
    char         path[sizeof(RG_TIME_ZONEINFO) + RG_TIME_NAME_MAX];
    char         buf[192];
    long         off;
    size_t       len;
    time_t       now;
    struct tm    tm;
    const char  *name;

    /* an absent, non-string or empty "timezone" means UTC */

    if (call->host->arg_string(call, "timezone", &name, &len) != 0
        || len == 0)
    {
        name = "UTC";
        len = 3;
    }

    now = time(NULL);

    if (len == 3 && strncasecmp(name, "UTC", 3) == 0) {
        name = "UTC";

        if (gmtime_r(&now, &tm) == NULL) {
            call->host->fail(call, "cannot convert the current time");
            return RG_TOOL_OK;
        }

        tm.tm_gmtoff = 0;

    } else {
        if (rg_time_check_name(name, len) != 0) {
            rg_time_fail_unknown(call, name, len);
            return RG_TOOL_OK;
        }

        /* the name is NUL-free and at most RG_TIME_NAME_MAX bytes */
        snprintf(path, sizeof(path), "%s%.*s", RG_TIME_ZONEINFO, (int) len,
                 name);

        if (rg_time_check_file(path) != 0) {
            rg_time_fail_unknown(call, name, len);
            return RG_TOOL_OK;
        }

        if (rg_time_local(call, name, len, path, now, &tm) != 0) {
            return RG_TOOL_OK;
        }
    }

    off = tm.tm_gmtoff;

    n = snprintf(buf, sizeof(buf),
                 "%04d-%02d-%02dT%02d:%02d:%02d%c%02ld:%02ld (%.*s, %s)",
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                 tm.tm_hour, tm.tm_min, tm.tm_sec,
                 off < 0 ? '-' : '+', labs(off) / 3600, labs(off) % 3600 / 60,
                 (int) len, name,
                 rg_time_weekdays[(unsigned) tm.tm_wday % 7]);

    if (n < 0 || (size_t) n >= sizeof(buf)) {
        call->host->fail(call, "cannot format the current time");
        return RG_TOOL_OK;
    }

    call->host->done(call, buf, (size_t) n);

    return RG_TOOL_OK;
}


/* Only [A-Za-z0-9_+-/], 1..64 bytes, no leading "/" and no "..": the name
 * cannot leave /usr/share/zoneinfo. */
static int
rg_time_check_name(const char *name, size_t len)
{
    size_t  i;
    char    c;

    if (len == 0 || len > RG_TIME_NAME_MAX || name[0] == '/') {
        return -1;
    }

    for (i = 0; i < len; i++) {
        c = name[i];

        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')
            || (c >= '0' && c <= '9')
            || c == '_' || c == '+' || c == '-' || c == '/')
        {
            continue;
        }

        return -1;
    }

    if (memmem(name, len, "..", 2) != NULL) {
        return -1;
    }

    return 0;
}


/* A regular file (symlinks followed: UTC is one) that starts with the TZif
 * magic; this rules out directories and the tables next to the zones. */
static int
rg_time_check_file(const char *path)
{
    int          fd;
    char         magic[4];
    ssize_t      n;
    struct stat  st;

    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd == -1) {
        return -1;
    }

    if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
        close(fd);
        return -1;
    }

    do {
        n = read(fd, magic, sizeof(magic));
    } while (n == -1 && errno == EINTR);

    close(fd);

    if (n != (ssize_t) sizeof(magic) || memcmp(magic, "TZif", 4) != 0) {
        return -1;
    }

    return 0;
}


/* The zone of a checked name, read from its file (path) the first time;
 * a new reference, or NULL */
static GTimeZone *
rg_time_zone(const char *name, size_t len, const char *path)
{
    size_t      i;
    GTimeZone  *tz;

    pthread_mutex_lock(&rg_time_lock);

    for (i = 0; i < rg_time_nzones; i++) {
        if (strlen(rg_time_zones[i].name) == len
            && memcmp(rg_time_zones[i].name, name, len) == 0)
        {
            tz = g_time_zone_ref(rg_time_zones[i].tz);
            pthread_mutex_unlock(&rg_time_lock);
            return tz;
        }
    }

    /* an absolute path: GLib reads exactly the file checked, never TZ */
    tz = g_time_zone_new_identifier(path);

    if (tz != NULL && rg_time_nzones < RG_TIME_CACHE) {
        memcpy(rg_time_zones[rg_time_nzones].name, name, len);
        rg_time_zones[rg_time_nzones].name[len] = '\0';
        rg_time_zones[rg_time_nzones].tz = g_time_zone_ref(tz);
        rg_time_nzones++;
    }

    pthread_mutex_unlock(&rg_time_lock);

    return tz;
}


/* now in the zone: the zone's offset at that instant, then UTC's
 * calendar shifted by it (a zone value is read-only once built) */
static int
rg_time_local(rg_tool_call_t *call, const char *name, size_t len,
    const char *path, time_t now, struct tm *tm)
{
    int         interval;
    long        off;
    time_t      t;
    GTimeZone  *tz;

    tz = rg_time_zone(name, len, path);
    if (tz == NULL) {
        rg_time_fail_unknown(call, name, len);
        return -1;
    }

    interval = g_time_zone_find_interval(tz, G_TIME_TYPE_UNIVERSAL,
                                         (gint64) now);
    off = interval < 0 ? 0 : g_time_zone_get_offset(tz, interval);
    g_time_zone_unref(tz);

    if (interval < 0) {
        call->host->fail(call, "cannot convert the current time");
        return -1;
    }

    t = now + off;

    if (gmtime_r(&t, tm) == NULL) {
        call->host->fail(call, "cannot convert the current time");
        return -1;
    }

    tm->tm_gmtoff = off;

    return 0;
}


static void
rg_time_fail_unknown(rg_tool_call_t *call, const char *name, size_t len)
{
    char    shown[RG_TIME_NAME_MAX + 4];
    size_t  i, n;

    /* echo at most 64 bytes, printable ASCII only */

    n = len < RG_TIME_NAME_MAX ? len : RG_TIME_NAME_MAX;

    for (i = 0; i < n; i++) {
        shown[i] = (name[i] >= 0x20 && name[i] < 0x7f) ? name[i] : '?';
    }

    if (n < len) {
        memcpy(shown + n, "...", 3);
        n += 3;
    }

    shown[n] = '\0';

    call->host->fail(call, "unknown timezone '%s'; use an IANA name such as "
                     "Europe/Paris or UTC", shown);
}
