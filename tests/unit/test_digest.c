/* test_digest.c: SHA-256 in hex and random ids (src/core/rg_digest.c):
 * the standard's test vectors, a digest of two parts equal to the digest
 * of their concatenation, and random ids of the right length that do not
 * repeat, in one process or across a fork (the bytes are fetched ahead:
 * a child must not hand out what its parent will). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_digest.h>

#include <sys/wait.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>


static void
test_sha256(void **state)
{
    char  a[RG_SHA256_HEX], b[RG_SHA256_HEX];

    assert_int_equal(rg_sha256_hex(a, "abc", 3, NULL, 0), RG_OK);
    assert_string_equal(a, "ba7816bf8f01cfea414140de5dae2223"
                           "b00361a396177a9cb410ff61f20015ad");

    assert_int_equal(rg_sha256_hex(a, "", 0, NULL, 0), RG_OK);
    assert_string_equal(a, "e3b0c44298fc1c149afbf4c8996fb924"
                           "27ae41e4649b934ca495991b7852b855");

    /* in two parts, and with a NUL inside */
    assert_int_equal(rg_sha256_hex(a, "calc\0{\"x\":1}", 12, NULL, 0),
                     RG_OK);
    assert_int_equal(rg_sha256_hex(b, "calc\0", 5, "{\"x\":1}", 7), RG_OK);
    assert_string_equal(a, b);

    (void) state;
}


static void
test_random(void **state)
{
    int   i, j;
    char  ids[64][33];

    for (i = 0; i < 64; i++) {
        assert_int_equal(rg_random_hex(ids[i], 16), RG_OK);
        assert_int_equal(strlen(ids[i]), 32);
        assert_int_equal(strspn(ids[i], "0123456789abcdef"), 32);

        for (j = 0; j < i; j++) {
            assert_string_not_equal(ids[i], ids[j]);
        }
    }

    (void) state;
}


static void
test_random_fork(void **state)
{
    int     fd[2], st, i;
    char    mine[8][33], theirs[8][33];
    pid_t   pid;

    /* the parent has bytes in hand before the fork */
    assert_int_equal(rg_random_hex(mine[0], 16), RG_OK);
    assert_int_equal(pipe(fd), 0);

    pid = fork();
    assert_true(pid >= 0);

    if (pid == 0) {
        close(fd[0]);
        for (i = 0; i < 8; i++) {
            if (rg_random_hex(theirs[i], 16) != RG_OK
                || write(fd[1], theirs[i], 33) != 33)
            {
                _exit(1);
            }
        }
        _exit(0);
    }

    close(fd[1]);
    for (i = 0; i < 8; i++) {
        assert_int_equal(read(fd[0], theirs[i], 33), 33);
    }
    close(fd[0]);
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);

    for (i = 1; i < 8; i++) {
        assert_int_equal(rg_random_hex(mine[i], 16), RG_OK);
    }

    for (i = 0; i < 8; i++) {
        int  j;
        for (j = 0; j < 8; j++) {
            assert_string_not_equal(mine[i], theirs[j]);
        }
    }

    (void) state;
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sha256),
        cmocka_unit_test(test_random),
        cmocka_unit_test(test_random_fork),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
