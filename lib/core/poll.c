/* poll.c - the one wait primitive of the library, dl_poll, and its seam.
 *
 * Every wait of the core, its modules and its backends -- inotify and
 * pidfd waits, backoff steps, a lock server's reply, a meta-lock's
 * backoff -- goes through dl_poll (backend.h makes it part of a
 * backend's contract).  Outside a task it is ppoll(2) without a signal
 * mask.  A module that runs tasks -- lib/async, pending acquires on
 * fibers of their own, which an event loop steps -- sets its way of
 * waiting once, at load (dl_tasks_set); while one of its tasks runs on a
 * thread (dl_task_enter), a wait of that thread is the task's: the task
 * stops there instead of blocking the thread, and goes on when what it
 * waits for happened, with what ppoll would have returned.  So there is
 * one implementation of every acquire, blocking or not.
 *
 * The task that runs is per thread; the module's hooks are set before
 * any thread runs a task, and never change. */
#include "core.h"

#include <poll.h>

static const dl_tasks *tasks;
static _Thread_local void *current;

void dl_tasks_set(const dl_tasks *t)
{
        tasks = t;
}

void dl_task_enter(void *task)
{
        current = task;
}

void *dl_task_current(void)
{
        return current;
}

void dl_task_kick(void *task)
{
        if (tasks != NULL && task != NULL)
                tasks->kick(task);
}

int dl_poll(struct pollfd *fds, unsigned long n, const struct timespec *timeout)
{
        void *task = current;
        if (task == NULL)
                return ppoll(fds, n, timeout, NULL);
        return tasks->poll(task, fds, n, timeout);
}

int dl_nap_ms(double ms, const dl_time *deadline, int cancel_fd)
{
        double left = dl_remaining(deadline);
        if (ms > left)
                ms = left;
        if (ms < 0)
                ms = 0;
        struct timespec ts = {(time_t)(ms / 1e3), (long)((ms - (double)(time_t)(ms / 1e3) * 1e3) * 1e6)};
        struct pollfd p = {.fd = cancel_fd, .events = POLLIN};
        int rc = dl_poll(&p, cancel_fd >= 0 ? 1 : 0, &ts);
        return rc > 0 && cancel_fd >= 0 && (p.revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL)) ? 1 : 0;
}
