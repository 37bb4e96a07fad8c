/* rg_conf_block.h: the conf structs of the parts and of their blocks:
 * made with every slot of their directive table unset, named blocks
 * (llm NAME { }, agent NAME { }…) added and found by name, a block that
 * may appear once (http { }, queue { }) read (see rg_conf_block.c). */

#ifndef RG_CONF_BLOCK_H
#define RG_CONF_BLOCK_H


/* every field a generic setter of cmds sets in a context of ctx (bits)
 * made unset: what the setter takes for "not given yet" */
void rg_conf_unset(rg_command_t *cmds, rg_uint_t ctx, void *conf);
/* a zeroed struct of size from pool, its slots of ctx unset */
void *rg_conf_create(rg_pool_t *pool, size_t size, rg_command_t *cmds,
    rg_uint_t ctx);

/* a part's main conf as rg_conf_create makes it, with the array of its
 * named blocks (pointers) at offset blocks ready */
void *rg_conf_create_named(rg_pool_t *pool, size_t size, rg_command_t *cmds,
    size_t blocks);

/* A named block's struct opens with its rg_str_t name; blocks is an
 * array of pointers to them. The one called name, or NULL. */
void *rg_conf_find_named(const rg_array_t *blocks, const char *name,
    size_t len);
/* a new block called cf->args[1], made as rg_conf_create does, pushed on
 * blocks (its index: blocks->nelts - 1); NULL: out of memory */
void *rg_conf_add_named(rg_conf_t *cf, rg_array_t *blocks, size_t size,
    rg_command_t *cmds, rg_uint_t ctx);

/* a block that may appear once: "is duplicate" the second time, else
 * *declared set, where it opens kept (*file, *line) and its directives
 * read into ctx, as rg_conf_block() does */
char *rg_conf_block_once(rg_conf_t *cf, rg_uint_t type, void *ctx,
    rg_uint_t *declared, const char **file, rg_uint_t *line);

#endif /* RG_CONF_BLOCK_H */
