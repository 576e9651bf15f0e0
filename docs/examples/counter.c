/* counter.c - a CGI hit counter in C, with the dirlock library.
 *
 * Each visit reads the count, adds one and writes it back (a temporary
 * file renamed over the count): a read-modify-write, which the lock
 * makes one visit at a time.
 *
 *   cc -o counter counter.c $(pkg-config --cflags --libs dirlock)
 *
 * COUNTER_DIR: where the count and its lock live (default
 * /var/lib/counter), writable by the web server's user.
 * COUNTER_DELAY_MS: a pause inside the read-modify-write (default none),
 * which the tests use to make overlaps certain. */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <dirlock.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int answer(const char *status, const char *text)
{
        printf("Status: %s\r\nContent-Type: text/plain\r\n\r\n%s\n", status, text);
        return 0;
}

int main(void)
{
        const char *dir = getenv("COUNTER_DIR") ? getenv("COUNTER_DIR") : "/var/lib/counter";
        char locks[4096], count[4096], tmp[4096];
        snprintf(locks, sizeof locks, "%s/locks", dir);
        snprintf(count, sizeof count, "%s/count", dir);
        snprintf(tmp, sizeof tmp, "%s/count.tmp", dir);

        dirlock_options opts;
        dirlock_options_init(&opts);
        opts.timeout = 10; /* seconds */
        dirlock *lock;
        dirlock_error err;
        int rc = dirlock_acquire(locks, "counter", &opts, &lock, &err);
        if (rc == DIRLOCK_ETIMEDOUT)
                return answer("503 Service Unavailable\r\nRetry-After: 1", "Busy, please try again.");
        if (rc != DIRLOCK_OK) {
                fprintf(stderr, "counter: %s\n", err.message); /* the server's error log */
                return answer("500 Internal Server Error", "The counter failed (see the server log).");
        }

        /* Under the lock. */
        long n = 0;
        FILE *f = fopen(count, "r");
        if (f) {
                if (fscanf(f, "%ld", &n) != 1)
                        n = 0;
                fclose(f);
        }
        const char *delay = getenv("COUNTER_DELAY_MS");
        if (delay) {
                long ms = atol(delay);
                nanosleep(&(struct timespec){ms / 1000, (ms % 1000) * 1000000L}, NULL);
        }
        n++;
        f = fopen(tmp, "w");
        int written = f && fprintf(f, "%ld\n", n) > 0;
        if (f && fclose(f) != 0)
                written = 0;
        /* The lock must still be ours when the new count goes in place
         * (dirlock_check: it was not broken as stale meanwhile). */
        if (!written || dirlock_check(lock, &err) != DIRLOCK_OK || rename(tmp, count) != 0) {
                dirlock_release(lock, NULL);
                return answer("500 Internal Server Error", "The counter failed.");
        }
        dirlock_release(lock, NULL);
        printf("Content-Type: text/plain\r\n\r\nvisit %ld\n", n);
        return 0;
}
