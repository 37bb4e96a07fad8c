/* agent.c: the "agent" tool module: hands a subtask to another agent.
 *
 * Owns the checking of the arguments and the text of the answer. The child
 * session is the host's: host->agent_run() starts it on this reactor (the
 * host knows the configured agents, lets a caller reach only those its
 * agent lists in `agents`, caps the child's approval by the caller's and
 * limits the depth) and calls back with its final state, so start()
 * returns RG_TOOL_AGAIN. A child that ends at once calls back before
 * agent_run() returns, so nothing here is set up after that call. The
 * child's answer becomes this tool's result;
 * any other end is a failure.
 *
 *     module agent { max_input 16k; } */

#include <rg_tool_module.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#define RG_AGENT_MAX_INPUT    16384
#define RG_AGENT_NAME_MAX     64
#define RG_AGENT_SHOWN        500         /* bytes of a failed answer */

/* whether the host table has a member this module was built to use */
#define rg_agent_host_has(host, member)                                      \
    ((host)->size >= offsetof(rg_tool_host_t, member)                        \
                     + sizeof(((rg_tool_host_t *) 0)->member)                \
     && (host)->member != NULL)


typedef struct {
    size_t                    max_input;    /* 0: not set */
} rg_agent_conf_t;


static const char *rg_agent_set_max_input(rg_tool_host_t *host, void *conf,
    int argc, const char **argv);
static void *rg_agent_create_conf(rg_tool_host_t *host);
static int rg_agent_init(rg_tool_host_t *host, void *conf);
static void rg_agent_exit(rg_tool_host_t *host, void *conf);
static int rg_agent_start(rg_tool_call_t *call);
static void rg_agent_handler(rg_tool_call_t *call, const char *status,
    const char *answer, size_t len, void *data);
static void rg_agent_cancel(rg_tool_call_t *call);
static void rg_agent_show(const char *s, size_t len, size_t max, int quote,
    char *buf, size_t size);


static const rg_tool_directive_t  rg_agent_directives[] = {
    { "max_input", 1, 1, rg_agent_set_max_input },
    { NULL, 0, 0, NULL }
};


static const rg_tool_t  rg_agent_tools[] = {
    { "run_agent",
      "Hand a self-contained subtask to another configured agent and "
      "return its final answer. The other agent sees only the input given "
      "here, not this conversation: say everything it needs.",
      "{\"type\":\"object\","
       "\"properties\":{"
        "\"agent\":{\"type\":\"string\","
         "\"description\":\"Name of the agent to run\","
         "\"examples\":[\"helper\"]},"
        "\"input\":{\"type\":\"string\","
         "\"description\":\"The subtask, complete and self-contained\","
         "\"examples\":[\"Summarize the task in one sentence.\"]}},"
       "\"required\":[\"agent\",\"input\"]}",
      0, 0, rg_agent_start, rg_agent_cancel },

    { NULL, NULL, NULL, 0, 0, NULL, NULL }
};


RG_TOOL_EXPORT
rg_tool_module_t  rg_tool_module = {
    RG_TOOL_MODULE_V1,
    "agent",
    rg_agent_directives,
    rg_agent_create_conf,
    rg_agent_init,
    rg_agent_exit,
    rg_agent_tools
};


/* configuration */


/* max_input SIZE in the host's units: bytes, or with a k, m or g suffix */
static const char *
rg_agent_set_max_input(rg_tool_host_t *host, void *conf, int argc,
    const char **argv)
{
    size_t            n;
    rg_agent_conf_t  *acf;

    (void) argc;

    acf = conf;

    if (acf->max_input != 0) {
        return "is duplicate";
    }

    if (!rg_agent_host_has(host, parse_size)) {
        return "needs a newer reagent (no parse_size in the host table)";
    }

    if (host->parse_size(argv[0], &n) != 0 || n == 0
        || n > 16 * 1024 * 1024)
    {
        return "must be a size from 1 to 16m, such as 16384 or 16k";
    }

    acf->max_input = n;

    return NULL;
}


static void *
rg_agent_create_conf(rg_tool_host_t *host)
{
    (void) host;

    return calloc(1, sizeof(rg_agent_conf_t));
}


static int
rg_agent_init(rg_tool_host_t *host, void *conf)
{
    rg_agent_conf_t  *acf;

    acf = conf;

    if (!rg_agent_host_has(host, agent_run)
        || !rg_agent_host_has(host, agent_cancel)
        || !rg_agent_host_has(host, error))
    {
        host->log(host, RG_TOOL_LOG_ERR, "agent: this reagent has no "
                  "agent_run() for modules; upgrade reagent");
        return RG_TOOL_ERROR;
    }

    if (acf->max_input == 0) {
        acf->max_input = RG_AGENT_MAX_INPUT;
    }

    return RG_TOOL_OK;
}


static void
rg_agent_exit(rg_tool_host_t *host, void *conf)
{
    (void) host;

    free(conf);
}


/* the tool */


static int
rg_agent_start(rg_tool_call_t *call)
{
    char              shown[RG_AGENT_NAME_MAX + 8];
    size_t            len, ilen;
    const char       *agent, *input, *reason;
    rg_agent_conf_t  *acf;

    acf = call->conf;

    if (call->host->arg_string(call, "agent", &agent, &len) != 0 || len == 0)
    {
        call->host->fail(call, "missing argument 'agent' (the name of a "
                         "configured agent, such as \"helper\")");
        return RG_TOOL_OK;
    }

    if (strlen(agent) != len || len > RG_AGENT_NAME_MAX) {
        rg_agent_show(agent, len, RG_AGENT_NAME_MAX, 1, shown, sizeof(shown));
        call->host->fail(call, "agent %s is not a valid name; use the name "
                         "of a configured agent, such as \"helper\"", shown);
        return RG_TOOL_OK;
    }

    if (call->host->arg_string(call, "input", &input, &ilen) != 0
        || ilen == 0)
    {
        call->host->fail(call, "missing argument 'input' (the subtask for "
                         "the agent, as text)");
        return RG_TOOL_OK;
    }

    if (ilen > acf->max_input) {
        call->host->fail(call, "argument 'input' is %zu bytes, more than "
                         "the %zu allowed; shorten the subtask", ilen,
                         acf->max_input);
        return RG_TOOL_OK;
    }

    if (memchr(input, '\0', ilen) != NULL) {
        call->host->fail(call, "argument 'input' contains a NUL byte; send "
                         "plain text");
        return RG_TOOL_OK;
    }

    if (call->host->agent_run(call, agent, input, ilen, rg_agent_handler,
                              NULL)
        != 0)
    {
        reason = call->host->error(call);

        if (reason == NULL || reason[0] == '\0') {
            rg_agent_show(agent, len, RG_AGENT_NAME_MAX, 1, shown,
                          sizeof(shown));
            call->host->fail(call, "cannot run agent %s", shown);

        } else {
            call->host->fail(call, "%s", reason);
        }

        return RG_TOOL_OK;
    }

    return RG_TOOL_AGAIN;
}


/* The child ended. The name is read again: arguments live as long as the
 * call, so no state is kept between start() and here. */
static void
rg_agent_handler(rg_tool_call_t *call, const char *status,
    const char *answer, size_t len, void *data)
{
    char         shown[RG_AGENT_NAME_MAX + 8], text[RG_AGENT_SHOWN + 8];
    char         st[40];
    size_t       nlen;
    const char  *agent;

    (void) data;

    if (status != NULL && strcmp(status, "done") == 0) {
        if (len == 0) {
            call->host->done(call, "(the agent gave an empty answer)",
                             sizeof("(the agent gave an empty answer)") - 1);

        } else {
            call->host->done(call, answer, len);
        }

        return;
    }

    if (call->host->arg_string(call, "agent", &agent, &nlen) != 0) {
        agent = "?";
        nlen = 1;
    }

    rg_agent_show(agent, nlen, RG_AGENT_NAME_MAX, 1, shown, sizeof(shown));
    status = status ? status : "an unknown state";
    rg_agent_show(status, strlen(status), 32, 0, st, sizeof(st));
    rg_agent_show(answer ? answer : "", answer ? len : 0, RG_AGENT_SHOWN, 0,
                  text, sizeof(text));

    call->host->fail(call, "agent %s ended with %s: %s", shown, st,
                     text[0] ? text : "no answer");
}


static void
rg_agent_cancel(rg_tool_call_t *call)
{
    call->host->agent_cancel(call);
}


/* s for a message, quoted or not: at most max bytes, control bytes (as
 * newlines) as spaces */
static void
rg_agent_show(const char *s, size_t len, size_t max, int quote, char *buf,
    size_t size)
{
    char    *p;
    size_t   i, n;

    n = len < max ? len : max;

    if (n + 6 > size) {
        n = size - 6;
    }

    p = buf;

    if (quote) {
        *p++ = '"';
    }

    for (i = 0; i < n; i++) {
        *p++ = ((unsigned char) s[i] < 0x20 || s[i] == 0x7f) ? ' ' : s[i];
    }

    if (n < len) {
        memcpy(p, "...", 3);
        p += 3;
    }

    if (quote) {
        *p++ = '"';
    }

    *p = '\0';
}
