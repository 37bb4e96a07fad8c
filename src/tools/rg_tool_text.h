/* rg_tool_text.h: the text of what goes back to the model (rg_tool_text.c),
 * shared by the argument and result hygiene of the tools folder: UTF-8
 * checks and cuts, and one-line messages written into the caller's
 * buffer. Not for use outside src/tools/. */

#ifndef RG_TOOL_TEXT_H
#define RG_TOOL_TEXT_H

#include <rg_config.h>
#include <rg_core.h>
#include <jansson.h>


#define RG_TOOL_MSG_SHOW        40    /* bytes of a string shown in a message */

/* how arguments are read: a key twice is an error */
#define RG_TOOL_ARGS_LOAD       JSON_REJECT_DUPLICATES

#define rg_tool_utf8_cont(c)    (((unsigned char) (c) & 0xc0) == 0x80)


/* a message being written into the caller's buffer */
typedef struct {
    char               *data;
    size_t              len;
    size_t              size;
    unsigned            cut:1;
} rg_tool_msg_t;


/* the length of the valid UTF-8 character at p (n bytes readable), 0 when
 * the bytes there are not one */
size_t rg_tool_utf8_len(const unsigned char *p, size_t n);
/* the largest m <= n such that s[0..m) does not end inside a character
 * that started before n */
size_t rg_tool_utf8_boundary(const char *s, size_t n);
/* copies s[0..n) to b, an invalid byte as U+FFFD, while b gets at most
 * max more bytes; *used gets the bytes of s copied */
rg_int_t rg_tool_utf8_copy(rg_buf_t *b, const char *s, size_t n, size_t max,
    size_t *used);

void rg_tool_msg_init(rg_tool_msg_t *m, char *buf, size_t size);
void rg_tool_msg_printf(rg_tool_msg_t *m, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* ends the message: one line of valid UTF-8, cut at a character */
void rg_tool_msg_done(rg_tool_msg_t *m);
/* a string in JSON quotes, cut to max bytes with "…" inside the quotes */
void rg_tool_msg_quote(rg_tool_msg_t *m, const char *s, size_t len,
    size_t max);
/* a value as the model wrote it, short */
void rg_tool_msg_value(rg_tool_msg_t *m, json_t *v);
/* what a value is, for "got …": containers by their kind only */
void rg_tool_msg_got(rg_tool_msg_t *m, json_t *v);

/* a number as JSON writes it, in the fewest digits that read back */
void rg_tool_number_text(json_t *v, char *buf, size_t size);
/* "an object", "a string", …: the kind of a JSON value */
const char *rg_tool_json_kind(json_t *v);

#endif /* RG_TOOL_TEXT_H */
