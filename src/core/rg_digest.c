/* rg_digest.c: SHA-256 in hex through OpenSSL's EVP interface, and random
 * bytes from getrandom(2) (never a seeded PRNG: ids of many processes on
 * many machines must not collide). The kernel's bytes are fetched 256 at
 * a time per thread, and a forked child forgets what its parent fetched
 * (pthread_atfork), so that no two processes hand out the same bytes. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_digest.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <sys/random.h>


/* fetched once: EVP_sha256() alone makes each init look it up again */
static EVP_MD          *rg_digest_sha256;
static pthread_once_t   rg_digest_once = PTHREAD_ONCE_INIT;

#define RG_RANDOM_POOL  256

static __thread unsigned char  rg_random_pool[RG_RANDOM_POOL];
static __thread size_t         rg_random_left;
static pthread_once_t          rg_random_once = PTHREAD_ONCE_INIT;


static void
rg_digest_fetch(void)
{
    rg_digest_sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
}


static void
rg_digest_hex(char *out, const unsigned char *p, size_t n)
{
    size_t             i;
    static const char  hex[] = "0123456789abcdef";

    for (i = 0; i < n; i++) {
        out[2 * i] = hex[p[i] >> 4];
        out[2 * i + 1] = hex[p[i] & 0x0f];
    }

    out[2 * n] = '\0';
}


rg_int_t
rg_sha256_hex(char out[RG_SHA256_HEX], const void *p1, size_t l1,
    const void *p2, size_t l2)
{
    unsigned int    n;
    unsigned char   md[EVP_MAX_MD_SIZE];
    EVP_MD_CTX     *ctx;
    const EVP_MD   *sha;

    pthread_once(&rg_digest_once, rg_digest_fetch);
    sha = rg_digest_sha256 ? rg_digest_sha256 : EVP_sha256();

    ctx = EVP_MD_CTX_new();
    if (ctx == NULL) {
        return RG_ERROR;
    }

    if (EVP_DigestInit_ex(ctx, sha, NULL) != 1
        || (l1 && EVP_DigestUpdate(ctx, p1, l1) != 1)
        || (l2 && EVP_DigestUpdate(ctx, p2, l2) != 1)
        || EVP_DigestFinal_ex(ctx, md, &n) != 1 || n != 32)
    {
        EVP_MD_CTX_free(ctx);
        return RG_ERROR;
    }

    EVP_MD_CTX_free(ctx);
    rg_digest_hex(out, md, 32);

    return RG_OK;
}


/* in the child after fork(): the only thread left is the forking one */
static void
rg_random_forget(void)
{
    rg_random_left = 0;
}


static void
rg_random_init(void)
{
    (void) pthread_atfork(NULL, NULL, rg_random_forget);
}


static rg_int_t
rg_random_fill(unsigned char *buf, size_t nbytes)
{
    size_t   got;
    ssize_t  n;

    for (got = 0; got < nbytes; got += (size_t) n) {
        n = getrandom(buf + got, nbytes - got, 0);
        if (n < 0) {
            if (errno == EINTR) {
                n = 0;
                continue;
            }
            return RG_ERROR;
        }
    }

    return RG_OK;
}


rg_int_t
rg_random_hex(char *out, size_t nbytes)
{
    unsigned char  *p;

    if (nbytes > 64) {
        return RG_ERROR;
    }

    pthread_once(&rg_random_once, rg_random_init);

    if (nbytes > rg_random_left) {
        if (rg_random_fill(rg_random_pool, RG_RANDOM_POOL) != RG_OK) {
            rg_random_left = 0;
            return RG_ERROR;
        }
        rg_random_left = RG_RANDOM_POOL;
    }

    /* taken from the end, and wiped: a byte is handed out once */
    rg_random_left -= nbytes;
    p = rg_random_pool + rg_random_left;
    rg_digest_hex(out, p, nbytes);
    memset(p, 0, nbytes);

    return RG_OK;
}
