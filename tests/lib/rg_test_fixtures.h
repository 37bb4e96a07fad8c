/* rg_test_fixtures.h: what the tests that read the shared provider
 * fixtures (../shared/fixtures/providers) have in common: where they are,
 * skipping when they are absent, reading one whole, comparing JSON. */

#ifndef RG_TEST_FIXTURES_H
#define RG_TEST_FIXTURES_H

#include <stddef.h>

/* $RG_FIXTURES_DIR, or ../shared/fixtures/providers */
const char *rg_test_fixtures_dir(void);

/* skips the calling cmocka test, saying so, when the folder is absent */
void rg_test_fixtures_present(void);

/* the whole file in a buffer of exactly its size (no NUL after it, so a
 * read past the length is caught by the sanitizer); NULL on failure */
char *rg_test_read(const char *path, size_t *len);

int rg_test_suffix(const char *name, const char *suffix);

/* text and expect are the same JSON value; a cmocka assertion */
void rg_test_json_equal(const char *text, size_t len, const char *expect,
    const char *file, int line);

/* r->message, what goes back to the model, holds exactly r's content and
 * calls (the codec's normalized form); cmocka assertions. r is an
 * rg_llm_response_t *. */
void rg_test_check_message(void *r);

#endif /* RG_TEST_FIXTURES_H */
