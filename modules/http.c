/* http.c: the "http" tool module: GETs a URL of an allowed host.
 *
 * Owns the checking of the URL (http or https, no user info, a host on the
 * configured allow-list: exact names, "*.example.com" suffix patterns, and
 * IP addresses only when listed as they are written) and the text of the
 * answer: "status: 200\ncontent-type: text/html\n\n<body>". The request
 * itself is the host's: host->http_get() runs it on the worker's curl
 * multi and calls back on the reactor, so start() returns RG_TOOL_AGAIN.
 *
 *     module http { allow_hosts example.com *.wikipedia.org;
 *                   max_bytes 1m; timeout 10s; allow_private off; }
 *
 * The allow-list is checked on the name in the URL; the address that name
 * leads to is the host's to check (http_get_flags() refuses loopback,
 * private, link-local and other internal addresses at every connection,
 * unless `allow_private on;` asks it not to), and no redirect is
 * followed. */

#include <rg_tool_module.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>


#define RG_HTTP_MAX_BYTES     1048576
#define RG_HTTP_TIMEOUT       10000       /* ms */
#define RG_HTTP_TIMEOUT_MAX   600000      /* ms */
#define RG_HTTP_URL_MAX       8192
#define RG_HTTP_HOST_MAX      255
#define RG_HTTP_SHOWN         200
#define RG_HTTP_LIST_MAX      512         /* bytes of the list in errors */

#define RG_HTTP_EXAMPLE       "such as \"https://example.com/\""

/* whether the host table has a member this module was built to use */
#define rg_http_host_has(host, member)                                       \
    ((host)->size >= offsetof(rg_tool_host_t, member)                        \
                     + sizeof(((rg_tool_host_t *) 0)->member)                \
     && (host)->member != NULL)


typedef struct {
    char                    **hosts;        /* lowercase patterns */
    size_t                    nhosts;
    char                     *shown;        /* "a.com, *.b.org" */
    size_t                    max_bytes;    /* 0: not set */
    uint64_t                  timeout;      /* ms; 0: not set */
    int                       allow_private;    /* -1: not set */
} rg_http_conf_t;


typedef struct {
    char                      host[RG_HTTP_HOST_MAX + 1];   /* lowercase */
    size_t                    host_len;
    int                       ip;           /* an address, not a name */
    size_t                    len;          /* of the URL without #frag */
} rg_http_url_t;


static const char *rg_http_set_allow(rg_tool_host_t *host, void *conf,
    int argc, const char **argv);
static const char *rg_http_set_max_bytes(rg_tool_host_t *host, void *conf,
    int argc, const char **argv);
static const char *rg_http_set_timeout(rg_tool_host_t *host, void *conf,
    int argc, const char **argv);
static const char *rg_http_set_allow_private(rg_tool_host_t *host,
    void *conf, int argc, const char **argv);
static void *rg_http_create_conf(rg_tool_host_t *host);
static int rg_http_init(rg_tool_host_t *host, void *conf);
static void rg_http_exit(rg_tool_host_t *host, void *conf);
static int rg_http_start(rg_tool_call_t *call);
static void rg_http_handler(rg_tool_call_t *call,
    const rg_tool_http_result_t *res, void *data);
static void rg_http_cancel(rg_tool_call_t *call);
static int rg_http_parse(const char *url, size_t len, rg_http_url_t *u,
    char *err, size_t err_len);
static int rg_http_allowed(const rg_http_conf_t *hcf, const rg_http_url_t *u);
static int rg_http_check_name(const char *s, size_t len);
static int rg_http_is_ip(const char *s, size_t len);
static void rg_http_show(const char *s, size_t len, char *buf, size_t size);


static const rg_tool_directive_t  rg_http_directives[] = {
    { "allow_hosts", 1, 64, rg_http_set_allow },
    { "max_bytes", 1, 1, rg_http_set_max_bytes },
    { "timeout", 1, 1, rg_http_set_timeout },
    { "allow_private", 1, 1, rg_http_set_allow_private },
    { NULL, 0, 0, NULL }
};


static const rg_tool_t  rg_http_tools[] = {
    { "http_get",
      "Fetch a web page or API response with an HTTP GET and return its "
      "status, content type and body as text. Only http and https URLs of "
      "the configured hosts are allowed, and no internal (loopback, "
      "private) address; large bodies are cut, binary ones refused.",
      "{\"type\":\"object\","
       "\"properties\":{"
        "\"url\":{\"type\":\"string\","
         "\"description\":\"The absolute http:// or https:// URL, such as "
          "https://example.com/page?q=1\","
         "\"examples\":[\"https://example.com/\"]}},"
       "\"required\":[\"url\"]}",
      RG_TOOL_READ_ONLY, 0, rg_http_start, rg_http_cancel },

    { NULL, NULL, NULL, 0, 0, NULL, NULL }
};


RG_TOOL_EXPORT
rg_tool_module_t  rg_tool_module = {
    RG_TOOL_MODULE_V1,
    "http",
    rg_http_directives,
    rg_http_create_conf,
    rg_http_init,
    rg_http_exit,
    rg_http_tools
};


/* configuration */


/* allow_hosts PATTERN...; several lines add up. A pattern is a host name,
 * "*." and a name, an IPv4 address or a bracketed IPv6 one. */
static const char *
rg_http_set_allow(rg_tool_host_t *host, void *conf, int argc,
    const char **argv)
{
    int              i;
    char           **hosts, *h;
    size_t           len, j;
    const char      *name;
    rg_http_conf_t  *hcf;

    (void) host;

    hcf = conf;

    for (i = 0; i < argc; i++) {
        name = argv[i];
        len = strlen(name);

        if (len > 2 && name[0] == '*' && name[1] == '.') {
            name += 2;
            len -= 2;
        }

        if (len > 2 && name[0] == '[' && name[len - 1] == ']'
            && name == argv[i])
        {
            if (strspn(name + 1, "0123456789abcdefABCDEF:.") != len - 2) {
                return "has an invalid IPv6 address: write it as in a URL, "
                       "such as [::1]";
            }

        } else if (rg_http_check_name(name, len) != 0) {
            return "has an invalid host: use names such as example.com, "
                   "suffix patterns such as *.example.com, or addresses";
        }
    }

    hosts = realloc(hcf->hosts, (hcf->nhosts + (size_t) argc)
                                * sizeof(char *));
    if (hosts == NULL) {
        return "cannot be stored: out of memory";
    }

    hcf->hosts = hosts;

    for (i = 0; i < argc; i++) {
        h = strdup(argv[i]);
        if (h == NULL) {
            return "cannot be stored: out of memory";
        }

        for (j = 0; h[j] != '\0'; j++) {
            if (h[j] >= 'A' && h[j] <= 'Z') {
                h[j] = (char) (h[j] - 'A' + 'a');
            }
        }

        /* "example.com." is "example.com" */
        if (j > 1 && h[j - 1] == '.') {
            h[j - 1] = '\0';
        }

        hosts[hcf->nhosts++] = h;
    }

    return NULL;
}


/* max_bytes SIZE in the host's units: bytes, or with a k, m or g suffix */
static const char *
rg_http_set_max_bytes(rg_tool_host_t *host, void *conf, int argc,
    const char **argv)
{
    size_t           n;
    rg_http_conf_t  *hcf;

    (void) argc;

    hcf = conf;

    if (hcf->max_bytes != 0) {
        return "is duplicate";
    }

    if (!rg_http_host_has(host, parse_size)) {
        return "needs a newer reagent (no parse_size in the host table)";
    }

    if (host->parse_size(argv[0], &n) != 0 || n == 0
        || n > 64 * 1024 * 1024)
    {
        return "must be a size from 1 to 64m, such as 1048576 or 1m";
    }

    hcf->max_bytes = n;

    return NULL;
}


/* timeout TIME in the host's units: "500ms", "10s", "1m30s"; a bare
 * number is seconds, as everywhere in the configuration */
static const char *
rg_http_set_timeout(rg_tool_host_t *host, void *conf, int argc,
    const char **argv)
{
    uint64_t         ms;
    rg_http_conf_t  *hcf;

    (void) argc;

    hcf = conf;

    if (hcf->timeout != 0) {
        return "is duplicate";
    }

    if (!rg_http_host_has(host, parse_msec)) {
        return "needs a newer reagent (no parse_msec in the host table)";
    }

    if (host->parse_msec(argv[0], &ms) != 0 || ms == 0
        || ms > RG_HTTP_TIMEOUT_MAX)
    {
        return "must be a time from 1ms to 10m, such as 500ms or 10s (a bare "
               "number is seconds)";
    }

    hcf->timeout = ms;

    return NULL;
}


/* allow_private on|off: whether internal addresses may be reached */
static const char *
rg_http_set_allow_private(rg_tool_host_t *host, void *conf, int argc,
    const char **argv)
{
    rg_http_conf_t  *hcf;

    (void) host;
    (void) argc;

    hcf = conf;

    if (hcf->allow_private != -1) {
        return "is duplicate";
    }

    if (strcmp(argv[0], "on") == 0) {
        hcf->allow_private = 1;

    } else if (strcmp(argv[0], "off") == 0) {
        hcf->allow_private = 0;

    } else {
        return "must be \"on\" or \"off\"";
    }

    return NULL;
}


static void *
rg_http_create_conf(rg_tool_host_t *host)
{
    rg_http_conf_t  *hcf;

    (void) host;

    hcf = calloc(1, sizeof(rg_http_conf_t));
    if (hcf) {
        hcf->allow_private = -1;
    }

    return hcf;
}


static int
rg_http_init(rg_tool_host_t *host, void *conf)
{
    size_t           i, len, n;
    rg_http_conf_t  *hcf;

    hcf = conf;

    if (!rg_http_host_has(host, http_get)
        || !rg_http_host_has(host, http_cancel))
    {
        host->log(host, RG_TOOL_LOG_ERR, "http: this reagent has no "
                  "http_get() for modules; upgrade reagent");
        return RG_TOOL_ERROR;
    }

    if (hcf->nhosts == 0) {
        host->log(host, RG_TOOL_LOG_ERR, "http: the \"allow_hosts\" "
                  "directive is required: add \"allow_hosts example.com "
                  "*.example.org;\" to \"module http\"");
        return RG_TOOL_ERROR;
    }

    if (hcf->max_bytes == 0) {
        hcf->max_bytes = RG_HTTP_MAX_BYTES;
    }

    if (hcf->timeout == 0) {
        hcf->timeout = RG_HTTP_TIMEOUT;
    }

    if (hcf->allow_private == -1) {
        hcf->allow_private = 0;
    }

    /* a host without http_get_flags() has no address check to ask for */
    if (hcf->allow_private == 0 && !rg_http_host_has(host, http_get_flags)) {
        host->log(host, RG_TOOL_LOG_WARN, "http: this reagent does not "
                  "check the addresses names resolve to; upgrade reagent");
    }

    /* the list as errors show it, cut at RG_HTTP_LIST_MAX bytes */

    hcf->shown = malloc(RG_HTTP_LIST_MAX + 8);
    if (hcf->shown == NULL) {
        host->log(host, RG_TOOL_LOG_ERR, "http: out of memory");
        return RG_TOOL_ERROR;
    }

    len = 0;

    for (i = 0; i < hcf->nhosts; i++) {
        n = strlen(hcf->hosts[i]);

        if (len + 2 + n > RG_HTTP_LIST_MAX) {
            memcpy(hcf->shown + len, ", ...", 5);
            len += 5;
            break;
        }

        if (i > 0) {
            memcpy(hcf->shown + len, ", ", 2);
            len += 2;
        }

        memcpy(hcf->shown + len, hcf->hosts[i], n);
        len += n;
    }

    hcf->shown[len] = '\0';

    host->log(host, RG_TOOL_LOG_DEBUG, "http: allow_hosts %s, max_bytes %zu, "
              "timeout %llums, allow_private %s", hcf->shown, hcf->max_bytes,
              (unsigned long long) hcf->timeout,
              hcf->allow_private ? "on" : "off");

    return RG_TOOL_OK;
}


static void
rg_http_exit(rg_tool_host_t *host, void *conf)
{
    size_t           i;
    rg_http_conf_t  *hcf;

    (void) host;

    hcf = conf;

    if (hcf == NULL) {
        return;
    }

    for (i = 0; i < hcf->nhosts; i++) {
        free(hcf->hosts[i]);
    }

    free(hcf->hosts);
    free(hcf->shown);
    free(hcf);
}


/* the tool */


static int
rg_http_start(rg_tool_call_t *call)
{
    int              rc;
    char             err[RG_HTTP_SHOWN * 2 + 256], shown[RG_HTTP_SHOWN + 8];
    char            *url;
    size_t           len;
    const char      *s, *reason;
    rg_http_url_t    u;
    rg_http_conf_t  *hcf;

    hcf = call->conf;

    if (call->host->arg_string(call, "url", &s, &len) != 0 || len == 0) {
        call->host->fail(call, "missing argument 'url' (an http or https "
                         "URL, " RG_HTTP_EXAMPLE ")");
        return RG_TOOL_OK;
    }

    if (rg_http_parse(s, len, &u, err, sizeof(err)) != 0) {
        call->host->fail(call, "%s", err);
        return RG_TOOL_OK;
    }

    if (rg_http_allowed(hcf, &u) != 0) {
        rg_http_show(u.host, u.host_len, shown, sizeof(shown));
        call->host->fail(call, "host %s is not in the allow-list: %s", shown,
                         hcf->shown);
        return RG_TOOL_OK;
    }

    /* the URL without its fragment, kept until the answer: the ABI does
     * not say whether http_get() copies it */

    url = strndup(s, u.len);
    if (url == NULL) {
        call->host->fail(call, "out of memory");
        return RG_TOOL_OK;
    }

    call->ctx = url;

    if (rg_http_host_has(call->host, http_get_flags)) {
        rc = call->host->http_get_flags(call, url, hcf->max_bytes,
                                        hcf->timeout,
                                        hcf->allow_private
                                        ? RG_TOOL_HTTP_ALLOW_PRIVATE : 0,
                                        rg_http_handler, NULL);
    } else {
        rc = call->host->http_get(call, url, hcf->max_bytes, hcf->timeout,
                                  rg_http_handler, NULL);
    }

    if (rc != 0) {
        call->ctx = NULL;
        free(url);

        reason = (rg_http_host_has(call->host, error) && call->host->error)
                 ? call->host->error(call) : NULL;

        call->host->fail(call, "cannot start the request: %s",
                         reason && reason[0] ? reason : "try again later");
        return RG_TOOL_OK;
    }

    return RG_TOOL_AGAIN;
}


static void
rg_http_handler(rg_tool_call_t *call, const rg_tool_http_result_t *res,
    void *data)
{
    char        *text, type[RG_HTTP_SHOWN + 8], note[64];
    size_t       n, len;
    const char  *ct;

    (void) data;

    free(call->ctx);
    call->ctx = NULL;

    if (res->error != NULL) {
        call->host->fail(call, "the request failed: %s", res->error);
        return;
    }

    ct = res->content_type ? res->content_type : "";
    rg_http_show(ct, strlen(ct), type, sizeof(type));

    /* rg_http_show() quotes; the header line does not */
    n = strlen(type);
    memmove(type, type + 1, n - 2);
    type[n - 2] = '\0';

    if (res->len > 0 && memchr(res->body, '\0', res->len) != NULL) {
        call->host->fail(call, "the response is binary (content-type %s); "
                         "http_get returns text only",
                         type[0] ? type : "none");
        return;
    }

    note[0] = '\0';

    if (res->truncated) {
        snprintf(note, sizeof(note), "\n(truncated at %zu bytes)", res->len);
    }

    len = (size_t) snprintf(NULL, 0, "status: %ld\ncontent-type: %s\n\n",
                            res->status, type);

    text = malloc(len + res->len + strlen(note) + 1);
    if (text == NULL) {
        call->host->fail(call, "out of memory");
        return;
    }

    snprintf(text, len + 1, "status: %ld\ncontent-type: %s\n\n",
             res->status, type);

    if (res->len > 0) {
        memcpy(text + len, res->body, res->len);
    }

    memcpy(text + len + res->len, note, strlen(note) + 1);

    call->host->done(call, text, len + res->len + strlen(note));

    free(text);
}


static void
rg_http_cancel(rg_tool_call_t *call)
{
    call->host->http_cancel(call);

    free(call->ctx);
    call->ctx = NULL;
}


/* the URL */


/* scheme "://" [host] [":" port] [path] ["?" query] ["#" fragment], all
 * printable ASCII; what the allow-list needs goes to u. 0, or -1 with a
 * message for the model in err. */
static int
rg_http_parse(const char *url, size_t len, rg_http_url_t *u, char *err,
    size_t err_len)
{
    char         shown[RG_HTTP_SHOWN + 8];
    size_t       i, start, end, host_end, port;
    const char  *p;

    rg_http_show(url, len, shown, sizeof(shown));

    if (strlen(url) != len) {
        snprintf(err, err_len, "url %s contains a NUL byte; send the URL as "
                 "plain text", shown);
        return -1;
    }

    if (len > RG_HTTP_URL_MAX) {
        snprintf(err, err_len, "url is too long (at most %d bytes)",
                 RG_HTTP_URL_MAX);
        return -1;
    }

    for (i = 0; i < len; i++) {
        if ((unsigned char) url[i] <= 0x20 || (unsigned char) url[i] >= 0x7f)
        {
            snprintf(err, err_len, "url %s contains spaces, control or "
                     "non-ASCII characters; percent-encode them (a space is "
                     "%%20)", shown);
            return -1;
        }
    }

    if (len >= 7 && strncasecmp(url, "http://", 7) == 0) {
        start = 7;

    } else if (len >= 8 && strncasecmp(url, "https://", 8) == 0) {
        start = 8;

    } else {
        p = strstr(url, "://");

        if (p != NULL && strcspn(url, ":/?#") == (size_t) (p - url)) {
            snprintf(err, err_len, "url scheme \"%.*s\" is not supported; "
                     "use http:// or https://",
                     (int) (p - url < 32 ? p - url : 32), url);

        } else {
            snprintf(err, err_len, "url %s is not absolute; write the whole "
                     "URL, " RG_HTTP_EXAMPLE, shown);
        }

        return -1;
    }

    /* the authority ends at the first "/", "?" or "#" */

    end = start + strcspn(url + start, "/?#");

    for (i = start; i < end; i++) {
        if (url[i] == '@') {
            snprintf(err, err_len, "url %s has user info (user@host); "
                     "remove it, credentials cannot be sent", shown);
            return -1;
        }

        if (url[i] == '\\') {
            snprintf(err, err_len, "url %s has a backslash in its host part",
                     shown);
            return -1;
        }
    }

    if (url[start] == '[') {
        p = memchr(url + start, ']', end - start);
        if (p == NULL) {
            snprintf(err, err_len, "url %s has an unclosed [ in its host",
                     shown);
            return -1;
        }

        host_end = (size_t) (p - url) + 1;
        u->ip = 1;

    } else {
        host_end = start + strcspn(url + start, ":/?#");
        u->ip = 0;
    }

    if (host_end == start) {
        snprintf(err, err_len, "url %s has no host, " RG_HTTP_EXAMPLE, shown);
        return -1;
    }

    if (host_end - start > RG_HTTP_HOST_MAX) {
        snprintf(err, err_len, "url %s has a host name longer than %d bytes",
                 shown, RG_HTTP_HOST_MAX);
        return -1;
    }

    if (host_end < end) {
        /* ":" port, 1 to 65535 */
        port = 0;

        for (i = host_end + 1; i < end && url[i] >= '0' && url[i] <= '9';
             i++)
        {
            port = port * 10 + (size_t) (url[i] - '0');
            if (port > 65535) {
                break;
            }
        }

        if (url[host_end] != ':' || i != end || i == host_end + 1
            || port == 0 || port > 65535)
        {
            snprintf(err, err_len, "url %s has an invalid port; use a number "
                     "from 1 to 65535, or none", shown);
            return -1;
        }
    }

    u->host_len = host_end - start;

    for (i = 0; i < u->host_len; i++) {
        u->host[i] = url[start + i];

        if (u->host[i] >= 'A' && u->host[i] <= 'Z') {
            u->host[i] = (char) (u->host[i] - 'A' + 'a');
        }
    }

    u->host[u->host_len] = '\0';

    if (u->host_len > 1 && u->host[u->host_len - 1] == '.') {
        u->host[--u->host_len] = '\0';
    }

    if (u->ip) {
        if (strspn(u->host + 1, "0123456789abcdef:.") != u->host_len - 2) {
            snprintf(err, err_len, "url %s has an invalid IPv6 address",
                     shown);
            return -1;
        }

    } else if (rg_http_check_name(u->host, u->host_len) != 0) {
        snprintf(err, err_len, "url %s has an invalid host name; only "
                 "letters, digits, \"-\", \"_\" and \".\" are allowed "
                 "(percent-encoded or international names are not)", shown);
        return -1;

    } else {
        u->ip = rg_http_is_ip(u->host, u->host_len);
    }

    p = memchr(url, '#', len);
    u->len = p ? (size_t) (p - url) : len;

    return 0;
}


/* 0 when the host matches a pattern: an address only itself, a name
 * itself or a "*.suffix" of which it is a subdomain */
static int
rg_http_allowed(const rg_http_conf_t *hcf, const rg_http_url_t *u)
{
    size_t       i, n;
    const char  *pat;

    for (i = 0; i < hcf->nhosts; i++) {
        pat = hcf->hosts[i];

        if (pat[0] == '*') {
            n = strlen(pat + 1);    /* ".example.com" */

            if (!u->ip && u->host_len > n
                && memcmp(u->host + u->host_len - n, pat + 1, n) == 0)
            {
                return 0;
            }

        } else if (strcmp(pat, u->host) == 0) {
            return 0;
        }
    }

    return -1;
}


/* labels of letters, digits, "-" and "_", joined by "."; one trailing "."
 * allowed */
static int
rg_http_check_name(const char *s, size_t len)
{
    size_t  i, label;

    if (len > 0 && s[len - 1] == '.') {
        len--;
    }

    if (len == 0 || len > RG_HTTP_HOST_MAX) {
        return -1;
    }

    label = 0;

    for (i = 0; i < len; i++) {
        if (s[i] == '.') {
            if (label == 0) {
                return -1;
            }

            label = 0;
            continue;
        }

        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')
              || (s[i] >= '0' && s[i] <= '9') || s[i] == '-' || s[i] == '_'))
        {
            return -1;
        }

        if (++label > 63) {
            return -1;
        }
    }

    return label == 0 ? -1 : 0;
}


/* A name whose last label is all digits, or starts "0x", is an address to
 * the resolver ("127.1", "2130706433", "0x7f000001"): no top-level domain
 * looks like that. */
static int
rg_http_is_ip(const char *s, size_t len)
{
    const char  *last;

    last = memrchr(s, '.', len);
    last = last ? last + 1 : s;
    len -= (size_t) (last - s);

    if (len >= 2 && last[0] == '0' && (last[1] == 'x' || last[1] == 'X')) {
        return 1;
    }

    return strspn(last, "0123456789") == len;
}


/* s quoted for a message: at most RG_HTTP_SHOWN bytes, control bytes as ? */
static void
rg_http_show(const char *s, size_t len, char *buf, size_t size)
{
    size_t  i, n;

    n = len < RG_HTTP_SHOWN ? len : RG_HTTP_SHOWN;

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

