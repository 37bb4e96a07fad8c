/* rg_mock_sign.c: the mock model's signatures, which it checks later
 * without keeping any state: an Anthropic thinking block's signature, the
 * data of a redacted_thinking block, a Responses reasoning item's
 * encrypted_content. Each is base64 of 64-bit FNV-1a hashes over a fixed
 * mock secret, a label saying what is signed, and the signed text: no
 * cryptography (the mock links only libevent and jansson), only enough
 * that a changed text or a changed signature is noticed. */

#include <stdlib.h>
#include <string.h>

#include "rg_mock.h"


static const char  rg_mock_secret[] = "rg_mock: not a secret, a checksum";

static const char  rg_mock_b64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";


/* The keyed hash of label and data; seed makes independent ones. */

static uint64_t
rg_mock_mac(unsigned seed, const char *label, const void *data, size_t len)
{
    uint64_t       h;
    unsigned char  s;

    s = (unsigned char) seed;

    h = rg_mock_hash(RG_MOCK_HASH_INIT, &s, 1);
    h = rg_mock_hash(h, rg_mock_secret, sizeof(rg_mock_secret));
    h = rg_mock_hash(h, label, strlen(label) + 1);
    h = rg_mock_hash(h, data, len);

    /* FNV-1a leaves the last bytes weakly mixed: finish like murmur3 */
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;

    return h;
}


static void
rg_mock_put64(unsigned char *p, uint64_t v)
{
    int  i;

    for (i = 7; i >= 0; i--) {
        p[i] = (unsigned char) (v & 0xff);
        v >>= 8;
    }
}


/* Base64 of len bytes into out, which has room for 4 * ((len + 2) / 3)
 * characters and a NUL. */

static void
rg_mock_b64_encode(const unsigned char *p, size_t len, char *out)
{
    size_t    i, o;
    uint32_t  v;

    for (i = 0, o = 0; i + 2 < len; i += 3) {
        v = (uint32_t) p[i] << 16 | (uint32_t) p[i + 1] << 8 | p[i + 2];
        out[o++] = rg_mock_b64[v >> 18];
        out[o++] = rg_mock_b64[(v >> 12) & 63];
        out[o++] = rg_mock_b64[(v >> 6) & 63];
        out[o++] = rg_mock_b64[v & 63];
    }

    if (i < len) {
        v = (uint32_t) p[i] << 16;
        if (i + 1 < len) {
            v |= (uint32_t) p[i + 1] << 8;
        }

        out[o++] = rg_mock_b64[v >> 18];
        out[o++] = rg_mock_b64[(v >> 12) & 63];
        out[o++] = i + 1 < len ? rg_mock_b64[(v >> 6) & 63] : '=';
        out[o++] = '=';
    }

    out[o] = '\0';
}


/* Decodes padded base64; returns a new buffer and its length, or NULL for
 * anything that is not exactly base64. */

static unsigned char *
rg_mock_b64_decode(const char *s, size_t *len)
{
    size_t          n, i, o, pad;
    uint32_t        v;
    const char     *c;
    unsigned char  *p;
    int             d[4], k;

    n = strlen(s);
    if (n == 0 || n % 4 != 0) {
        return NULL;
    }

    pad = s[n - 1] == '=' ? (s[n - 2] == '=' ? 2 : 1) : 0;

    p = malloc(n / 4 * 3);
    if (p == NULL) {
        return NULL;
    }

    for (i = 0, o = 0; i < n; i += 4) {
        for (k = 0; k < 4; k++) {
            if (s[i + k] == '=' && i + 4 == n && k >= 4 - (int) pad) {
                d[k] = 0;
                continue;
            }

            c = s[i + k] ? strchr(rg_mock_b64, s[i + k]) : NULL;
            if (c == NULL) {
                free(p);
                return NULL;
            }

            d[k] = (int) (c - rg_mock_b64);
        }

        v = (uint32_t) d[0] << 18 | (uint32_t) d[1] << 12
            | (uint32_t) d[2] << 6 | (uint32_t) d[3];

        p[o++] = (unsigned char) (v >> 16);
        p[o++] = (unsigned char) (v >> 8);
        p[o++] = (unsigned char) v;
    }

    *len = o - pad;

    return p;
}


/* The signature of data: base64 of two keyed hashes, 24 characters; out
 * has room for 25. */

void
rg_mock_sign(const char *label, const char *data, size_t len, char *out,
    size_t size)
{
    unsigned char  mac[16];
    char           b64[32];

    rg_mock_put64(mac, rg_mock_mac(1, label, data, len));
    rg_mock_put64(mac + 8, rg_mock_mac(2, label, data, len));
    rg_mock_b64_encode(mac, sizeof(mac), b64);

    snprintf(out, size, "%s", b64);
}


int
rg_mock_sign_check(const char *label, const char *data, size_t len,
    const char *sig)
{
    char  want[32];

    rg_mock_sign(label, data, len, want, sizeof(want));

    return sig != NULL && strcmp(sig, want) == 0;
}


/* Hides or shows len bytes of p: XOR with a keystream of keyed hashes. */

static void
rg_mock_xor(const char *label, unsigned char *p, size_t len)
{
    size_t         i;
    uint64_t       k;
    unsigned char  block[8];

    k = 0;

    for (i = 0; i < len; i++) {
        if (i % 8 == 0) {
            rg_mock_put64(block, (uint64_t) (i / 8));
            k = rg_mock_mac(4, label, block, sizeof(block));
        }

        p[i] ^= (unsigned char) (k >> (8 * (i % 8)));
    }
}


/* Seals a payload: base64 of 0x80 (hence the leading "g", as Fernet's
 * tokens have), the payload hidden by rg_mock_xor() and its keyed hash.
 * A new string, or NULL. */

char *
rg_mock_seal(const char *label, const char *payload, size_t len)
{
    char           *out;
    unsigned char  *buf;

    buf = malloc(len + 9);
    out = malloc(4 * ((len + 9 + 2) / 3) + 1);

    if (buf == NULL || out == NULL) {
        free(buf);
        free(out);
        return NULL;
    }

    buf[0] = 0x80;
    memcpy(buf + 1, payload, len);
    rg_mock_xor(label, buf + 1, len);
    rg_mock_put64(buf + 1 + len, rg_mock_mac(3, label, payload, len));

    rg_mock_b64_encode(buf, len + 9, out);
    free(buf);

    return out;
}


/* Whether sealed is what rg_mock_seal() made for label. */

int
rg_mock_seal_check(const char *label, const char *sealed)
{
    int             ok;
    size_t          len;
    unsigned char  *buf, mac[8];

    if (sealed == NULL) {
        return 0;
    }

    buf = rg_mock_b64_decode(sealed, &len);
    if (buf == NULL) {
        return 0;
    }

    ok = 0;

    if (len >= 9 && buf[0] == 0x80) {
        rg_mock_xor(label, buf + 1, len - 9);
        rg_mock_put64(mac, rg_mock_mac(3, label, buf + 1, len - 9));
        ok = memcmp(mac, buf + len - 8, 8) == 0;
    }

    free(buf);

    return ok;
}
