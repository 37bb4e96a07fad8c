/* rg_secret.h: the secrets of the configuration (API keys) and their
 * removal from whatever reagent writes. A secret is registered when the
 * configuration reads it; every output point (the log writer,
 * transcripts, events, tool results) passes its text through
 * rg_secret_scrub(), which replaces each secret by "sk-…last4", and what
 * a session keeps (its answer, reason and conversation) is scrubbed once
 * when it is taken in, for results and the store. */

#ifndef RG_SECRET_H
#define RG_SECRET_H

#include <rg_config.h>

/* the shortest secret that is scrubbed (shorter ones are not registered) */
#define RG_SECRET_MIN   4


/* registers s (copied); RG_OK, or RG_ERROR when it is too short or the
 * table is full */
rg_int_t rg_secret_add(const char *s, size_t len);

/* The value of the environment variable name, taken out of the
 * environment: unset, and its bytes wiped where they lie in the process's
 * initial environment (what /proc/PID/environ shows). The value is kept
 * (and registered as a secret), so a later configuration that names the
 * same variable finds it. NULL when it is neither set nor kept. */
const char *rg_secret_env(const char *name);

/* replaces every registered secret in buf[0..len) in place; the new
 * length (never longer). Safe from any thread. */
size_t rg_secret_scrub(char *buf, size_t len);

/* The length of the longest end of buf[0..len) that begins a secret
 * (0: none): what a stream holds back until the next piece tells. */
size_t rg_secret_tail(const char *buf, size_t len);

/* the same for a NUL-ended string; returns s */
char *rg_secret_scrub_str(char *s);

/* how a secret of that text is shown: "sk-…abcd" */
void rg_secret_mask(const char *s, size_t len, char *buf, size_t size);

/* zeroes memory in a way the compiler keeps */
void rg_secret_wipe(void *p, size_t len);

/* the process may not be dumped or read by a same-user process
 * (PR_SET_DUMPABLE 0): RG_OK or RG_ERROR with errno */
rg_int_t rg_secret_protect(void);

/* forgets every secret, wiping the copies (at exit, and for tests) */
void rg_secret_reset(void);

#endif /* RG_SECRET_H */
