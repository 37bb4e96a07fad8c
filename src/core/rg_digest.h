/* rg_digest.h: SHA-256 digests in hex (OpenSSL's libcrypto) and random
 * ids from the kernel (getrandom). */

#ifndef RG_DIGEST_H
#define RG_DIGEST_H

#include <rg_config.h>

#define RG_SHA256_HEX   65            /* 64 hex digits and a NUL */

/* the SHA-256 of the n parts, one after the other, in lowercase hex */
rg_int_t rg_sha256_hex(char out[RG_SHA256_HEX], const void *p1, size_t l1,
    const void *p2, size_t l2);

/* nbytes random bytes as 2 * nbytes hex digits and a NUL */
rg_int_t rg_random_hex(char *out, size_t nbytes);

#endif /* RG_DIGEST_H */
