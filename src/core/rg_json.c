/* rg_json.c: jansson's allocator with a per-thread bump arena. Outside an
 * arena it is plain malloc/free. Inside, blocks come from a thread-local
 * buffer; free() of such a block does nothing, and closing the arena
 * makes the whole buffer free again. A block that does not fit falls back
 * to malloc, and free() tells the two apart by address. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_json.h>
#include <jansson.h>


#define RG_JSON_ARENA_SIZE  (128 * 1024)


static __thread char      *rg_json_arena;
static __thread size_t     rg_json_used;
static __thread rg_uint_t  rg_json_depth;


static void *
rg_json_malloc(size_t size)
{
    char    *p;
    size_t   need;

    if (rg_json_depth && rg_json_arena) {
        need = (size + 15) & ~(size_t) 15;

        if (need <= RG_JSON_ARENA_SIZE - rg_json_used) {
            p = rg_json_arena + rg_json_used;
            rg_json_used += need;
            return p;
        }
    }

    return malloc(size);
}


static void
rg_json_free(void *p)
{
    if (rg_json_arena && (char *) p >= rg_json_arena
        && (char *) p < rg_json_arena + RG_JSON_ARENA_SIZE)
    {
        return;              /* the arena's: freed when it closes */
    }

    free(p);
}


void
rg_json_init(void)
{
    json_set_alloc_funcs(rg_json_malloc, rg_json_free);
}


void
rg_json_arena_begin(void)
{
    if (rg_json_arena == NULL) {
        rg_json_arena = malloc(RG_JSON_ARENA_SIZE);
        if (rg_json_arena == NULL) {
            return;          /* plain malloc it is */
        }
    }

    rg_json_depth++;
}


void
rg_json_arena_end(void)
{
    if (rg_json_depth && --rg_json_depth == 0) {
        rg_json_used = 0;
    }
}


rg_uint_t
rg_json_arena_pause(void)
{
    rg_uint_t  depth;

    depth = rg_json_depth;
    rg_json_depth = 0;
    return depth;
}


void
rg_json_arena_resume(rg_uint_t depth)
{
    rg_json_depth = depth;
}


void
rg_json_free_dump(void *p)
{
    rg_json_free(p);
}
