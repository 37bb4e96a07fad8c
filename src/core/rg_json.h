/* rg_json.h: jansson's allocator. While an arena is open on a thread,
 * jansson's allocations come from a bump arena that is reset in one step
 * when it closes: parsing a model's answer then costs no malloc/free per
 * node. Whatever must outlive the arena is copied out before it closes. */

#ifndef RG_JSON_H
#define RG_JSON_H

void rg_json_init(void);
void rg_json_arena_begin(void);
void rg_json_arena_end(void);
/* a callback out of a parse runs with the arena closed (what it keeps
 * outlives the parse); resume with what pause returned */
rg_uint_t rg_json_arena_pause(void);
void rg_json_arena_resume(rg_uint_t depth);
/* frees what json_dumps() returned: it may come from the arena */
void rg_json_free_dump(void *p);

#endif /* RG_JSON_H */
