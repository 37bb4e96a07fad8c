/* example.c: a small, complete tool module to copy from.
 *
 * It shows each part of the module ABI (src/tools/rg_tool_module.h):
 *
 *   - a configuration directive, `greeting TEXT;`, written inside
 *     `module example { ... }` and stored in a conf struct that the module
 *     allocates in create_conf(), checks in init() and frees in exit();
 *   - a synchronous tool, `greet`, that answers before start() returns;
 *   - an asynchronous tool, `wait`, that returns RG_TOOL_AGAIN, answers
 *     later from a host timer, and can be cancelled.
 *
 * A module includes only rg_tool_module.h and system headers, and reaches
 * the host only through the rg_tool_host_t table it is handed. Build:
 *
 *     cc -std=c11 -D_GNU_SOURCE -fPIC -shared -I src/tools \
 *         -o example.so modules/example.c
 *
 * and load it with:
 *
 *     load_module modules/example.so;
 *     module example { greeting "Good morning"; }
 */

#include <rg_tool_module.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#define RG_EXAMPLE_GREETING_MAX  64
#define RG_EXAMPLE_WAIT_MAX      10000


/* The module's configuration: one per loaded configuration (a reload makes
 * a new one), handed back to every call as call->conf. */
typedef struct {
    char                      greeting[RG_EXAMPLE_GREETING_MAX + 1];
} rg_example_conf_t;


/* The state of one `wait` call, kept in call->ctx until it answers or is
 * cancelled. */
typedef struct {
    rg_tool_call_t           *call;
    rg_tool_timer_t          *timer;
    long long                 ms;
} rg_example_wait_t;


static const char *rg_example_set_greeting(rg_tool_host_t *host, void *conf,
    int argc, const char **argv);
static void *rg_example_create_conf(rg_tool_host_t *host);
static int rg_example_init(rg_tool_host_t *host, void *conf);
static void rg_example_exit(rg_tool_host_t *host, void *conf);
static int rg_example_greet(rg_tool_call_t *call);
static int rg_example_wait(rg_tool_call_t *call);
static void rg_example_wait_handler(void *data);
static void rg_example_wait_cancel(rg_tool_call_t *call);


/* {name, min_args, max_args, set}; the host checks the argument count */
static const rg_tool_directive_t  rg_example_directives[] = {
    { "greeting", 1, 1, rg_example_set_greeting },
    { NULL, 0, 0, NULL }
};


/* The descriptions and JSON Schemas are what the model sees. The host's
 * mock model uses examples[0] of each property as the argument it sends. */
static const rg_tool_t  rg_example_tools[] = {
    { "greet",
      "Greet someone by name with the configured greeting.",
      "{\"type\":\"object\","
       "\"properties\":{"
        "\"name\":{\"type\":\"string\","
         "\"description\":\"Who to greet\","
         "\"examples\":[\"Ada\"]}},"
       "\"required\":[\"name\"]}",
      RG_TOOL_READ_ONLY, 0, rg_example_greet, NULL },

    { "wait",
      "Wait the given number of milliseconds, then say so.",
      "{\"type\":\"object\","
       "\"properties\":{"
        "\"ms\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":10000,"
         "\"description\":\"How long to wait, in milliseconds\","
         "\"examples\":[100]}},"
       "\"required\":[\"ms\"]}",
      0, 0, rg_example_wait, rg_example_wait_cancel },

    { NULL, NULL, NULL, 0, 0, NULL, NULL }
};


/* The one exported symbol (default visibility: exported even when built
 * with -fvisibility=hidden). RG_TOOL_MODULE_V1 fills in abi_version, size
 * and signature, which the host checks before it reads anything else. */
__attribute__((visibility("default")))
rg_tool_module_t  rg_tool_module = {
    RG_TOOL_MODULE_V1,
    "example",
    rg_example_directives,
    rg_example_create_conf,
    rg_example_init,
    rg_example_exit,
    rg_example_tools
};


/* `greeting TEXT;`: returns NULL, or a short phrase that the host turns
 * into "\"greeting\" directive PHRASE in FILE:LINE". */
static const char *
rg_example_set_greeting(rg_tool_host_t *host, void *conf, int argc,
    const char **argv)
{
    size_t              len;
    rg_example_conf_t  *ecf;

    (void) host;
    (void) argc;

    ecf = conf;

    if (ecf->greeting[0] != '\0') {
        return "is duplicate";
    }

    len = strlen(argv[0]);

    if (len == 0) {
        return "must not be empty";
    }

    if (len > RG_EXAMPLE_GREETING_MAX) {
        return "is too long (max 64 bytes)";
    }

    memcpy(ecf->greeting, argv[0], len + 1);

    return NULL;
}


/* Called before the directives are read: allocate the conf with the
 * defaults (all zero here: "not set"). NULL means out of memory. */
static void *
rg_example_create_conf(rg_tool_host_t *host)
{
    (void) host;

    return calloc(1, sizeof(rg_example_conf_t));
}


/* Called after the directives: fill in defaults and check the result.
 * RG_TOOL_OK, or RG_TOOL_ERROR after logging why. */
static int
rg_example_init(rg_tool_host_t *host, void *conf)
{
    size_t              i;
    rg_example_conf_t  *ecf;

    ecf = conf;

    if (ecf->greeting[0] == '\0') {
        strcpy(ecf->greeting, "Hello");
    }

    for (i = 0; ecf->greeting[i] != '\0'; i++) {
        if ((unsigned char) ecf->greeting[i] < 0x20
            || ecf->greeting[i] == 0x7f)
        {
            host->log(host, RG_TOOL_LOG_ERR, "example: \"greeting\" must "
                      "not contain control characters");
            return RG_TOOL_ERROR;
        }
    }

    host->log(host, RG_TOOL_LOG_DEBUG, "example: greeting \"%s\"",
              ecf->greeting);

    return RG_TOOL_OK;
}


/* Called when the configuration goes away: free what create_conf made. */
static void
rg_example_exit(rg_tool_host_t *host, void *conf)
{
    (void) host;

    free(conf);
}


/* A synchronous tool: read the arguments, answer with done() or fail(),
 * return RG_TOOL_OK. Errors are for the model: short and actionable. */
static int
rg_example_greet(rg_tool_call_t *call)
{
    char               *text;
    size_t              len, glen;
    const char         *name;
    rg_example_conf_t  *ecf;

    ecf = call->conf;

    if (call->host->arg_string(call, "name", &name, &len) != 0) {
        call->host->fail(call, "missing argument 'name' (a string)");
        return RG_TOOL_OK;
    }

    if (len == 0) {
        call->host->fail(call, "argument 'name' must not be empty");
        return RG_TOOL_OK;
    }

    /* "<greeting>, <name>!"; name is counted, it may hold a NUL */

    glen = strlen(ecf->greeting);

    text = malloc(glen + 2 + len + 1);
    if (text == NULL) {
        call->host->fail(call, "out of memory");
        return RG_TOOL_OK;
    }

    memcpy(text, ecf->greeting, glen);
    memcpy(text + glen, ", ", 2);
    memcpy(text + glen + 2, name, len);
    text[glen + 2 + len] = '!';

    /* done() copies the result */
    call->host->done(call, text, glen + 2 + len + 1);

    free(text);

    return RG_TOOL_OK;
}


/* An asynchronous tool: start a timer, keep the state in call->ctx and
 * return RG_TOOL_AGAIN; the timer handler answers. start() must never
 * sleep: it runs on the reactor that serves every session. */
static int
rg_example_wait(rg_tool_call_t *call)
{
    long long           ms;
    rg_example_wait_t  *w;

    if (call->host->arg_int(call, "ms", &ms) != 0) {
        call->host->fail(call, "missing argument 'ms' (an integer from 0 to "
                         "%d)", RG_EXAMPLE_WAIT_MAX);
        return RG_TOOL_OK;
    }

    if (ms < 0 || ms > RG_EXAMPLE_WAIT_MAX) {
        call->host->fail(call, "argument 'ms' must be from 0 to %d, not %lld",
                         RG_EXAMPLE_WAIT_MAX, ms);
        return RG_TOOL_OK;
    }

    w = malloc(sizeof(rg_example_wait_t));
    if (w == NULL) {
        call->host->fail(call, "out of memory");
        return RG_TOOL_OK;
    }

    w->call = call;
    w->ms = ms;

    w->timer = call->host->timer_add(call->host, (uint64_t) ms,
                                     rg_example_wait_handler, w);
    if (w->timer == NULL) {
        free(w);
        call->host->fail(call, "cannot start a timer");
        return RG_TOOL_OK;
    }

    call->ctx = w;

    return RG_TOOL_AGAIN;
}


/* The timer fired (it is one-shot: no timer_del). Free the state first:
 * after done() the call belongs to the host again. */
static void
rg_example_wait_handler(void *data)
{
    int                 n;
    char                text[64];
    rg_tool_call_t     *call;
    rg_example_wait_t  *w;

    w = data;
    call = w->call;

    n = snprintf(text, sizeof(text), "waited %lld ms", w->ms);

    call->ctx = NULL;
    free(w);

    call->host->done(call, text, (size_t) n);
}


/* The host gave up on the call (timeout, session end): stop the timer and
 * free the state; no answer is sent. */
static void
rg_example_wait_cancel(rg_tool_call_t *call)
{
    rg_example_wait_t  *w;

    w = call->ctx;
    if (w == NULL) {
        return;
    }

    call->host->timer_del(w->timer);

    call->ctx = NULL;
    free(w);
}
