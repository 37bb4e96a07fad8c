/* rg_conf_error.c: the errors a part finds in its configuration once the
 * whole file was read (init_conf), said at the line of the directive they
 * are about, which rg_conf_file.c kept (rg_conf_where). Apart from the
 * parser, so that what builds the parser alone (the fuzzers) needs no
 * cycle. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>


void
rg_conf_error(rg_cycle_t *cycle, const void *conf, const char *name,
    const char *word, const char *file, rg_uint_t line, const char *fmt, ...)
{
    char     msg[512];
    va_list  args;

    va_start(args, fmt);
    vsnprintf(msg, sizeof(msg), fmt, args);
    va_end(args);

    rg_conf_where(cycle, conf, name, word, &file, &line);

    rg_cycle_error(cycle, file, line, "%s", msg);
}
