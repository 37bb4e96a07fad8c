/* fs_path.c: paths of the fs module (fs.c) confined to its root: the
 * path and count arguments checked, a path walked one component at a
 * time from a descriptor of the root with openat(O_PATH | O_NOFOLLOW),
 * its symlinks spliced in and refused where they would leave; what a
 * failed open says; a directory's names, sorted. */

#include "fs.h"


static void rg_fs_open_error(const rg_fs_path_t *p, int err, char *buf,
    size_t len);
static int rg_fs_name_cmp(const void *a, const void *b);


/* The path argument: relative, no "..", no NUL. An optional one that is
 * absent, null or empty is ".". 0, or -1 after fail(). */
int
rg_fs_arg_path(rg_tool_call_t *call, int required, rg_fs_path_t *p)
{
    size_t       i, n;
    double       d;
    const char  *s;

    if (call->host->arg_string(call, "path", &p->path, &p->len) != 0
        || p->len == 0)
    {
        if (call->host->arg_number(call, "path", &d) == 0) {
            call->host->fail(call, "argument 'path' must be a string, "
                             RG_FS_EXAMPLE);
            return -1;
        }

        if (required) {
            call->host->fail(call, "missing argument 'path' (relative to the "
                             "fs root, " RG_FS_EXAMPLE ")");
            return -1;
        }

        p->path = ".";
        p->len = 1;
    }

    s = p->path;

    rg_fs_show(s, p->len, p->shown, sizeof(p->shown));

    if (strlen(s) != p->len) {
        call->host->fail(call, "path %s contains a NUL byte; send the path "
                         "as plain text, " RG_FS_EXAMPLE, p->shown);
        return -1;
    }

    if (p->len >= PATH_MAX) {
        call->host->fail(call, "path is too long (at most %d bytes)",
                         PATH_MAX - 1);
        return -1;
    }

    if (s[0] == '/') {
        call->host->fail(call, "path must be relative to the fs root, "
                         RG_FS_EXAMPLE ", not %s", p->shown);
        return -1;
    }

    for (i = 0; i < p->len; i += n + 1) {
        n = strcspn(s + i, "/");

        if (n == 2 && s[i] == '.' && s[i + 1] == '.') {
            call->host->fail(call, "path %s contains \"..\"; paths stay "
                             "inside the fs root: name the file from the "
                             "root, " RG_FS_EXAMPLE, p->shown);
            return -1;
        }
    }

    return 0;
}


/* An optional integer argument of at least min: 1 and *v set when given,
 * 0 when absent or null, -1 after fail(). */
int
rg_fs_arg_count(rg_tool_call_t *call, const char *key, long long min,
    long long *v)
{
    int          b;
    double       d;
    size_t       len;
    const char  *s;

    if (call->host->arg_int(call, key, v) == 0) {
        if (*v < min) {
            call->host->fail(call, "argument '%s' must be at least %lld, not "
                             "%lld", key, min, *v);
            return -1;
        }

        return 1;
    }

    if (call->host->arg_number(call, key, &d) == 0
        || call->host->arg_string(call, key, &s, &len) == 0
        || call->host->arg_bool(call, key, &b) == 0)
    {
        call->host->fail(call, "argument '%s' must be an integer, such as "
                         "%lld", key, min > 0 ? min * 100 : 100);
        return -1;
    }

    return 0;
}


/* The walk. Opens p (checked by rg_fs_arg_path) under the root and returns
 * an O_RDONLY descriptor of the regular file or directory it names, with
 * its stat, or -1 with a message for the model in err.
 *
 * fds[0..depth] are the directories walked so far, fds[0] the root. Each
 * component is opened O_PATH | O_NOFOLLOW relative to fds[depth]: nothing
 * is followed by the kernel. A symlink's target replaces it at the head of
 * what is left to walk; ".." in a target pops one directory and, at the
 * root, is an escape; an absolute target must lie under the root's real
 * path, and restarts the walk at fds[0]. */
int
rg_fs_open(const rg_fs_conf_t *fcf, const rg_fs_path_t *p, struct stat *st,
    char *err, size_t err_len)
{
    int          fds[RG_FS_MAX_DEPTH + 1], depth, links, fd, result, e;
    char         buf[PATH_MAX], target[PATH_MAX], name[NAME_MAX + 1];
    size_t       i, n, rest;
    ssize_t      tn;
    const char  *t;
    struct stat  lst;

    result = -1;
    depth = 0;
    links = 0;
    e = 0;

    memcpy(buf, p->path, p->len + 1);
    i = 0;

    fds[0] = open(fcf->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fds[0] == -1) {
        snprintf(err, err_len, "cannot open the fs root: %s",
                 rg_fs_strerror(errno, name, sizeof(name)));
        return -1;
    }

    for ( ;; ) {
        while (buf[i] == '/') {
            i++;
        }

        if (buf[i] == '\0') {
            /* the path names the directory reached */
            result = openat(fds[depth], ".",
                            O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            e = errno;

            if (result != -1 && fstat(result, st) == -1) {
                e = errno;
                close(result);
                result = -1;
            }

            break;
        }

        n = strcspn(buf + i, "/");

        if (n > NAME_MAX) {
            e = ENAMETOOLONG;
            break;
        }

        memcpy(name, buf + i, n);
        name[n] = '\0';
        i += n;

        if (n == 1 && name[0] == '.') {
            continue;
        }

        if (n == 2 && name[0] == '.' && name[1] == '.') {
            if (depth == 0) {
                e = EXDEV;
                break;
            }

            close(fds[depth--]);
            continue;
        }

        fd = openat(fds[depth], name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd == -1 || fstat(fd, &lst) == -1) {
            e = errno;
            if (fd != -1) {
                close(fd);
            }
            break;
        }

        if (S_ISLNK(lst.st_mode)) {
            tn = readlinkat(fd, "", target, sizeof(target));
            e = errno;
            close(fd);

            if (++links > RG_FS_MAX_LINKS) {
                e = ELOOP;
                break;
            }

            if (tn == -1) {
                break;
            }

            if ((size_t) tn >= sizeof(target) || tn == 0) {
                e = tn ? ENAMETOOLONG : ENOENT;
                break;
            }

            target[tn] = '\0';
            t = target;

            if (target[0] == '/') {
                /* under the root: its path, then "/" or the end (a root
                 * of "/" holds every absolute path) */

                n = (fcf->root_len == 1) ? 0 : fcf->root_len;

                if (strncmp(target, fcf->root, n) != 0
                    || (target[n] != '/' && target[n] != '\0'))
                {
                    e = EXDEV;
                    break;
                }

                t = target + n;

                while (depth > 0) {
                    close(fds[depth--]);
                }
            }

            /* buf = t + what is left after the symlink, which is empty
             * or starts with "/" */

            rest = strlen(buf + i);
            n = strlen(t);

            if (n + rest >= sizeof(buf)) {
                e = ENAMETOOLONG;
                break;
            }

            memmove(buf + n, buf + i, rest + 1);
            memcpy(buf, t, n);
            i = 0;
            continue;
        }

        if (S_ISDIR(lst.st_mode)) {
            if (depth == RG_FS_MAX_DEPTH) {
                close(fd);
                e = ENAMETOOLONG;
                break;
            }

            fds[++depth] = fd;
            continue;
        }

        close(fd);

        if (buf[i] == '/') {
            e = ENOTDIR;
            break;
        }

        if (!S_ISREG(lst.st_mode)) {
            e = ENODEV;
            break;
        }

        /* open the file itself; it must still be the one stat()ed */

        result = openat(fds[depth], name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK
                                          | O_NOCTTY | O_CLOEXEC);
        e = errno;

        if (result != -1
            && (fstat(result, st) == -1 || st->st_dev != lst.st_dev
                || st->st_ino != lst.st_ino))
        {
            close(result);
            result = -1;
            e = EAGAIN;
        }

        break;
    }

    while (depth >= 0) {
        close(fds[depth--]);
    }

    if (result == -1) {
        rg_fs_open_error(p, e, err, err_len);
    }

    return result;
}


static void
rg_fs_open_error(const rg_fs_path_t *p, int err, char *buf, size_t len)
{
    char  text[128];

    switch (err) {

    case ENOENT:
        snprintf(buf, len, "path %s does not exist; use list_dir to see "
                 "what is there", p->shown);
        break;

    case EXDEV:
        snprintf(buf, len, "path %s leads outside the fs root through a "
                 "symlink; use a path inside the root", p->shown);
        break;

    case ELOOP:
        snprintf(buf, len, "path %s is a symlink loop; use the file's real "
                 "path", p->shown);
        break;

    case ENOTDIR:
        snprintf(buf, len, "path %s goes through a file as if it were a "
                 "directory; use list_dir to check it", p->shown);
        break;

    case ENODEV:
        snprintf(buf, len, "path %s is not a regular file or a directory",
                 p->shown);
        break;

    case ENAMETOOLONG:
        snprintf(buf, len, "path %s is too long or too deep", p->shown);
        break;

    case EACCES:
    case EPERM:
        snprintf(buf, len, "path %s: permission denied", p->shown);
        break;

    case EAGAIN:
        snprintf(buf, len, "path %s changed while being opened; try again",
                 p->shown);
        break;

    default:
        snprintf(buf, len, "cannot open path %s: %s", p->shown,
                 rg_fs_strerror(err, text, sizeof(text)));
    }
}


/* The names in dir but "." and "..", sorted bytewise. NULL with *n = 0 when
 * empty; NULL with *n = errno on failure (ETIMEDOUT past the deadline, a
 * directory of millions of entries). readdir() is reentrant on
 * distinct streams (glibc, musl); readdir_r() is deprecated. */
char **
rg_fs_names(DIR *dir, uint64_t deadline, size_t *n)
{
    char           **names, **nn;
    size_t           size;
    struct dirent   *de;

    names = NULL;
    size = 0;
    *n = 0;

    for ( ;; ) {
        if (*n % 1024 == 1023 && rg_fs_now() >= deadline) {
            errno = ETIMEDOUT;
            break;
        }

        errno = 0;
        de = readdir(dir);

        if (de == NULL) {
            if (errno != 0) {
                break;
            }

            if (*n > 1) {
                qsort(names, *n, sizeof(char *), rg_fs_name_cmp);
            }

            return names;
        }

        if (de->d_name[0] == '.'
            && (de->d_name[1] == '\0'
                || (de->d_name[1] == '.' && de->d_name[2] == '\0')))
        {
            continue;
        }

        if (*n == size) {
            size = size ? size * 2 : 64;

            nn = realloc(names, size * sizeof(char *));
            if (nn == NULL) {
                errno = ENOMEM;
                break;
            }

            names = nn;
        }

        names[*n] = strdup(de->d_name);
        if (names[*n] == NULL) {
            errno = ENOMEM;
            break;
        }

        (*n)++;
    }

    size = (size_t) errno;
    rg_fs_names_free(names, *n);
    *n = size;

    return NULL;
}


void
rg_fs_names_free(char **names, size_t n)
{
    size_t  i;

    if (names == NULL) {
        return;
    }

    for (i = 0; i < n; i++) {
        free(names[i]);
    }

    free(names);
}


static int
rg_fs_name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *) a, *(char *const *) b);
}
