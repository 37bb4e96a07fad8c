/* rg_tool_args.h: hygiene for what the model sends to tools and what tools
 * send back. Reads a tool call's argument text into one JSON object,
 * repairing only what is safe (rg_tool_repair.c); checks it against the
 * tool's JSON Schema, coercing types where that is unambiguous, and
 * renders canonical arguments for dedupe keys (rg_tool_schema.c); trims
 * long results and renders error objects for the model (rg_tool_trim.c).
 *
 * Every message written to `err` is one short line meant for the model:
 * valid UTF-8, no control characters, cut to errlen. Nothing here logs,
 * keeps state or knows how tool calls are dispatched. */

#ifndef RG_TOOL_ARGS_H
#define RG_TOOL_ARGS_H

#include <rg_config.h>
#include <rg_core.h>
#include <jansson.h>


/* which repairs rg_tool_args_parse() applied; several may be set */
#define RG_TOOL_ARGS_REPAIR_BLANKS  0x01  /* blanks around the whole text */
#define RG_TOOL_ARGS_REPAIR_FENCE   0x02  /* ```json … ``` or ``` … ``` */
#define RG_TOOL_ARGS_REPAIR_STRING  0x04  /* a JSON string holding the object */
#define RG_TOOL_ARGS_REPAIR_ARRAY   0x08  /* [ {…} ]: the one object taken */
#define RG_TOOL_ARGS_REPAIR_EMPTY   0x10  /* nothing (or "") read as {} */

/* what rg_tool_trim() returns when memory ran out */
#define RG_TOOL_TRIM_ERROR          ((size_t) -1)

/* rg_tool_error_json() keeps at most this many bytes of each text */
#define RG_TOOL_ERROR_MAX           500


/* Reads the arguments the model sent for `tool` (its name, used in the
 * messages). Returns a new reference to a JSON object, or NULL with err
 * set. Repairs, each setting its bit in *repaired (may be NULL; set to 0
 * when nothing was repaired): blanks around the text; a code fence around
 * the whole text (``` or ```json, any case), nothing before or after it;
 * a JSON string whose content is a JSON object; an array holding exactly
 * one object; empty or all-blank text, or the JSON string "", read as {}.
 * Errors:
 *   arguments for T are not valid JSON: <jansson> (line L, column C);
 *       send one JSON object
 *   arguments for T must be one JSON object, not an array; send one JSON
 *       object        (or: a string, a number, a boolean, null)
 * Lines and columns count in the text as the model sent it. Duplicate
 * keys are an error. */
json_t *rg_tool_args_parse(const char *tool, const char *text, size_t len,
    rg_uint_t *repaired, char *err, size_t errlen);

/* Writes the names of the repairs in `repaired` ("blanks,fence") into buf;
 * returns buf ("" when there were none). For logs. */
char *rg_tool_args_repairs(rg_uint_t repaired, char *buf, size_t size);

/* Checks args against the tool's JSON Schema, and coerces values in place
 * where that is unambiguous. Returns RG_OK, or RG_ERROR with err set to
 * "T: <what is wrong>". A schema that is not an object accepts anything.
 *
 * Understood: type (a name or an array of names), properties, required,
 * additionalProperties (false, or a schema for the others), enum, minimum,
 * maximum, exclusiveMinimum and exclusiveMaximum (numbers; the draft 4
 * booleans too), minLength and maxLength (in characters), items (one
 * schema), minItems, maxItems. Other keywords are ignored, and so is a
 * sub-schema that is not an object. Nesting deeper than 32 is not checked.
 *
 * Coercions, tried only when the value fits none of the schema's types,
 * in this order: to integer, "3" or 3.0 or "3.0" (not "3.5", not "abc");
 * to number, "2.5"; to boolean, "true" and "false"; to object or array, a
 * string holding one (double-encoded); to string, a number (3 → "3",
 * 2.5 → "2.5", 3.0 → "3.0"). A value is never wrapped into an array.
 *
 * Messages name the parameter's path ("filter.limit", "items[2].name"):
 *   T: parameter "expression" is required
 *   T: parameter "count" must be an integer from 1 to 10, got "abc"
 *   T: parameter "unit" must be one of "c", "f"; got "k"
 *   T: parameter "name" is longer than 64 characters
 *   T: parameter "tags" must have at least 1 item
 *   T: unknown parameter "foo"; the parameters are: a, b */
rg_int_t rg_tool_args_validate(const char *tool, json_t *args,
    json_t *schema, char *err, size_t errlen);

/* Canonical JSON of args: sorted keys, no blanks, malloc'ed and NUL-ended;
 * *len (may be NULL) gets its length. The same arguments in any key order
 * give the same bytes. NULL when args is NULL or memory ran out. */
char *rg_tool_args_canonical(json_t *args, size_t *len);

/* Appends in[0..len) to out, or, when len > limit, about 70% of limit from
 * the head and 20% from the tail with "\n[… N bytes left out …]\n" between
 * them. Neither cut splits a UTF-8 character (it backs off to the start of
 * the character at the head, and forward past it at the tail); invalid
 * UTF-8 is copied as it is. Appends at most limit + the marker's length.
 * Returns the number of bytes left out, or RG_TOOL_TRIM_ERROR when memory
 * ran out. */
size_t rg_tool_trim(const char *in, size_t len, size_t limit, rg_buf_t *out);

/* {"error":"…","hint":"…"} without blanks, malloc'ed and NUL-ended; hint is
 * left out when NULL. Each text is cut to at most RG_TOOL_ERROR_MAX bytes
 * at a character boundary, ending in "…" when cut; invalid UTF-8 becomes
 * U+FFFD. *len (may be NULL) gets the length. NULL when memory ran out. */
char *rg_tool_error_json(const char *error, const char *hint, size_t *len);

#endif /* RG_TOOL_ARGS_H */
