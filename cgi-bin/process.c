/* process.c - processes named by pid and start time (see process.h). */
#include "process.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dirlock.h"

void process_self(struct process_id *out)
{
        static pid_t cached_pid;
        static unsigned long long cached_start;
        pid_t pid = getpid();
        if (pid != cached_pid || cached_start == 0) {
                /* 0 when /proc could not be read (EMFILE): the names made
                 * meanwhile take the older form, and it is asked again. */
                cached_start = dirlock_process_start(pid);
                cached_pid = pid;
        }
        out->pid = (long)pid;
        out->start = cached_start;
}

void process_format(const struct process_id *p, char out[PROCESS_ID_MAX])
{
        if (p->start != 0)
                snprintf(out, PROCESS_ID_MAX, "%ld-%llu", p->pid, p->start);
        else
                snprintf(out, PROCESS_ID_MAX, "%ld", p->pid);
}

/* Decimal digits without a leading zero, into *v; the end, or NULL. */
static const char *parse_number(const char *s, unsigned long long max, unsigned long long *v)
{
        if (*s < '1' || *s > '9')
                return NULL;
        unsigned long long n = 0;
        for (; *s >= '0' && *s <= '9'; s++) {
                unsigned d = (unsigned)(*s - '0');
                if (n > (max - d) / 10)
                        return NULL;
                n = n * 10 + d;
        }
        *v = n;
        return s;
}

const char *process_parse(const char *s, struct process_id *out)
{
        unsigned long long pid, start = 0;
        const char *end = parse_number(s, 0x7fffffff, &pid);
        if (end == NULL)
                return NULL;
        if (*end == '-') {
                end = parse_number(end + 1, ~0ULL, &start);
                if (end == NULL)
                        return NULL;
        }
        out->pid = (long)pid;
        out->start = start;
        return end;
}

int process_is_self(const struct process_id *p)
{
        struct process_id self;
        process_self(&self);
        return p->pid == self.pid && p->start == self.start;
}

int process_gone(const struct process_id *p)
{
        struct process_id self;
        process_self(&self);
        if (p->start == 0) { /* the older form: the pid alone */
                if (p->pid == self.pid)
                        return self.start != 0; /* ours would carry the start time */
                return kill((pid_t)p->pid, 0) != 0 && errno == ESRCH;
        }
        if (p->pid == self.pid && p->start == self.start)
                return 0;
        return dirlock_process_alive((pid_t)p->pid, p->start) == 0;
}

int process_wait_gone(const struct process_id *p, double timeout, int also_fd)
{
        int pidfd = (int)syscall(SYS_pidfd_open, (pid_t)p->pid, 0);
        if (pidfd < 0)
                return errno == ESRCH ? 1 : -1;
        /* Opened once the pid may have been reused: the start time says
         * whether it is still p's. */
        if (process_gone(p)) {
                close(pidfd);
                return 1;
        }
        struct pollfd fds[2] = {{.fd = pidfd, .events = POLLIN}, {.fd = also_fd, .events = POLLIN}};
        int ms = timeout <= 0 ? 0 : timeout >= INT_MAX / 1000 ? INT_MAX : (int)(timeout * 1000) + 1;
        int n = poll(fds, also_fd >= 0 ? 2 : 1, ms);
        close(pidfd);
        return n > 0 && (fds[0].revents & POLLIN) ? 1 : 0;
}
