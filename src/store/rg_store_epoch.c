/* rg_store_epoch.c: knowing that the store lost its memory. A durable
 * store (Redis) keeps an epoch: a random id written by the first process
 * that finds none, read by every process on each (re)connection and
 * every few seconds (rg_store_redis.c). A process remembers the first it
 * read; another one later (Redis restarted empty and the first process
 * back wrote a new one, or this one did) means that everything the store
 * held is gone: the queue's groups, the sessions' records and leases,
 * the results, the claims. Said once per loss, in words a person can act
 * on, and told to the watchers (the workers, which write back what they
 * hold). What is lost for good is said by them. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_store.h>
#include <fcntl.h>
#include <sys/file.h>


void
rg_store_epoch_remember(rg_store_t *st, const char *path)
{
    snprintf(st->epoch.file, sizeof(st->epoch.file), "%s", path);
}


/* The file's id into old (NUL-ended, "" when none), and id written in
 * its place, under a lock its other readers (the workers of one serve)
 * wait for a moment: the one that finds the old id is the one that says
 * the loss. A local file of a few bytes, once per epoch seen. */
static void
rg_store_epoch_swap(rg_store_epoch_t *ep, rg_log_t *log, const char *id,
    char *old, size_t size)
{
    int      fd;
    ssize_t  n;
    size_t   len;

    old[0] = '\0';

    fd = open(ep->file, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd == -1) {
        rg_log_error(RG_LOG_WARN, log, errno, "the store's epoch cannot be "
                     "kept in \"%s\"; a loss while no worker runs will not "
                     "be said", ep->file);
        ep->file[0] = '\0';
        return;
    }

    if (flock(fd, LOCK_EX) == 0) {
        n = pread(fd, old, size - 1, 0);
        old[n > 0 ? n : 0] = '\0';
        old[strcspn(old, "\n")] = '\0';

        if (strcmp(old, id) != 0) {
            len = strlen(id);
            if (ftruncate(fd, 0) != 0
                || pwrite(fd, id, len, 0) != (ssize_t) len)
            {
                rg_log_error(RG_LOG_WARN, log, errno, "the store's epoch was "
                             "not written to \"%s\"", ep->file);
            }
        }
    }

    close(fd);
}


rg_int_t
rg_store_watch(rg_store_t *st, rg_store_lost_pt cb, void *data)
{
    rg_store_epoch_t  *ep;

    ep = &st->epoch;

    if (ep->n == RG_STORE_WATCHERS) {
        return RG_ERROR;
    }

    ep->cb[ep->n] = cb;
    ep->data[ep->n] = data;
    ep->n++;

    return RG_OK;
}


void
rg_store_unwatch(rg_store_t *st, rg_store_lost_pt cb, void *data)
{
    rg_uint_t          i;
    rg_store_epoch_t  *ep;

    ep = &st->epoch;

    for (i = 0; i < ep->n; i++) {
        if (ep->cb[i] == cb && ep->data[i] == data) {
            ep->n--;
            ep->cb[i] = ep->cb[ep->n];
            ep->data[i] = ep->data[ep->n];
            return;
        }
    }
}


void
rg_store_epoch_seen(rg_store_t *st, rg_log_t *log, const char *id,
    size_t len, rg_uint_t made)
{
    char               old[48];
    rg_uint_t          i, n;
    rg_store_epoch_t  *ep;
    rg_store_lost_pt   cb[RG_STORE_WATCHERS];
    void              *data[RG_STORE_WATCHERS];

    ep = &st->epoch;
    len = rg_min(len, sizeof(ep->id) - 1);

    if (ep->id[0] == '\0') {
        memcpy(ep->id, id, len);
        ep->id[len] = '\0';

        if (ep->file[0] == '\0') {
            return;
        }

        /* the one this serve kept: another is a loss while it was away */
        rg_store_epoch_swap(ep, log, ep->id, old, sizeof(old));
        if (old[0] == '\0' || strcmp(old, ep->id) == 0) {
            return;
        }

        ep->losses++;
        ep->lost_at = rg_wall_msec();

        rg_log_error(RG_LOG_ALERT, log, 0, "the store lost its memory while "
                     "no worker of this serve ran: its epoch is %s, not %s "
                     "as \"%s\" kept it: the queue's groups, the sessions' "
                     "records and leases, the results and the claims it held "
                     "are gone; tasks that were queued or running then are "
                     "lost unless their submitters queue them again",
                     ep->id, old, ep->file);

    } else if (strlen(ep->id) == len && memcmp(ep->id, id, len) == 0) {
        return;

    } else {
        memcpy(old, ep->id, sizeof(old));
        memcpy(ep->id, id, len);
        ep->id[len] = '\0';

        if (ep->file[0]) {
            char  kept[48];

            rg_store_epoch_swap(ep, log, ep->id, kept, sizeof(kept));
        }

        ep->losses++;
        ep->lost_at = rg_wall_msec();

        rg_log_error(RG_LOG_ALERT, log, 0, "the store lost its memory: its "
                     "epoch is %s, not %s as before (%s): the queue's groups, "
                     "the sessions' records and leases, the results and the "
                     "claims it held are gone; the workers write back what "
                     "they hold, and say what is lost", ep->id, old,
                     made ? "this process found none and wrote a new one: "
                            "Redis restarted without its data, or was emptied"
                          : "another process found none and wrote a new one");
    }

    /* a watcher may watch or unwatch while told: a copy is told */
    n = ep->n;
    memcpy(cb, ep->cb, n * sizeof(rg_store_lost_pt));
    memcpy(data, ep->data, n * sizeof(void *));

    for (i = 0; i < n; i++) {
        cb[i](data[i], st);
    }
}
