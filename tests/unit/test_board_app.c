/* test_board_app.c - whole requests through app_handle(): pages, posting,
 * CSRF, limits, status codes, lock modes (with the dirlock library), SQLite,
 * pagination, rate limit, delete. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../cgi-bin/app.h"
#include "dirlock.h"
#include "dirlock_flock.h"

struct world {
        char dir[64];
        char conf[128];
        char data[128];
        struct app app;
        char cookie[160];
        char token[CSRF_TOKEN_LEN + 1];
        const char *content_type; /* of POSTs; NULL: the form's */
        const char *extra_env[4]; /* more NAME=value, NULL-terminated */
        const char *addr;         /* REMOTE_ADDR; NULL: 192.0.2.1 */
};

struct body_src {
        const char *p;
        size_t left;
        int reads;
};

static long mem_read(void *ctx, char *dst, size_t n)
{
        struct body_src *s = ctx;
        s->reads++;
        if (n > s->left)
                n = s->left;
        memcpy(dst, s->p, n);
        s->p += n;
        s->left -= n;
        return (long)n;
}

/* One request; returns the status, *out gets the whole response. */
static int request(struct world *w, const char *method, const char *uri, const char *query, const char *body,
                   const char *cookie, struct buf *out, int *reads)
{
        char e_conf[160], e_method[32], e_uri[256], e_query[256], e_len[48], e_cookie[256];
        snprintf(e_conf, sizeof e_conf, "BOARD_CONF=%s", w->conf);
        snprintf(e_method, sizeof e_method, "REQUEST_METHOD=%s", method);
        snprintf(e_uri, sizeof e_uri, "DOCUMENT_URI=%s", uri);
        snprintf(e_query, sizeof e_query, "QUERY_STRING=%s", query ? query : "");
        snprintf(e_len, sizeof e_len, "CONTENT_LENGTH=%zu", body ? strlen(body) : 0);
        snprintf(e_cookie, sizeof e_cookie, "HTTP_COOKIE=%s", cookie ? cookie : "");
        char e_type[128];
        snprintf(e_type, sizeof e_type, "CONTENT_TYPE=%s",
                 strcmp(method, "POST") != 0 ? ""
                 : w->content_type           ? w->content_type
                                             : "application/x-www-form-urlencoded");
        char e_addr[80];
        snprintf(e_addr, sizeof e_addr, "REMOTE_ADDR=%s", w->addr ? w->addr : "192.0.2.1");
        char *envp[16] = {e_conf, e_method, e_uri, e_query, e_len, e_cookie, e_addr, e_type};
        for (int i = 0; i < 4 && w->extra_env[i]; i++)
                envp[8 + i] = (char *)w->extra_env[i];
        struct body_src src = {body ? body : "", body ? strlen(body) : 0, 0};
        buf_reset(out);
        int status = app_handle(&w->app, envp, mem_read, &src, out);
        if (reads)
                *reads = src.reads;
        assert_non_null(out->data);
        char want[32];
        snprintf(want, sizeof want, "Status: %d ", status);
        assert_true(strncmp(out->data, want, strlen(want)) == 0);
        return status;
}

static void make_world(struct world *w, const char *extra)
{
        memset(w, 0, sizeof *w);
        strcpy(w->dir, "/tmp/test_board_app_XXXXXX");
        assert_non_null(mkdtemp(w->dir));
        snprintf(w->conf, sizeof w->conf, "%s/board.conf", w->dir);
        snprintf(w->data, sizeof w->data, "%s/data", w->dir);
        FILE *fp = fopen(w->conf, "w");
        fprintf(fp, "title = テスト\nbase_path = /b/\ndata_dir = %s\nlock_timeout = 0.3\n%s", w->data, extra);
        fclose(fp);
        /* GET the page: cookie and token, as a browser would. */
        struct buf out = BUF_INIT;
        assert_int_equal(request(w, "GET", "/b/", NULL, NULL, NULL, &out, NULL), 200);
        const char *c = strstr(out.data, "Set-Cookie: board_csrf=");
        assert_non_null(c);
        const char *v = c + strlen("Set-Cookie: board_csrf=");
        snprintf(w->cookie, sizeof w->cookie, "board_csrf=%.*s", (int)strcspn(v, ";\r"), v);
        assert_non_null(strstr(out.data, "; Path=/b/; HttpOnly; SameSite=Strict"));
        const char *t = strstr(out.data, "<input type=\"hidden\" name=\"token\" value=\"");
        assert_non_null(t);
        t += strlen("<input type=\"hidden\" name=\"token\" value=\"");
        memcpy(w->token, t, CSRF_TOKEN_LEN);
        w->token[CSRF_TOKEN_LEN] = '\0';
        assert_non_null(strstr(out.data, "Content-Type: text/html; charset=utf-8"));
        buf_free(&out);
        /* With the cookie, no new one is set. */
        struct buf again = BUF_INIT;
        assert_int_equal(request(w, "GET", "/b/", NULL, NULL, w->cookie, &again, NULL), 200);
        assert_null(strstr(again.data, "Set-Cookie"));
        assert_non_null(strstr(again.data, w->token));
        buf_free(&again);
}

static void end_world(struct world *w)
{
        app_free(&w->app);
        char cmd[96];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", w->dir);
        assert_int_equal(system(cmd), 0);
}

static int post(struct world *w, const char *fields, struct buf *out)
{
        char body[4096];
        snprintf(body, sizeof body, "token=%s&%s", w->token, fields);
        return request(w, "POST", "/b/post", NULL, body, w->cookie, out, NULL);
}

static void test_post_and_read(void **state)
{
        (void)state;
        struct world w;
        make_world(&w, "lock_mode = mkdir\n");
        struct buf out = BUF_INIT;
        assert_int_equal(
            post(&w, "name=%E5%A4%AA%E9%83%8E&subject=<b>hi&body=line1%0D%0Aline2&password=pw", &out), 303);
        assert_non_null(strstr(out.data, "Location: /b/\r\n"));
        assert_int_equal(request(&w, "GET", "/b/", NULL, NULL, w.cookie, &out, NULL), 200);
        assert_non_null(strstr(out.data, "<span class=\"name\">太郎</span>"));
        assert_non_null(strstr(out.data, "&lt;b&gt;hi"));
        assert_null(strstr(out.data, "<b>hi"));
        assert_non_null(strstr(out.data, "line1\nline2"));
        assert_int_equal(request(&w, "GET", "/b/api/messages", NULL, NULL, NULL, &out, NULL), 200);
        assert_non_null(strstr(out.data, "Content-Type: application/json"));
        assert_non_null(strstr(out.data, "{\"messages\":[{\"no\":1,\"name\":\"太郎\",\"subject\":\"<b>hi\","
                                         "\"body\":\"line1\\nline2\",\"time\":\""));
        assert_null(strstr(out.data, "$y$"));
        assert_int_equal(post(&w, "body=two", &out), 303);
        assert_int_equal(request(&w, "GET", "/b/api/messages", "since=1", NULL, NULL, &out, NULL), 200);
        assert_non_null(strstr(out.data, "\"no\":2,\"name\":\"anonymous\""));
        assert_null(strstr(out.data, "\"no\":1"));
        assert_int_equal(request(&w, "GET", "/b/api/messages", "since=x", NULL, NULL, &out, NULL), 400);
        buf_free(&out);
        end_world(&w);
}

/* GET api/info: the board's lock mode, store, demonstration delay and cap
 * as JSON, for pages that show how a board runs; nothing secret. */
static void test_api_info(void **state)
{
        (void)state;
        struct world w;
        make_world(&w, "lock_mode = flock\ndelay_ms = 20\nmax_messages = 300\n");
        struct buf out = BUF_INIT;
        assert_int_equal(request(&w, "GET", "/b/api/info", NULL, NULL, NULL, &out, NULL), 200);
        assert_non_null(strstr(out.data, "Content-Type: application/json; charset=utf-8\r\n"));
        assert_null(strstr(out.data, "Set-Cookie"));
        const char *json = strstr(out.data, "\r\n\r\n");
        assert_non_null(json);
        assert_string_equal(json + 4,
                            "{\"mode\":\"flock\",\"store\":\"log\",\"delay_ms\":20,\"max_messages\":300}\n");
        assert_null(strstr(out.data, w.data)); /* no path leaves the server */
        assert_int_equal(request(&w, "HEAD", "/b/api/info", NULL, NULL, NULL, &out, NULL), 200);
        assert_null(strstr(out.data, "{\"mode\""));
        assert_int_equal(request(&w, "POST", "/b/api/info", NULL, "x=1", w.cookie, &out, NULL), 405);
        assert_non_null(strstr(out.data, "Allow: GET, HEAD\r\n"));
        assert_non_null(strstr(out.data, "{\"error\":"));
        end_world(&w);

        make_world(&w, "store = sqlite\n");
        assert_int_equal(request(&w, "GET", "/b/api/info", NULL, NULL, NULL, &out, NULL), 200);
        assert_non_null(strstr(
            out.data, "{\"mode\":\"mkdir\",\"store\":\"sqlite\",\"delay_ms\":0,\"max_messages\":1000}\n"));
        buf_free(&out);
        end_world(&w);
}

static void test_csrf_and_errors(void **state)
{
        (void)state;
        struct world w;
        make_world(&w, "max_body = 1000\n");
        struct buf out = BUF_INIT;
        /* no cookie, wrong token, missing token */
        char body[200];
        snprintf(body, sizeof body, "token=%s&body=x", w.token);
        assert_int_equal(request(&w, "POST", "/b/post", NULL, body, NULL, &out, NULL), 403);
        assert_int_equal(request(&w, "POST", "/b/post", NULL, "token=00&body=x", w.cookie, &out, NULL), 403);
        assert_int_equal(request(&w, "POST", "/b/post", NULL, "body=x", w.cookie, &out, NULL), 403);
        assert_int_equal(request(&w, "POST", "/b/delete", NULL, "no=1&password=x", w.cookie, &out, NULL),
                         403);
        /* too large: refused before reading */
        char big[1200];
        memset(big, 'a', sizeof big - 1);
        big[sizeof big - 1] = '\0';
        int reads = -1;
        assert_int_equal(request(&w, "POST", "/b/post", NULL, big, w.cookie, &out, &reads), 413);
        assert_int_equal(reads, 0);
        /* 400s show the form again with what was typed, escaped */
        assert_int_equal(post(&w, "name=%3Cme%3E&body=50%ZZoff", &out), 400);
        assert_non_null(strstr(out.data, "malformed percent-encoding"));
        assert_non_null(strstr(out.data, "value=\"&lt;me&gt;\""));
        assert_non_null(strstr(out.data, "50%ZZoff</textarea>"));
        assert_int_equal(post(&w, "name=a&body=%FF%FE", &out), 400);
        assert_non_null(strstr(out.data, "not valid UTF-8"));
        assert_int_equal(post(&w, "name=a&subject=s", &out), 400);
        assert_non_null(strstr(out.data, "value=\"s\""));
        assert_int_equal(post(&w, "body=a&body=b", &out), 400);
        char longname[200];
        snprintf(longname, sizeof longname, "body=x&name=%065d", 0);
        assert_int_equal(post(&w, longname, &out), 400);
        assert_non_null(strstr(out.data, "too long"));
        /* routes and methods */
        assert_int_equal(request(&w, "GET", "/b/nothing", NULL, NULL, NULL, &out, NULL), 404);
        assert_int_equal(request(&w, "GET", "/elsewhere/", NULL, NULL, NULL, &out, NULL), 404);
        assert_int_equal(request(&w, "GET", "/b", NULL, NULL, NULL, &out, NULL), 301);
        assert_int_equal(request(&w, "GET", "/b/post", NULL, NULL, NULL, &out, NULL), 405);
        assert_non_null(strstr(out.data, "Allow: POST"));
        assert_int_equal(request(&w, "HEAD", "/b/", NULL, NULL, NULL, &out, NULL), 200);
        assert_null(strstr(out.data, "<html"));
        /* nothing was stored by any of this */
        assert_int_equal(request(&w, "GET", "/b/api/messages", NULL, NULL, NULL, &out, NULL), 200);
        assert_non_null(strstr(out.data, "{\"messages\":[]}"));
        buf_free(&out);
        end_world(&w);
}

static void test_delete(void **state)
{
        (void)state;
        struct world w;
        make_world(&w, "lock_mode = rw\n");
        struct buf out = BUF_INIT;
        assert_int_equal(post(&w, "body=keep&password=", &out), 303);
        assert_int_equal(post(&w, "body=del&password=secret", &out), 303);
        char body[200];
        snprintf(body, sizeof body, "token=%s&no=2&password=wrong", w.token);
        assert_int_equal(request(&w, "POST", "/b/delete", NULL, body, w.cookie, &out, NULL), 403);
        snprintf(body, sizeof body, "token=%s&no=1&password=x", w.token);
        assert_int_equal(request(&w, "POST", "/b/delete", NULL, body, w.cookie, &out, NULL), 403);
        snprintf(body, sizeof body, "token=%s&no=9&password=x", w.token);
        assert_int_equal(request(&w, "POST", "/b/delete", NULL, body, w.cookie, &out, NULL), 404);
        snprintf(body, sizeof body, "token=%s&no=abc&password=x", w.token);
        assert_int_equal(request(&w, "POST", "/b/delete", NULL, body, w.cookie, &out, NULL), 400);
        snprintf(body, sizeof body, "token=%s&no=2&password=secret", w.token);
        assert_int_equal(request(&w, "POST", "/b/delete", NULL, body, w.cookie, &out, NULL), 303);
        assert_int_equal(request(&w, "GET", "/b/api/messages", NULL, NULL, NULL, &out, NULL), 200);
        assert_non_null(strstr(out.data, "\"body\":\"keep\""));
        assert_null(strstr(out.data, "\"body\":\"del\""));
        buf_free(&out);
        end_world(&w);
}

static void test_pages_and_cap(void **state)
{
        (void)state;
        struct world w;
        make_world(&w, "page_size = 2\nmax_messages = 4\n");
        struct buf out = BUF_INIT;
        for (int i = 1; i <= 5; i++) {
                char f[32];
                snprintf(f, sizeof f, "body=msg%d", i);
                assert_int_equal(post(&w, f, &out), 303);
        }
        assert_int_equal(request(&w, "GET", "/b/", NULL, NULL, w.cookie, &out, NULL), 200);
        char *m5 = strstr(out.data, "msg5"), *m4 = strstr(out.data, "msg4");
        assert_non_null(m5);
        assert_non_null(m4);
        assert_true(m5 < m4); /* newest first */
        assert_null(strstr(out.data, "msg3"));
        assert_non_null(strstr(out.data, "href=\"/b/?page=2\""));
        assert_int_equal(request(&w, "GET", "/b/", "page=2", NULL, w.cookie, &out, NULL), 200);
        assert_non_null(strstr(out.data, "msg3"));
        assert_non_null(strstr(out.data, "msg2"));
        assert_null(strstr(out.data, "msg1")); /* capped at 4 */
        assert_null(strstr(out.data, "msg4"));
        buf_free(&out);
        end_world(&w);
}

static void rate_limit(const char *extra)
{
        struct world w;
        char conf[160];
        snprintf(conf, sizeof conf, "min_post_interval = 60\n%s", extra);
        make_world(&w, conf);
        struct buf out = BUF_INIT;
        assert_int_equal(post(&w, "body=one", &out), 303);
        assert_int_equal(post(&w, "body=two", &out), 429);
        assert_non_null(strstr(out.data, "Retry-After: "));
        assert_non_null(strstr(out.data, "Your message was not posted"));
        assert_non_null(strstr(out.data, "required>\ntwo</textarea>"));
        assert_int_equal(request(&w, "GET", "/b/api/messages", NULL, NULL, NULL, &out, NULL), 200);
        assert_non_null(strstr(out.data, "one"));
        assert_null(strstr(out.data, "two"));
        buf_free(&out);
        end_world(&w);
}

static void test_rate_limit(void **state)
{
        (void)state;
        rate_limit("");
        rate_limit("group_commit = no\n");
        rate_limit("store = sqlite\n");
        rate_limit("store = sqlite\ngroup_commit = no\n");
}

/* Hold lock `messages` of the board's lock space (data_dir/locks, or
 * `space` under the test directory: lock_space = DIR/space) in mode
 * `lock_kind`: a post is refused while it is held and stored once it is
 * released. */
static void hold_in_space_and_post(const char *mode, int lock_kind, const char *space)
{
        struct world w;
        char extra[256], dir[64];
        strcpy(dir, "/tmp/test_board_app_XXXXXX"); /* the space, outside the world */
        assert_non_null(mkdtemp(dir));
        int n = snprintf(extra, sizeof extra, "lock_mode = %s\n", mode);
        if (space)
                snprintf(extra + n, sizeof extra - (size_t)n, "lock_space = %s%s\n", space, dir);
        make_world(&w, extra);
        char lockdir[160];
        if (space)
                snprintf(lockdir, sizeof lockdir, "%s%s", space, dir);
        else
                snprintf(lockdir, sizeof lockdir, "%s/locks", w.data);
        const char *flock_dir = space && strcmp(space, "flock:") == 0 ? dir : lockdir;
        dirlock_options o;
        dirlock_options_init(&o);
        o.timeout = 1;
        o.mode = lock_kind;
        o.flags |= DIRLOCK_NO_DEADLOCK; /* stands for another process's hold */
        dirlock *h = NULL;
        dirlock_error de;
        int rc = strcmp(mode, "flock") == 0 ? dirlock_flock_acquire(flock_dir, "messages", &o, &h, &de)
                                            : dirlock_acquire(lockdir, "messages", &o, &h, &de);
        assert_int_equal(rc, DIRLOCK_OK);
        struct buf out = BUF_INIT;
        assert_int_equal(post(&w, "body=blocked", &out), 503);
        assert_non_null(strstr(out.data, "Retry-After: 1\r\n"));
        assert_non_null(strstr(out.data, "busy, please try again"));
        /* The page says the message was not posted, gives it back in
         * the form, and does not guess that a request held the lock. */
        assert_non_null(strstr(out.data, "Your message was not posted"));
        assert_non_null(strstr(out.data, "required>\nblocked</textarea>"));
        assert_null(strstr(out.data, "another request"));
        assert_int_equal(dirlock_release(h, &de), DIRLOCK_OK);
        assert_int_equal(post(&w, "body=free", &out), 303);
        buf_free(&out);
        end_world(&w);
        char cmd[96];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        assert_int_equal(system(cmd), 0);
}

static void hold_and_post(const char *mode, int lock_kind)
{
        hold_in_space_and_post(mode, lock_kind, NULL);
}

static void test_lock_busy_mkdir(void **state)
{
        (void)state;
        hold_and_post("mkdir", DIRLOCK_EXCLUSIVE);
}

static void test_lock_busy_rw_reader(void **state)
{
        (void)state;
        /* a reader present: the post's upgrade to exclusive times out */
        hold_and_post("rw", DIRLOCK_SHARED);
}

static void test_lock_busy_flock(void **state)
{
        (void)state;
        hold_and_post("flock", DIRLOCK_EXCLUSIVE);
}

/* lock_space moves the board's locks: a lock held there holds posts off,
 * for every kind of space the modes use. */
static void test_lock_space(void **state)
{
        (void)state;
        hold_in_space_and_post("mkdir", DIRLOCK_EXCLUSIVE, "");
        hold_in_space_and_post("rw", DIRLOCK_SHARED, "");
        hold_in_space_and_post("flock", DIRLOCK_EXCLUSIVE, "");
        hold_in_space_and_post("flock", DIRLOCK_EXCLUSIVE, "flock:");
        hold_in_space_and_post("mkdir", DIRLOCK_EXCLUSIVE, "flock:");
}

/* A lock in data_dir/locks does not hold off a board whose lock_space is
 * elsewhere, and the board leaves data_dir/locks alone. */
static void test_lock_space_not_data_dir(void **state)
{
        (void)state;
        char extra[160], dir[64];
        strcpy(dir, "/tmp/test_board_app_XXXXXX");
        assert_non_null(mkdtemp(dir));
        snprintf(extra, sizeof extra, "lock_mode = rw\nlock_space = %s/locks\n", dir);
        struct world w;
        make_world(&w, extra);
        char lockdir[160];
        snprintf(lockdir, sizeof lockdir, "%s/locks", w.data);
        dirlock_options o;
        dirlock_options_init(&o);
        o.timeout = 1;
        o.flags |= DIRLOCK_NO_DEADLOCK; /* stands for another process's hold */
        dirlock *h = NULL;
        dirlock_error de;
        assert_int_equal(dirlock_acquire(lockdir, "messages", &o, &h, &de), DIRLOCK_OK);
        struct buf out = BUF_INIT;
        assert_int_equal(post(&w, "body=elsewhere", &out), 303);
        assert_int_equal(request(&w, "GET", "/b/", NULL, NULL, w.cookie, &out, NULL), 200);
        assert_non_null(strstr(out.data, "elsewhere"));
        assert_int_equal(dirlock_release(h, &de), DIRLOCK_OK);
        buf_free(&out);
        end_world(&w);
        char cmd[96];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        assert_int_equal(system(cmd), 0);
}

static void test_corrupt_log(void **state)
{
        (void)state;
        struct world w;
        make_world(&w, "");
        char path[160];
        snprintf(path, sizeof path, "%s/messages.log", w.data);
        FILE *fp = fopen(path, "w");
        fputs("1\t0\ta\tb\tc\t\nbroken line\n", fp);
        fclose(fp);
        struct buf out = BUF_INIT;
        assert_int_equal(request(&w, "GET", "/b/", NULL, NULL, w.cookie, &out, NULL), 500);
        assert_non_null(strstr(out.data, "line 2 does not parse"));
        assert_int_equal(post(&w, "body=x", &out), 500);
        assert_int_equal(request(&w, "GET", "/b/api/messages", NULL, NULL, NULL, &out, NULL), 500);
        fp = fopen(path, "r");
        char text[100] = "";
        size_t n = fread(text, 1, sizeof text - 1, fp);
        fclose(fp);
        text[n] = '\0';
        assert_string_equal(text, "1\t0\ta\tb\tc\t\nbroken line\n");
        buf_free(&out);
        end_world(&w);
}

static size_t count_entries(const char *dir)
{
        char cmd[256];
        snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l", dir);
        FILE *p = popen(cmd, "r");
        unsigned long n = 0;
        if (fscanf(p, "%lu", &n) != 1)
                n = 999;
        pclose(p);
        return n;
}

static void test_lock_lost_before_rename(void **state)
{
        (void)state;
        struct world w;
        make_world(&w, "lock_mode = mkdir\nstale_age = 0.2\ndelay_ms = 700\n");
        struct buf out = BUF_INIT;
        char lockdir[160];
        snprintf(lockdir, sizeof lockdir, "%s/locks", w.data);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                /* While the post sleeps inside its window, break its lock. */
                usleep(300000);
                dirlock_error de;
                int rc = dirlock_break(lockdir, "messages", 0.2, 1, &de);
                _exit(rc == DIRLOCK_OK ? 0 : 1);
        }
        assert_int_equal(post(&w, "body=lost", &out), 503);
        assert_non_null(strstr(out.data, "Retry-After: 1"));
        int status = 0;
        waitpid(pid, &status, 0);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        /* nothing written: no log, no temp file (only locks/, secret, the
         * pending queue, which the failed post left empty, and fence.lock,
         * where the post announced its fence before it read the log) */
        char path[160];
        snprintf(path, sizeof path, "%s/messages.log", w.data);
        assert_int_equal(access(path, F_OK), -1);
        assert_int_equal(count_entries(w.data), 4);
        snprintf(path, sizeof path, "%s/pending", w.data);
        assert_int_equal(count_entries(path), 0);
        buf_free(&out);
        end_world(&w);
}

static void test_storage_failure(void **state)
{
        (void)state;
        struct world w;
        make_world(&w, "lock_mode = none\n");
        struct buf out = BUF_INIT;
        assert_int_equal(post(&w, "body=before", &out), 303);
        char cmd[256];
        /* An immutable directory refuses new files even to root. */
        snprintf(cmd, sizeof cmd, "chattr +i '%s' 2>/dev/null", w.data);
        if (system(cmd) != 0) {
                buf_free(&out);
                end_world(&w);
                skip();
                return;
        }
        int status = post(&w, "body=during", &out);
        int says = strstr(out.data, "could not complete the request") != NULL;
        size_t entries = count_entries(w.data);
        snprintf(cmd, sizeof cmd, "chattr -i '%s'", w.data);
        assert_int_equal(system(cmd), 0);
        assert_int_equal(status, 500);
        assert_true(says);
        assert_int_equal(entries, 2); /* messages.log and secret: no temp file */
        assert_int_equal(request(&w, "GET", "/b/api/messages", NULL, NULL, NULL, &out, NULL), 200);
        assert_non_null(strstr(out.data, "\"body\":\"before\""));
        assert_null(strstr(out.data, "during"));
        assert_int_equal(post(&w, "body=after", &out), 303);
        buf_free(&out);
        end_world(&w);
}

static void test_sqlite(void **state)
{
        (void)state;
        struct world w;
        make_world(&w, "store = sqlite\nmax_messages = 2\n");
        struct buf out = BUF_INIT;
        assert_int_equal(post(&w, "body=%E6%97%A5%E6%9C%AC&password=pw", &out), 303);
        assert_int_equal(post(&w, "body=b", &out), 303);
        assert_int_equal(post(&w, "body=c", &out), 303);
        assert_int_equal(request(&w, "GET", "/b/api/messages", NULL, NULL, NULL, &out, NULL), 200);
        assert_null(strstr(out.data, "日本"));
        assert_non_null(strstr(out.data, "\"no\":2"));
        assert_non_null(strstr(out.data, "\"no\":3"));
        char body[200];
        snprintf(body, sizeof body, "token=%s&no=3&password=pw", w.token);
        assert_int_equal(request(&w, "POST", "/b/delete", NULL, body, w.cookie, &out, NULL), 403);
        snprintf(body, sizeof body, "token=%s&no=1&password=pw", w.token);
        assert_int_equal(request(&w, "POST", "/b/delete", NULL, body, w.cookie, &out, NULL), 404);
        buf_free(&out);
        end_world(&w);
}

/* Numbers are never given twice: not after the newest message is deleted,
 * not after every message is deleted, not across the cap, not after a
 * restart (a new process: a new struct app).  A poller that walks with
 * ?since=<last seen> sees every new message. */
static long long newest_no(struct world *w, struct buf *out)
{
        assert_int_equal(request(w, "GET", "/b/api/messages", NULL, NULL, NULL, out, NULL), 200);
        const char *p = out->data, *last = NULL;
        while ((p = strstr(p, "\"no\":")) != NULL)
                last = p++;
        return last ? atoll(last + strlen("\"no\":")) : 0;
}

static int delete_no(struct world *w, long long no, const char *password, struct buf *out)
{
        char body[200];
        snprintf(body, sizeof body, "token=%s&no=%lld&password=%s", w->token, no, password);
        return request(w, "POST", "/b/delete", NULL, body, w->cookie, out, NULL);
}

static void numbers_never_reused(const char *extra)
{
        struct world w;
        make_world(&w, extra);
        struct buf out = BUF_INIT;
        for (int i = 1; i <= 3; i++)
                assert_int_equal(post(&w, "body=m&password=pw", &out), 303);
        assert_int_equal(newest_no(&w, &out), 3);
        /* delete the newest, post: 4, and since=3 shows it */
        assert_int_equal(delete_no(&w, 3, "pw", &out), 303);
        assert_int_equal(post(&w, "body=after-delete&password=pw", &out), 303);
        assert_int_equal(newest_no(&w, &out), 4);
        assert_int_equal(request(&w, "GET", "/b/api/messages", "since=3", NULL, NULL, &out, NULL), 200);
        assert_non_null(strstr(out.data, "\"no\":4,"));
        /* delete everything, post: 5 */
        for (long long no = 1; no <= 4; no++)
                if (no != 3)
                        assert_int_equal(delete_no(&w, no, "pw", &out), 303);
        assert_non_null(strstr(out.data, "Location: /b/"));
        assert_int_equal(request(&w, "GET", "/b/api/messages", NULL, NULL, NULL, &out, NULL), 200);
        assert_non_null(strstr(out.data, "{\"messages\":[]}"));
        assert_int_equal(post(&w, "body=after-all-deleted&password=pw", &out), 303);
        assert_int_equal(newest_no(&w, &out), 5);
        /* a restart (a fresh process state), then delete the newest, post */
        assert_int_equal(delete_no(&w, 5, "pw", &out), 303);
        app_free(&w.app);
        w.app = (struct app)APP_INIT;
        assert_int_equal(post(&w, "body=after-restart&password=", &out), 303);
        assert_int_equal(newest_no(&w, &out), 6);
        assert_int_equal(request(&w, "GET", "/b/api/messages", "since=5", NULL, NULL, &out, NULL), 200);
        assert_non_null(strstr(out.data, "after-restart"));
        /* past the cap (max_messages = 3): numbers go on from the highest */
        for (int i = 0; i < 4; i++) /* 7..10: only 10 is deleted (hashing is slow) */
                assert_int_equal(post(&w, i == 3 ? "body=cap&password=pw" : "body=cap&password=", &out), 303);
        assert_int_equal(newest_no(&w, &out), 10);
        assert_int_equal(delete_no(&w, 10, "pw", &out), 303);
        assert_int_equal(post(&w, "body=after-cap&password=", &out), 303);
        assert_int_equal(newest_no(&w, &out), 11);
        buf_free(&out);
        end_world(&w);
}

static void test_numbers_never_reused_none(void **state)
{
        (void)state;
        numbers_never_reused("lock_mode = none\nmax_messages = 3\n");
}

static void test_numbers_never_reused_wrong(void **state)
{
        (void)state;
        numbers_never_reused("lock_mode = wrong\nmax_messages = 3\n");
}

static void test_numbers_never_reused_mkdir(void **state)
{
        (void)state;
        numbers_never_reused("lock_mode = mkdir\nmax_messages = 3\n");
        numbers_never_reused("lock_mode = mkdir\nmax_messages = 3\ngroup_commit = no\n");
}

static void test_numbers_never_reused_rw(void **state)
{
        (void)state;
        numbers_never_reused("lock_mode = rw\nmax_messages = 3\n");
        numbers_never_reused("lock_mode = rw\nmax_messages = 3\nwrite_method = inplace\n");
}

static void test_numbers_never_reused_flock(void **state)
{
        (void)state;
        numbers_never_reused("lock_mode = flock\nmax_messages = 3\n");
}

static void test_numbers_never_reused_sqlite(void **state)
{
        (void)state;
        numbers_never_reused("store = sqlite\nmax_messages = 3\n");
}

/* Posts and deletes take the form's encoding only: anything else is 415
 * naming it (not a misleading "form expired"); parameters are fine. */
static void test_content_type(void **state)
{
        (void)state;
        struct world w;
        make_world(&w, "");
        struct buf out = BUF_INIT;
        const char *refused[] = {"multipart/form-data; boundary=x", "application/json", "text/plain", ""};
        for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
                w.content_type = refused[i];
                assert_int_equal(post(&w, "body=x", &out), 415);
                assert_non_null(strstr(out.data, "application/x-www-form-urlencoded"));
                assert_non_null(strstr(out.data, "Accept-Post: application/x-www-form-urlencoded\r\n"));
                char body[200];
                snprintf(body, sizeof body, "token=%s&no=1&password=x", w.token);
                assert_int_equal(request(&w, "POST", "/b/delete", NULL, body, w.cookie, &out, NULL), 415);
        }
        w.content_type = "Application/X-WWW-Form-Urlencoded ; charset=UTF-8";
        assert_int_equal(post(&w, "body=accepted", &out), 303);
        w.content_type = NULL;
        assert_int_equal(request(&w, "GET", "/b/api/messages", NULL, NULL, NULL, &out, NULL), 200);
        assert_non_null(strstr(out.data, "\"body\":\"accepted\""));
        assert_int_equal(strstr(out.data, "\"no\":2"), NULL);
        buf_free(&out);
        end_world(&w);
}

/* A body of invisible characters only is empty (400); such a name or
 * subject is empty too (the name is then "anonymous"). */
static void test_invisible_is_empty(void **state)
{
        (void)state;
        struct world w;
        make_world(&w, "");
        struct buf out = BUF_INIT;
        /* U+FEFF U+200B U+3000 U+00A0 U+2060 space TAB LF */
        const char *invisible = "%EF%BB%BF%E2%80%8B%E3%80%80%C2%A0%E2%81%A0%20%09%0A";
        char f[300];
        snprintf(f, sizeof f, "name=n&body=%s", invisible);
        assert_int_equal(post(&w, f, &out), 400);
        assert_non_null(strstr(out.data, "empty"));
        const char *invisible_line = "%EF%BB%BF%E2%80%8B%E3%80%80%C2%A0%20"; /* no TAB, LF: one line */
        snprintf(f, sizeof f, "name=%s&subject=%s&body=visible", invisible_line, invisible_line);
        assert_int_equal(post(&w, f, &out), 303);
        assert_int_equal(request(&w, "GET", "/b/api/messages", NULL, NULL, NULL, &out, NULL), 200);
        assert_non_null(strstr(out.data, "\"name\":\"anonymous\",\"subject\":\"\",\"body\":\"visible\""));
        /* visible text with invisible characters around it is kept as sent */
        assert_int_equal(post(&w, "name=%E2%80%8Bx&body=%EF%BB%BFy", &out), 303);
        assert_int_equal(request(&w, "GET", "/b/api/messages", "since=1", NULL, NULL, &out, NULL), 200);
        assert_non_null(strstr(out.data, "\"name\":\"\xe2\x80\x8bx\""));
        assert_non_null(strstr(out.data, "\"body\":\"\xef\xbb\xbfy\""));
        buf_free(&out);
        end_world(&w);
}

/* The numbers of an api/messages answer, as "1,2,3". */
static void api_numbers(struct world *w, const char *query, int want_status, char *got, size_t n)
{
        struct buf out = BUF_INIT;
        assert_int_equal(request(w, "GET", "/b/api/messages", query, NULL, NULL, &out, NULL), want_status);
        got[0] = '\0';
        size_t len = 0;
        for (const char *p = out.data; (p = strstr(p, "\"no\":")) != NULL; p++)
                len += (size_t)snprintf(got + len, n - len, "%s%lld", len ? "," : "", atoll(p + 5));
        buf_free(&out);
}

/* api/messages pages: limit (default 100, at most 1000), since walks
 * forward from the oldest, before walks back from the newest; bad
 * values are 400 JSON errors. */
static void test_api_pages(void **state)
{
        (void)state;
        struct world w;
        make_world(&w, "lock_mode = mkdir\ngroup_commit = no\n");
        struct buf out = BUF_INIT;
        for (int i = 1; i <= 130; i++) /* (only 5, deleted below, needs a password: hashing is slow) */
                assert_int_equal(post(&w, i == 5 ? "body=m&password=pw" : "body=m&password=", &out), 303);
        assert_int_equal(delete_no(&w, 5, "pw", &out), 303);
        char got[2048];
        api_numbers(&w, NULL, 200, got, sizeof got); /* the newest 100 */
        assert_true(strncmp(got, "31,32,", 6) == 0);
        assert_true(strlen(got) > 4 && strcmp(got + strlen(got) - 4, ",130") == 0);
        api_numbers(&w, "limit=3", 200, got, sizeof got);
        assert_string_equal(got, "128,129,130");
        api_numbers(&w, "since=0&limit=4", 200, got, sizeof got);
        assert_string_equal(got, "1,2,3,4");
        api_numbers(&w, "since=3&limit=3", 200, got, sizeof got); /* 5 was deleted */
        assert_string_equal(got, "4,6,7");
        api_numbers(&w, "since=128", 200, got, sizeof got);
        assert_string_equal(got, "129,130");
        api_numbers(&w, "since=130", 200, got, sizeof got);
        assert_string_equal(got, "");
        api_numbers(&w, "before=7&limit=3", 200, got, sizeof got);
        assert_string_equal(got, "3,4,6");
        api_numbers(&w, "before=3", 200, got, sizeof got);
        assert_string_equal(got, "1,2");
        api_numbers(&w, "since=2&before=7", 200, got, sizeof got);
        assert_string_equal(got, "3,4,6");
        api_numbers(&w, "since=0&limit=1000", 200, got, sizeof got);
        assert_true(strncmp(got, "1,2,3,4,6,", 10) == 0);
        const char *bad[] = {"limit=0", "limit=1001", "limit=x", "before=0", "since=-1", "since=1&since=2"};
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                assert_int_equal(request(&w, "GET", "/b/api/messages", bad[i], NULL, NULL, &out, NULL), 400);
                assert_non_null(strstr(out.data, "{\"error\":"));
        }
        buf_free(&out);
        end_world(&w);
}

/* The token the board's page hands out for cookie header `cookie`, and
 * whether the page set a new cookie. */
static int page_token(struct world *w, const char *cookie, char token[CSRF_TOKEN_LEN + 1])
{
        struct buf out = BUF_INIT;
        assert_int_equal(request(w, "GET", "/b/", NULL, NULL, cookie, &out, NULL), 200);
        const char *t = strstr(out.data, "<input type=\"hidden\" name=\"token\" value=\"");
        assert_non_null(t);
        memcpy(token, t + strlen("<input type=\"hidden\" name=\"token\" value=\""), CSRF_TOKEN_LEN);
        token[CSRF_TOKEN_LEN] = '\0';
        int set = strstr(out.data, "Set-Cookie: board_csrf=") != NULL;
        buf_free(&out);
        return set;
}

/* The tokens of a page: both forms carry the same one; 1 when a cookie
 * was set (its value in *cookie). */
static int page_tokens_of(const struct buf *out, char token[CSRF_TOKEN_LEN + 1], char cookie[80])
{
        const char *tag = "<input type=\"hidden\" name=\"token\" value=\"";
        const char *t1 = strstr(out->data, tag);
        assert_non_null(t1);
        const char *t2 = strstr(t1 + 1, tag);
        assert_non_null(t2);
        assert_null(strstr(t2 + 1, tag)); /* two forms, two tokens */
        assert_memory_equal(t1 + strlen(tag), t2 + strlen(tag), CSRF_TOKEN_LEN);
        memcpy(token, t1 + strlen(tag), CSRF_TOKEN_LEN);
        token[CSRF_TOKEN_LEN] = '\0';
        const char *c = strstr(out->data, "Set-Cookie: board_csrf=");
        if (!c)
                return 0;
        c += strlen("Set-Cookie: board_csrf=");
        snprintf(cookie, 80, "board_csrf=%.*s", (int)strcspn(c, ";\r"), c);
        return 1;
}

/* Page views served from the page cache are what rendering gives: each
 * visitor gets his own token, one without a cookie still gets a new
 * cookie and the token for it, page 2 is page 2, and the page follows
 * posts, deletes and rewrites of the log by another process - one that
 * keeps the log's size and times included. */
static void test_page_cache(void **state)
{
        (void)state;
        struct world w;
        make_world(&w, "lock_mode = mkdir\npage_size = 2\n");
        struct buf out = BUF_INIT, again = BUF_INIT;
        assert_int_equal(post(&w, "subject=first&body=one&password=pw1", &out), 303);
        assert_int_equal(post(&w, "subject=second&body=two", &out), 303);
        assert_int_equal(post(&w, "subject=third&body=three", &out), 303);

        /* The same page twice for one visitor: identical. */
        assert_int_equal(request(&w, "GET", "/b/", NULL, NULL, w.cookie, &out, NULL), 200);
        assert_int_equal(request(&w, "GET", "/b/", NULL, NULL, w.cookie, &again, NULL), 200);
        assert_int_equal(out.len, again.len);
        assert_memory_equal(out.data, again.data, out.len);
        char tok[CSRF_TOKEN_LEN + 1], ck[80];
        assert_int_equal(page_tokens_of(&out, tok, ck), 0);
        assert_string_equal(tok, w.token);

        /* A visitor without a cookie: a new cookie, the token for it, and
         * nowhere the first visitor's token. */
        for (int i = 0; i < 2; i++) {
                assert_int_equal(request(&w, "GET", "/b/", NULL, NULL, NULL, &again, NULL), 200);
                char tok2[CSRF_TOKEN_LEN + 1], ck2[80];
                assert_int_equal(page_tokens_of(&again, tok2, ck2), 1);
                assert_string_not_equal(tok2, w.token);
                assert_null(strstr(again.data, w.token));
                char tok3[CSRF_TOKEN_LEN + 1];
                assert_int_equal(page_token(&w, ck2, tok3), 0); /* the cookie works ... */
                assert_string_equal(tok3, tok2);                /* ... with that token */
                /* Apart from cookie and token, the same page. */
                const char *b1 = strstr(out.data, "\r\n\r\n"), *b2 = strstr(again.data, "\r\n\r\n");
                assert_int_equal(strlen(b1), strlen(b2));
                char *copy = strdup(b2);
                for (char *p = copy; (p = strstr(p, tok2)) != NULL;)
                        memcpy(p, w.token, CSRF_TOKEN_LEN);
                assert_string_equal(copy, b1);
                free(copy);
        }

        /* Page 2 is its own page. */
        assert_int_equal(request(&w, "GET", "/b/", "page=2", NULL, w.cookie, &again, NULL), 200);
        assert_non_null(strstr(again.data, " first</h3>"));
        assert_null(strstr(again.data, " third</h3>"));
        assert_int_equal(request(&w, "GET", "/b/", NULL, NULL, w.cookie, &out, NULL), 200);
        assert_non_null(strstr(out.data, " third</h3>"));
        assert_null(strstr(out.data, " first</h3>"));

        /* Another process (its own app, as another FastCGI process) posts:
         * the next view here shows the post. */
        struct app mine = w.app, other = APP_INIT;
        w.app = other;
        assert_int_equal(post(&w, "subject=fourth&body=four", &again), 303);
        other = w.app;
        w.app = mine;
        assert_int_equal(request(&w, "GET", "/b/", NULL, NULL, w.cookie, &out, NULL), 200);
        assert_non_null(strstr(out.data, " fourth</h3>"));
        assert_null(strstr(out.data, " second</h3>"));

        /* ... deletes message 1: it disappears from page 2. */
        assert_int_equal(request(&w, "GET", "/b/", "page=2", NULL, w.cookie, &out, NULL), 200);
        assert_non_null(strstr(out.data, " first</h3>"));
        w.app = other;
        assert_int_equal(delete_no(&w, 1, "pw1", &again), 303);
        other = w.app;
        w.app = mine;
        assert_int_equal(request(&w, "GET", "/b/", "page=2", NULL, w.cookie, &out, NULL), 200);
        assert_null(strstr(out.data, " first</h3>"));
        assert_non_null(strstr(out.data, " second</h3>"));
        app_free(&other);

        /* ... rewrites the log to the same size, giving it the old times. */
        char log[160], tmp[170];
        snprintf(log, sizeof log, "%s/messages.log", w.data);
        snprintf(tmp, sizeof tmp, "%s.new", log);
        assert_int_equal(request(&w, "GET", "/b/", NULL, NULL, w.cookie, &out, NULL), 200);
        assert_non_null(strstr(out.data, " fourth</h3>"));
        struct stat before, after;
        assert_int_equal(stat(log, &before), 0);
        struct buf text = BUF_INIT;
        FILE *f = fopen(log, "r");
        assert_non_null(f);
        char chunk[4096];
        size_t n;
        while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
                buf_append(&text, chunk, n);
        fclose(f);
        char *at = strstr(text.data, "\tfourth\t");
        assert_non_null(at);
        memcpy(at, "\tFOURTH\t", 8);
        f = fopen(tmp, "w");
        assert_non_null(f);
        assert_int_equal(fwrite(text.data, 1, text.len, f), text.len);
        fclose(f);
        assert_int_equal(rename(tmp, log), 0);
        struct timespec times[2] = {before.st_atim, before.st_mtim};
        assert_int_equal(utimensat(AT_FDCWD, log, times, 0), 0);
        assert_int_equal(stat(log, &after), 0);
        assert_int_equal(after.st_size, before.st_size);
        assert_int_equal(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
        assert_int_equal(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
        assert_int_equal(request(&w, "GET", "/b/", NULL, NULL, w.cookie, &out, NULL), 200);
        assert_non_null(strstr(out.data, " FOURTH</h3>"));
        assert_null(strstr(out.data, " fourth</h3>"));
        buf_free(&text);

        /* An error page is never the cached page, nor the other way round. */
        assert_int_equal(request(&w, "POST", "/b/post", NULL, "token=bad&body=x", w.cookie, &again, NULL),
                         403);
        assert_non_null(strstr(again.data, "The form had expired"));
        assert_int_equal(request(&w, "GET", "/b/", NULL, NULL, w.cookie, &out, NULL), 200);
        assert_null(strstr(out.data, "The form had expired"));
        assert_null(strstr(out.data, "class=\"error\""));
        buf_free(&out);
        buf_free(&again);
        end_world(&w);
}

/* A cookie the board did not issue (planted by a sibling subdomain or
 * over plain HTTP) is replaced, never given a token that works; a POST
 * whose Origin, or failing that Referer, is another site is 403. */
static void test_csrf_planted_cookie_and_origin(void **state)
{
        (void)state;
        struct world w;
        make_world(&w, "");
        struct buf out = BUF_INIT;
        const char *planted[] = {
            "board_csrf=0123456789abcdef0123456789abcdef",
            "board_csrf=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"};
        for (size_t i = 0; i < 2; i++) {
                char tok[CSRF_TOKEN_LEN + 1];
                assert_true(page_token(&w, planted[i], tok)); /* a new cookie instead */
                char body[200];
                snprintf(body, sizeof body, "token=%s&body=planted", tok);
                assert_int_equal(request(&w, "POST", "/b/post", NULL, body, planted[i], &out, NULL), 403);
        }
        /* the issued cookie still works, from the same origin */
        w.extra_env[0] = "HTTP_HOST=board.example:8080";
        w.extra_env[1] = "HTTP_ORIGIN=http://board.example:8080";
        assert_int_equal(post(&w, "body=same-origin", &out), 303);
        w.extra_env[1] = "HTTP_REFERER=http://board.example:8080/static/page.html";
        assert_int_equal(post(&w, "body=same-origin-referer", &out), 303);
        const char *cross[] = {
            "HTTP_ORIGIN=http://evil.example", "HTTP_ORIGIN=null", "HTTP_ORIGIN=https://board.example:8080",
            "HTTP_ORIGIN=http://board.example:8081", "HTTP_REFERER=http://evil.example/board.example:8080/"};
        for (size_t i = 0; i < sizeof cross / sizeof cross[0]; i++) {
                w.extra_env[1] = cross[i];
                assert_int_equal(post(&w, "body=cross", &out), 403);
                assert_non_null(strstr(out.data, "another site"));
                char body[200];
                snprintf(body, sizeof body, "token=%s&no=1&password=pw", w.token);
                assert_int_equal(request(&w, "POST", "/b/delete", NULL, body, w.cookie, &out, NULL), 403);
        }
        /* HTTPS (as the server says it) gets a Secure cookie */
        w.extra_env[0] = "REQUEST_SCHEME=https";
        w.extra_env[1] = NULL;
        assert_int_equal(request(&w, "GET", "/b/", NULL, NULL, NULL, &out, NULL), 200);
        assert_non_null(strstr(out.data, "; Secure"));
        w.extra_env[0] = "HTTPS=on";
        assert_int_equal(request(&w, "GET", "/b/", NULL, NULL, NULL, &out, NULL), 200);
        assert_non_null(strstr(out.data, "; Secure"));
        w.extra_env[0] = NULL;
        assert_int_equal(request(&w, "GET", "/b/", NULL, NULL, NULL, &out, NULL), 200);
        assert_null(strstr(out.data, "; Secure"));
        assert_int_equal(request(&w, "GET", "/b/api/messages", NULL, NULL, NULL, &out, NULL), 200);
        assert_null(strstr(out.data, "planted"));
        assert_null(strstr(out.data, "cross"));
        buf_free(&out);
        end_world(&w);
}

/* A wrong password is found out without the board's lock: while another
 * request holds it, a wrong guess is a 403 at once, not a wait and a 503
 * (the right password still needs the lock to delete). */
static void wrong_password_without_lock(const char *extra, int lock_kind)
{
        struct world w;
        make_world(&w, extra);
        struct buf out = BUF_INIT;
        assert_int_equal(post(&w, "body=guarded&password=right", &out), 303);
        char lockdir[160];
        snprintf(lockdir, sizeof lockdir, "%s/locks", w.data);
        dirlock_options o;
        dirlock_options_init(&o);
        o.timeout = 1;
        o.mode = lock_kind;             /* what a post holds while it reads and writes */
        o.flags |= DIRLOCK_NO_DEADLOCK; /* ... in another process */
        dirlock *h = NULL;
        dirlock_error de;
        assert_int_equal(dirlock_acquire(lockdir, "messages", &o, &h, &de), DIRLOCK_OK);
        assert_int_equal(delete_no(&w, 1, "wrong", &out), 403);
        assert_int_equal(delete_no(&w, 1, "right", &out), 503);
        assert_int_equal(dirlock_release(h, &de), DIRLOCK_OK);
        assert_int_equal(delete_no(&w, 1, "right", &out), 303);
        buf_free(&out);
        end_world(&w);
}

static void test_wrong_password_without_lock(void **state)
{
        (void)state;
        wrong_password_without_lock("lock_mode = mkdir\n", DIRLOCK_EXCLUSIVE);
        wrong_password_without_lock("lock_mode = rw\n", DIRLOCK_INTENT);
}

/* Failed deletes are limited per address and per message: after
 * delete_max_failures wrong guesses within delete_failure_window, 429
 * with Retry-After (before any hashing), for the address on any message
 * and for the message from any address. */
static void delete_guess_limit(const char *extra)
{
        struct world w;
        char conf[200];
        snprintf(conf, sizeof conf, "delete_max_failures = 3\ndelete_failure_window = 60\n%s", extra);
        make_world(&w, conf);
        struct buf out = BUF_INIT;
        assert_int_equal(post(&w, "body=target&password=right", &out), 303);
        assert_int_equal(post(&w, "body=other&password=right", &out), 303);
        for (int i = 0; i < 3; i++)
                assert_int_equal(delete_no(&w, 1, "guess", &out), 403);
        assert_int_equal(delete_no(&w, 1, "guess", &out), 429);
        const char *ra = strstr(out.data, "Retry-After: ");
        assert_non_null(ra);
        long secs = atol(ra + strlen("Retry-After: "));
        assert_true(secs >= 1 && secs <= 60);
        assert_int_equal(delete_no(&w, 2, "right", &out), 429); /* this address, any message */
        /* other addresses: message 1 is limited for everyone, message 2 is not */
        w.addr = "198.51.100.7";
        assert_int_equal(delete_no(&w, 1, "right", &out), 429);
        assert_int_equal(delete_no(&w, 2, "right", &out), 303);
        w.addr = "198.51.100.8";
        assert_int_equal(post(&w, "body=third&password=right", &out), 303);
        assert_int_equal(delete_no(&w, 3, "guess", &out), 403);
        assert_int_equal(delete_no(&w, 3, "right", &out), 303); /* under the limit */
        assert_int_equal(request(&w, "GET", "/b/api/messages", NULL, NULL, NULL, &out, NULL), 200);
        assert_non_null(strstr(out.data, "target"));
        buf_free(&out);
        end_world(&w);
}

static void test_delete_guess_limit(void **state)
{
        (void)state;
        delete_guess_limit("lock_mode = mkdir\n");
        delete_guess_limit("store = sqlite\n");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_post_and_read),
            cmocka_unit_test(test_api_info),
            cmocka_unit_test(test_csrf_and_errors),
            cmocka_unit_test(test_csrf_planted_cookie_and_origin),
            cmocka_unit_test(test_delete),
            cmocka_unit_test(test_pages_and_cap),
            cmocka_unit_test(test_rate_limit),
            cmocka_unit_test(test_lock_busy_mkdir),
            cmocka_unit_test(test_lock_busy_rw_reader),
            cmocka_unit_test(test_lock_busy_flock),
            cmocka_unit_test(test_lock_space),
            cmocka_unit_test(test_lock_space_not_data_dir),
            cmocka_unit_test(test_corrupt_log),
            cmocka_unit_test(test_lock_lost_before_rename),
            cmocka_unit_test(test_storage_failure),
            cmocka_unit_test(test_sqlite),
            cmocka_unit_test(test_numbers_never_reused_none),
            cmocka_unit_test(test_numbers_never_reused_wrong),
            cmocka_unit_test(test_numbers_never_reused_mkdir),
            cmocka_unit_test(test_numbers_never_reused_rw),
            cmocka_unit_test(test_numbers_never_reused_flock),
            cmocka_unit_test(test_numbers_never_reused_sqlite),
            cmocka_unit_test(test_content_type),
            cmocka_unit_test(test_wrong_password_without_lock),
            cmocka_unit_test(test_delete_guess_limit),
            cmocka_unit_test(test_api_pages),
            cmocka_unit_test(test_invisible_is_empty),
            cmocka_unit_test(test_page_cache),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
