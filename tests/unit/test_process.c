/* test_process.c: the master and its workers (src/os/rg_master.c,
 * rg_worker.c, rg_process_ctl.c) as real processes, with real signals:
 * the master forks its workers and reports them on its status socket; a
 * killed worker is started again; HUP starts workers with the new
 * configuration while the old ones drain, and a broken one keeps the old
 * workers and names file:line; USR1 reaches every worker; QUIT drains and
 * exits removing the pid file; TERM stops fast and kills a worker that
 * does not stop; -s signals through the pid file; a worker that keeps
 * dying is started again later and later; systemd hears READY,
 * RELOADING, READY once the reload is done and STOPPING, in that order.
 * The workers here are small stand-ins that log
 * what happens to them; the engine's own workers are tested through the
 * binary. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_process.h>
#include <rg_test.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <event2/event.h>


/* a configuration: "workers=N drain=MS tag=WORD die=0|1 stubborn=0|1";
 * the master holds it as its rg_cycle_t, which it never looks into */
typedef struct {
    rg_uint_t           workers;
    rg_msec_t           drain;
    char                tag[32];
    int                 die;          /* workers exit at once with 3 */
    int                 stubborn;     /* workers ignore stop and drain */
    rg_log_t            log;
} rg_test_conf_t;


static char  rg_test_dir[64];
static char  rg_test_pid[128];
static char  rg_test_events[128];
static char  rg_test_logfile[128];
static char  rg_test_conffile[128];


static void
rg_test_event(const char *fmt, ...)
{
    int      fd, n;
    char     line[256];
    va_list  args;

    va_start(args, fmt);
    n = vsnprintf(line, sizeof(line) - 1, fmt, args);
    va_end(args);

    line[n++] = '\n';

    fd = open(rg_test_events, O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (fd != -1) {
        if (write(fd, line, n) != n) {
            /* the test will miss it */
        }
        close(fd);
    }
}


static rg_cycle_t *
rg_test_load(const char *file, char *err, size_t len)
{
    FILE            *f;
    char             line[256], *p;
    rg_test_conf_t  *c;

    f = fopen(file, "r");
    if (f == NULL) {
        snprintf(err, len, "cannot open \"%s\"", file);
        return NULL;
    }

    if (fgets(line, sizeof(line), f) == NULL) {
        line[0] = '\0';
    }
    fclose(f);

    if (strstr(line, "broken")) {
        snprintf(err, len, "unknown directive \"broken\" in %s:1", file);
        return NULL;
    }

    c = calloc(1, sizeof(rg_test_conf_t));
    assert_non_null(c);

    c->workers = 2;
    c->drain = 300;
    snprintf(c->tag, sizeof(c->tag), "none");

    if ((p = strstr(line, "workers="))) {
        c->workers = strtoul(p + 8, NULL, 10);
    }
    if ((p = strstr(line, "drain="))) {
        c->drain = strtoull(p + 6, NULL, 10);
    }
    if ((p = strstr(line, "tag="))) {
        sscanf(p + 4, "%31[a-z0-9]", c->tag);
    }
    c->die = strstr(line, "die=1") != NULL;
    c->stubborn = strstr(line, "stubborn=1") != NULL;

    c->log = *rg_log_stderr();
    c->log.fd = open(rg_test_logfile, O_WRONLY | O_APPEND | O_CREAT, 0644);
    c->log.log_level = RG_LOG_INFO;

    return (rg_cycle_t *) c;
}


static void
rg_test_unload(rg_cycle_t *cycle)
{
    rg_test_conf_t  *c = (rg_test_conf_t *) cycle;

    close(c->log.fd);
    free(c);
}


static void
rg_test_settings(rg_cycle_t *cycle, rg_master_settings_t *s)
{
    rg_test_conf_t  *c = (rg_test_conf_t *) cycle;

    s->workers = c->workers;
    s->drain_timeout = c->drain;
    s->pid_file = rg_test_pid;
    s->daemon = 0;
    s->log = &c->log;
}


static void
rg_test_reopen(rg_cycle_t *cycle)
{
    rg_test_event("reopen %d", (int) getpid());
}


static void
rg_test_drain(rg_worker_t *w, rg_msec_t timeout)
{
    struct timeval   tv;
    rg_test_conf_t  *c = (rg_test_conf_t *) w->cycle;

    rg_test_event("drain %d %llu", (int) getpid(),
                  (unsigned long long) timeout);

    if (c->stubborn) {
        return;
    }

    /* its "sessions" end a little later */
    tv.tv_sec = 0;
    tv.tv_usec = rg_min(timeout, 100) * 1000;
    event_base_once(w->base, -1, EV_TIMEOUT, rg_test_break, w->base, &tv);
}


static void
rg_test_stop(rg_worker_t *w)
{
    rg_test_conf_t  *c = (rg_test_conf_t *) w->cycle;

    rg_test_event("stop %d", (int) getpid());

    if (!c->stubborn) {
        event_base_loopbreak(w->base);
    }
}


static size_t
rg_test_status(rg_worker_t *w, char *buf, size_t size)
{
    int              n;
    rg_test_conf_t  *c = (rg_test_conf_t *) w->cycle;

    n = snprintf(buf, size, "{\"tag\":\"%s\",\"sessions\":%lu}", c->tag,
                 (unsigned long) w->slot);

    return n > 0 && (size_t) n < size ? (size_t) n : 0;
}


static int
rg_test_worker_run(rg_worker_t *w)
{
    struct event_base  *base;
    rg_test_conf_t     *c = (rg_test_conf_t *) w->cycle;

    if (c->die) {
        rg_test_event("died %d", (int) getpid());
        return 3;
    }

    base = event_base_new();
    w->drain = rg_test_drain;
    w->stop = rg_test_stop;
    w->status = rg_test_status;

    if (rg_worker_attach(w, base) != RG_OK) {
        return 2;
    }

    rg_test_event("start %d slot %lu gen %lu tag %s", (int) getpid(),
                  (unsigned long) w->slot, (unsigned long) w->generation,
                  c->tag);

    event_base_dispatch(base);

    rg_test_event("exit %d", (int) getpid());

    rg_worker_detach(w);
    event_base_free(base);

    return 0;
}


static const rg_master_ops_t  rg_test_ops = {
    rg_test_load, rg_test_unload, rg_test_settings, rg_test_reopen,
    rg_test_worker_run, NULL
};


static void
rg_test_write(const char *path, const char *text)
{
    FILE  *f;

    f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}


static char *
rg_test_read(const char *path)
{
    FILE    *f;
    char    *buf;
    size_t   n;

    buf = calloc(1, 1 << 16);
    assert_non_null(buf);

    f = fopen(path, "r");
    if (f) {
        n = fread(buf, 1, (1 << 16) - 1, f);
        buf[n] = '\0';
        fclose(f);
    }

    return buf;
}


static rg_uint_t
rg_test_count(const char *path, const char *needle)
{
    char       *text, *p;
    rg_uint_t   n;

    text = rg_test_read(path);
    n = 0;

    for (p = text; (p = strstr(p, needle)) != NULL; p++) {
        n++;
    }

    free(text);

    return n;
}


static void
rg_test_msleep(long ms)
{
    struct timespec  ts;

    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000;
    nanosleep(&ts, NULL);
}


/* waits up to 10 s for needle to appear n times in path */
static int
rg_test_until(const char *path, const char *needle, rg_uint_t n)
{
    int  i;

    for (i = 0; i < 500; i++) {
        if (rg_test_count(path, needle) >= n) {
            return 1;
        }
        rg_test_msleep(20);
    }

    {
        char  *text = rg_test_read(path);

        print_error("\"%s\" seen %lu times in %s, not %lu:\n%s\n", needle,
                    (unsigned long) rg_test_count(path, needle), path,
                    (unsigned long) n, text);
        free(text);
    }

    return 0;
}


static pid_t
rg_test_master(void)
{
    pid_t  pid;

    pid = fork();
    assert_true(pid >= 0);

    if (pid == 0) {
        _exit(rg_master_run(rg_test_conffile, &rg_test_ops,
                            rg_log_stderr()));
    }

    return pid;
}


static int
rg_test_exit(pid_t pid)
{
    int  i, status;

    for (i = 0; i < 500; i++) {
        if (waitpid(pid, &status, WNOHANG) == pid) {
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
        }
        rg_test_msleep(20);
    }

    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);

    return -1;
}


static char *
rg_test_status_text(void)
{
    int  fds[2];
    char *text;
    ssize_t n;

    assert_int_equal(pipe(fds), 0);
    assert_int_equal(rg_process_status(rg_test_pid, fds[1]), 0);
    close(fds[1]);

    text = calloc(1, 65536);
    n = read(fds[0], text, 65535);
    close(fds[0]);
    assert_true(n > 0);

    return text;
}


static int
rg_test_setup(void **state)
{
    snprintf(rg_test_dir, sizeof(rg_test_dir), "/tmp/rg-proc-XXXXXX");
    assert_non_null(mkdtemp(rg_test_dir));

    snprintf(rg_test_pid, sizeof(rg_test_pid), "%s/reagent.pid",
             rg_test_dir);
    snprintf(rg_test_events, sizeof(rg_test_events), "%s/events",
             rg_test_dir);
    snprintf(rg_test_logfile, sizeof(rg_test_logfile), "%s/error.log",
             rg_test_dir);
    snprintf(rg_test_conffile, sizeof(rg_test_conffile), "%s/test.conf",
             rg_test_dir);

    *state = NULL;

    return 0;
}


static int
rg_test_teardown(void **state)
{
    char  cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf %s", rg_test_dir);
    if (system(cmd) != 0) {
        /* left behind in /tmp */
    }

    return 0;
}


/* start, status, respawn, reload, bad reload, reopen, quit */
static void
test_master_life(void **state)
{
    int        code;
    char      *st;
    pid_t      master, victim;
    FILE      *f;
    char       line[256];

    rg_test_write(rg_test_conffile, "workers=2 drain=400 tag=one\n");
    master = rg_test_master();

    assert_true(rg_test_until(rg_test_events, "tag one", 2));
    assert_int_equal(access(rg_test_pid, F_OK), 0);

    /* the status socket: two workers, each with its own report */
    rg_test_msleep(300);
    st = rg_test_status_text();
    assert_non_null(strstr(st, "\"state\":\"running\""));
    assert_non_null(strstr(st, "\"slot\":0"));
    assert_non_null(strstr(st, "\"slot\":1"));
    assert_non_null(strstr(st, "{\"tag\":\"one\",\"sessions\":1}"));
    free(st);

    /* kill -9 one: another takes its slot */
    f = fopen(rg_test_events, "r");
    assert_non_null(f);
    assert_non_null(fgets(line, sizeof(line), f));
    fclose(f);
    victim = (pid_t) atoi(line + 6);
    assert_true(victim > 0);
    kill(victim, SIGKILL);

    assert_true(rg_test_until(rg_test_events, "tag one", 3));
    assert_true(rg_test_until(rg_test_logfile, "exited on signal 9", 1));

    /* HUP: the new configuration's workers start, the old ones drain */
    rg_test_write(rg_test_conffile, "workers=2 drain=400 tag=two\n");
    assert_int_equal(rg_process_signal(rg_test_pid, "reload"), 0);

    assert_true(rg_test_until(rg_test_events, "gen 2 tag two", 2));
    assert_true(rg_test_until(rg_test_events, "drain", 2));
    assert_true(rg_test_until(rg_test_events, "exit", 2));
    assert_true(rg_test_until(rg_test_logfile, "generation 1 are gone", 1));

    /* a broken one: the running workers stay, the error names file:line */
    rg_test_write(rg_test_conffile, "broken\n");
    kill(master, SIGHUP);
    assert_true(rg_test_until(rg_test_logfile, "reload failed", 1));
    assert_true(rg_test_until(rg_test_logfile, "test.conf:1", 1));
    rg_test_msleep(300);
    assert_int_equal(rg_test_count(rg_test_events, "exit"), 2);
    assert_int_equal(rg_test_count(rg_test_events, "start"), 5);

    /* USR1: every process reopens */
    assert_int_equal(rg_process_signal(rg_test_pid, "reopen"), 0);
    assert_true(rg_test_until(rg_test_events, "reopen", 3));

    /* QUIT: they drain, the master goes and takes its pid file along */
    assert_int_equal(rg_process_signal(rg_test_pid, "quit"), 0);
    code = rg_test_exit(master);
    assert_int_equal(code, 0);
    assert_int_equal(rg_test_count(rg_test_events, "exit"), 4);
    assert_int_equal(access(rg_test_pid, F_OK), -1);

    /* nobody to signal now */
    assert_int_equal(rg_process_signal(rg_test_pid, "reload"), 1);
}


/* TERM: a worker that does not stop is killed */
static void
test_master_terminate(void **state)
{
    int     code;
    pid_t   master;

    rg_test_write(rg_test_conffile, "workers=1 stubborn=1 tag=x\n");
    master = rg_test_master();

    assert_true(rg_test_until(rg_test_events, "tag x", 1));

    assert_int_equal(rg_process_signal(rg_test_pid, "stop"), 0);
    code = rg_test_exit(master);

    assert_int_equal(code, 0);
    assert_true(rg_test_count(rg_test_events, "stop") >= 1);
    assert_int_equal(rg_test_count(rg_test_events, "exit"), 0);
    assert_true(rg_test_until(rg_test_logfile, "did not stop: killing it",
                              1));
    assert_true(rg_test_until(rg_test_logfile, "exited on signal 9", 1));
}


/* a worker that dies at once, again and again, waits longer each time */
static void
test_master_backoff(void **state)
{
    int     code;
    pid_t   master;

    rg_test_write(rg_test_conffile, "workers=1 die=1\n");
    master = rg_test_master();

    assert_true(rg_test_until(rg_test_events, "died", 3));
    assert_true(rg_test_until(rg_test_logfile, "died 3 times in a row", 1));
    assert_true(rg_test_until(rg_test_logfile, "starts in 1000ms", 1));

    kill(master, SIGTERM);
    code = rg_test_exit(master);
    assert_int_equal(code, 0);

    /* not a storm: a handful of starts in that time */
    assert_true(rg_test_count(rg_test_events, "died") < 8);
}


/* systemd's notify datagrams */
static void
test_master_notify(void **state)
{
    int                 fd, code;
    char                buf[256], all[2048];
    char               *ready, *reloading, *again, *stopping;
    ssize_t             n;
    pid_t               master;
    rg_uint_t           i;
    struct sockaddr_un  sun;

    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);

    memset(&sun, 0, sizeof(sun));
    sun.sun_family = AF_UNIX;
    snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/notify", rg_test_dir);
    assert_int_equal(bind(fd, (struct sockaddr *) &sun, sizeof(sun)), 0);

    setenv("NOTIFY_SOCKET", sun.sun_path, 1);

    rg_test_write(rg_test_conffile, "workers=1 tag=n\n");
    master = rg_test_master();
    unsetenv("NOTIFY_SOCKET");

    assert_true(rg_test_until(rg_test_events, "tag n", 1));
    kill(master, SIGHUP);
    assert_true(rg_test_until(rg_test_events, "gen 2", 1));
    kill(master, SIGQUIT);
    code = rg_test_exit(master);
    assert_int_equal(code, 0);

    all[0] = '\0';
    for (i = 0; i < 8; i++) {
        n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
        if (n <= 0) {
            break;
        }
        buf[n] = '\0';
        strncat(all, buf, sizeof(all) - strlen(all) - 2);
        strcat(all, "|");
    }

    close(fd);

    /* in this order: ready, reloading, ready again once the reload is
     * done (systemd waits for it), stopping */
    ready = strstr(all, "READY=1\nMAINPID=");
    assert_non_null(ready);
    reloading = strstr(ready, "|RELOADING=1\nMONOTONIC_USEC=");
    assert_non_null(reloading);
    again = strstr(reloading, "|READY=1|");
    assert_non_null(again);
    stopping = strstr(all, "|STOPPING=1|");
    assert_non_null(stopping);
    assert_true(stopping > again);
}


/* a second master on the same pid file is refused */
static void
test_master_twice(void **state)
{
    pid_t  master;

    rg_test_write(rg_test_conffile, "workers=1 tag=a\n");
    master = rg_test_master();
    assert_true(rg_test_until(rg_test_events, "tag a", 1));

    assert_int_equal(rg_master_run(rg_test_conffile, &rg_test_ops,
                                   rg_log_stderr()), 1);

    kill(master, SIGTERM);
    assert_int_equal(rg_test_exit(master), 0);

    /* a bad configuration never starts */
    rg_test_write(rg_test_conffile, "broken\n");
    assert_int_equal(rg_master_run(rg_test_conffile, &rg_test_ops,
                                   rg_log_stderr()), 1);
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_master_life, rg_test_setup,
                                        rg_test_teardown),
        cmocka_unit_test_setup_teardown(test_master_terminate, rg_test_setup,
                                        rg_test_teardown),
        cmocka_unit_test_setup_teardown(test_master_backoff, rg_test_setup,
                                        rg_test_teardown),
        cmocka_unit_test_setup_teardown(test_master_notify, rg_test_setup,
                                        rg_test_teardown),
        cmocka_unit_test_setup_teardown(test_master_twice, rg_test_setup,
                                        rg_test_teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
