/* rg_part.c: the table of parts as the core sees it: numbered once, in
 * the order configure wrote them (see rg_part.h). */

#include <rg_config.h>
#include <rg_core.h>


rg_uint_t
rg_parts_count(void)
{
    static rg_uint_t  n;

    if (n == 0) {
        while (rg_parts[n]) {
            rg_parts[n]->index = n;
            n++;
        }
    }

    return n;
}
