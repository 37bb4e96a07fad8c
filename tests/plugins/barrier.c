/* barrier.c: a test plugin that proves the calls of a turn run at the
 * same time: module "barrier".
 *
 * `barrier_async` {n}: holds every call until n calls are waiting, then
 * answers them all "released with n". Run one after the other, the first
 * call would wait forever and hit its tool timeout. `barrier_pool` {n} is
 * the same for RG_TOOL_BLOCKING calls in the host's thread pool: each
 * waits up to 5 s on a condition variable for the others. `danger` is
 * flagged RG_TOOL_DANGEROUS for the approval tests. */

#include <rg_tool_module.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>


#define RG_BARRIER_MAX  64


static int rg_barrier_async(rg_tool_call_t *call);
static void rg_barrier_async_cancel(rg_tool_call_t *call);
static int rg_barrier_pool(rg_tool_call_t *call);
static int rg_barrier_danger(rg_tool_call_t *call);


#define RG_BARRIER_SCHEMA                                                    \
    "{\"type\":\"object\","                                                  \
     "\"properties\":{\"n\":{\"type\":\"integer\",\"minimum\":1,"            \
      "\"maximum\":64,\"examples\":[8]}},"                                   \
     "\"required\":[\"n\"]}"


static const rg_tool_t  rg_barrier_tools[] = {
    { "barrier_async", "Wait until n calls are waiting, then answer all.",
      RG_BARRIER_SCHEMA, 0, 0, rg_barrier_async, rg_barrier_async_cancel },

    { "barrier_pool", "The same, in the thread pool.",
      RG_BARRIER_SCHEMA, RG_TOOL_BLOCKING, 0, rg_barrier_pool, NULL },

    { "danger", "A dangerous tool: answers \"ran\" when it is allowed to.",
      "{\"type\":\"object\",\"properties\":{}}", RG_TOOL_DANGEROUS, 0,
      rg_barrier_danger, NULL },

    { NULL, NULL, NULL, 0, 0, NULL, NULL }
};


RG_TOOL_EXPORT rg_tool_module_t  rg_tool_module = {
    RG_TOOL_MODULE_V1,
    "barrier",
    NULL,
    NULL,
    NULL,
    NULL,
    rg_barrier_tools
};


/* the reactor thread only: no lock */
static rg_tool_call_t  *rg_barrier_waiting[RG_BARRIER_MAX];
static int              rg_barrier_nwaiting;


static int
rg_barrier_async(rg_tool_call_t *call)
{
    int        i, n;
    long long  want;
    char       buf[64];

    if (call->host->arg_int(call, "n", &want) != 0 || want < 1
        || want > RG_BARRIER_MAX)
    {
        call->host->fail(call, "argument 'n' must be from 1 to 64");
        return RG_TOOL_OK;
    }

    rg_barrier_waiting[rg_barrier_nwaiting++] = call;

    if (rg_barrier_nwaiting < want) {
        return RG_TOOL_AGAIN;
    }

    n = rg_barrier_nwaiting;
    rg_barrier_nwaiting = 0;
    snprintf(buf, sizeof(buf), "released with %d", n);

    for (i = 0; i < n; i++) {
        rg_barrier_waiting[i]->host->done(rg_barrier_waiting[i], buf,
                                          strlen(buf));
    }

    return RG_TOOL_OK;
}


static void
rg_barrier_async_cancel(rg_tool_call_t *call)
{
    int  i;

    for (i = 0; i < rg_barrier_nwaiting; i++) {
        if (rg_barrier_waiting[i] == call) {
            rg_barrier_waiting[i] = rg_barrier_waiting[--rg_barrier_nwaiting];
            return;
        }
    }
}


static pthread_mutex_t  rg_barrier_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t   rg_barrier_cond = PTHREAD_COND_INITIALIZER;
static int              rg_barrier_arrived;
static int              rg_barrier_generation;


static int
rg_barrier_pool(rg_tool_call_t *call)
{
    int              gen, rc, n;
    long long        want;
    char             buf[64];
    struct timespec  ts;

    if (call->host->arg_int(call, "n", &want) != 0 || want < 1
        || want > RG_BARRIER_MAX)
    {
        call->host->fail(call, "argument 'n' must be from 1 to 64");
        return RG_TOOL_OK;
    }

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 5;

    pthread_mutex_lock(&rg_barrier_lock);

    gen = rg_barrier_generation;
    n = ++rg_barrier_arrived;

    if (n >= want) {
        rg_barrier_arrived = 0;
        rg_barrier_generation++;
        pthread_cond_broadcast(&rg_barrier_cond);

    } else {
        rc = 0;
        while (gen == rg_barrier_generation && rc != ETIMEDOUT) {
            rc = pthread_cond_timedwait(&rg_barrier_cond, &rg_barrier_lock,
                                        &ts);
        }

        if (gen == rg_barrier_generation) {
            rg_barrier_arrived--;
            pthread_mutex_unlock(&rg_barrier_lock);
            call->host->fail(call, "only %d of %lld calls ran at once", n,
                             want);
            return RG_TOOL_OK;
        }
    }

    pthread_mutex_unlock(&rg_barrier_lock);

    snprintf(buf, sizeof(buf), "released with %lld", want);
    call->host->done(call, buf, strlen(buf));

    return RG_TOOL_OK;
}


static int
rg_barrier_danger(rg_tool_call_t *call)
{
    call->host->done(call, "ran", 3);

    return RG_TOOL_OK;
}
