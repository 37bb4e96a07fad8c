/* fuzz_codec.c: libFuzzer target for the store's msgpack records
 * (src/store/rg_codec.c): any bytes read as a record, every kind of
 * value asked for; what is found must lie inside the input. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_codec.h>


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    double              d;
    int64_t             v;
    rg_str_t            s;
    rg_codec_reader_t   r;
    const char         *keys[] = { "r", "j", "n", "t", "w", "l", "res" };
    size_t              i;

    if (rg_codec_read(&r, (const char *) data, size) == RG_OK) {
        for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
            if (rg_codec_get_str(&r, keys[i], &s) == RG_OK && s.len) {
                if ((const uint8_t *) s.data < data
                    || (const uint8_t *) s.data + s.len > data + size)
                {
                    __builtin_trap();
                }
            }
            (void) rg_codec_get_int(&r, keys[i], &v);
            (void) rg_codec_get_double(&r, keys[i], &d);
        }
    }

    rg_codec_done(&r);

    return 0;
}
