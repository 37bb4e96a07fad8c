/* fuzz_task.c: libFuzzer target for the JSONL task parser of `reagent
 * batch` (rg_task_parse(), src/queue/rg_task.c). The input is one line,
 * any bytes. Besides the sanitizers, it checks what the header promises:
 * a task has an id and a non-empty input and limits in range; a line that
 * is not a task has an id ("line-N" or its own) and a reason that names
 * the line; memory does not run out. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_task.h>


#define rg_fuzz_check(cond)                                                  \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond);       \
            abort();                                                         \
        }                                                                    \
    } while (0)


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rg_int_t   rc;
    rg_task_t  t;

    rc = rg_task_parse(&t, (const char *) data, size, 42);

    rg_fuzz_check(rc == RG_OK || rc == RG_DECLINED);
    rg_fuzz_check(t.id != NULL);

    if (rc == RG_OK) {
        rg_fuzz_check(t.input != NULL && t.input_len > 0);
        rg_fuzz_check(strlen(t.input) <= t.input_len);
        rg_fuzz_check(t.agent == NULL || strlen(t.agent) <= t.agent_len);
        rg_fuzz_check(t.max_rounds <= 10000);
        rg_fuzz_check(t.max_tokens >= -1);

    } else {
        rg_fuzz_check(t.error[0] != '\0');
        rg_fuzz_check(strstr(t.error, "42") != NULL);
    }

    rg_task_free(&t);

    return 0;
}
