/* keeper.c - dirlock's keeper (keeper.h): the process that keeps the
 * command's locks when dirlock no longer can.
 *
 * WHY.  While the command runs, dirlock refreshes its locks (every third
 * of the stale age).  If dirlock is killed (SIGKILL, the OOM killer) or
 * stopped (SIGSTOP), nothing would renew them: a lock server lets an
 * entry expire after the stale age, and the next holder would get in
 * while the command still runs.  A directory space keeps the lock for a
 * judge of this host (the owner record names the command as the lock's
 * partner) but not for judges of other hosts, and a flock space lets go
 * at once (the lock file's descriptor is dirlock's).  The keeper closes
 * that gap: the locks are the command's for as long as it lives.
 *
 * WHO.  dirlock forks the keeper right after it took the locks, before
 * it lets the command run, so the keeper's copies of the handles stand
 * for the same hold (dirlock_adopt; a flock descriptor is shared, and
 * stays locked while either process has it open).  The keeper:
 *   - refreshes the locks on the same schedule as dirlock (both do it: a
 *     refresh is idempotent, and either alone keeps them), for as long as
 *     the command lives (its pidfd);
 *   - learns that dirlock is gone from the EOF of a pipe whose write end
 *     only dirlock holds;
 *   - releases nothing while dirlock lives: dirlock stops it (SIGKILL) and
 *     reaps it before releasing the locks itself, so the two never
 *     release, or one refresh after the other released;
 *   - once dirlock is gone and the command has exited, releases the locks
 *     and exits;
 *   - when it finds the locks lost while dirlock is gone or stopped (and
 *     so cannot), says so on stderr and sends the command SIGTERM, as
 *     dirlock would have (run.c); whichever of the two tells first sets
 *     `told` in the page they share, and the other then says nothing, so
 *     that the command hears it once;
 *   - right after the command ended, looks whether it still holds every
 *     lock (`held_at_end`): a loss found after that, at release, came
 *     after the command ended, and is not told as one while it ran.  With
 *     dirlock dead, a loss found by that look itself may be a judge of
 *     this host that saw both processes of the owner record gone the
 *     moment the command ended: told as a warning, with when the locks
 *     were last found held.
 * It ignores the terminal's signals (^C, ^Z: they are the job's, which
 * dirlock passes on to the command), and is named "dirlock-keeper" in
 * the process list.  If the keeper dies while dirlock lives, dirlock says
 * so and starts another.  If both die, nobody renews the locks: what
 * each space then does is in man/dirlock.1 (SIGNALS). */
#include "keeper.h"
#include "run.h"
#include "test_hooks.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *progname = DIRLOCK_COMMAND_NAME;

/* Without a pidfd, how often the keeper looks whether the command lives. */
#define POLL_COMMAND_MS 100

int keeper_init(struct keeper *k, pid_t command)
{
        *k = (struct keeper){.command = command, .command_fd = -1, .ctl = {-1, -1}};
        if (pipe2(k->ctl, O_CLOEXEC) != 0)
                return -1;
        void *page = mmap(NULL, sizeof *k->news, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (page != MAP_FAILED) { /* without it, each tells (as before there was a keeper) */
                k->news = page;
                atomic_init(&k->news->told, 0);
                atomic_init(&k->news->held_at_end, 0);
        }
        /* The command is dirlock's unreaped child: the pid names it. */
        k->command_fd = (int)syscall(SYS_pidfd_open, command, 0);
        if (k->command_fd >= 0)
                fcntl(k->command_fd, F_SETFD, FD_CLOEXEC);
        k->command_start = dirlock_process_start(command);
        return 0;
}

bool keeper_claim_telling(struct keeper *k)
{
        int none = 0;
        return k->news == NULL || atomic_compare_exchange_strong(&k->news->told, &none, 1);
}

bool keeper_held_at_end(const struct keeper *k)
{
        return k->news != NULL && atomic_load(&k->news->held_at_end);
}

void keeper_close(struct keeper *k)
{
        for (int i = 0; i < 2; i++)
                if (k->ctl[i] >= 0)
                        close(k->ctl[i]);
        if (k->command_fd >= 0)
                close(k->command_fd);
        k->ctl[0] = k->ctl[1] = k->command_fd = -1;
        if (k->news != NULL)
                munmap(k->news, sizeof *k->news);
        k->news = NULL;
}

static bool command_alive(const struct keeper *k)
{
        if (k->command_fd >= 0) {
                struct pollfd p = {.fd = k->command_fd, .events = POLLIN};
                return poll(&p, 1, 0) == 0;
        }
        return dirlock_process_alive(k->command, k->command_start) != 0;
}

/* Whether process `pid` is stopped (SIGSTOP, ^Z): its state in
 * /proc/PID/stat, after the parenthesised name, is T (or t: traced). */
static bool stopped(pid_t pid)
{
        char path[64], text[512];
        snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return false;
        ssize_t n = read(fd, text, sizeof text - 1);
        close(fd);
        if (n <= 0)
                return false;
        text[n] = '\0';
        const char *end = strrchr(text, ')');
        return end != NULL && end[1] == ' ' && (end[2] == 'T' || end[2] == 't');
}

static void signal_command(const struct keeper *k, int sig)
{
        if (k->command_fd >= 0)
                syscall(SYS_pidfd_send_signal, k->command_fd, sig, NULL, 0);
        else if (command_alive(k))
                kill(k->command, sig);
}

/* What the keeper saw as the command ended. */
struct end_look {
        bool done;     /* the command has ended, and the look was made */
        bool held;     /* every lock was held then (held_at_end)       */
        bool orphaned; /* found lost by that look, with dirlock gone   */
        double at;     /* when the end was seen (hold_now)             */
};

/* The command just ended: look whether every lock is still held. */
static void look_at_end(struct keeper *k, struct hold *h, bool parent_gone, struct end_look *end)
{
        end->done = true;
        end->at = hold_now();
        const char *delay = dl_test_hook(KEEPER_END_DELAY_MS); /* test builds */
        if (delay != NULL)
                poll(NULL, 0, atoi(delay));
        bool lost_before = h->lost;
        end->held = hold_verify(h);
        if (end->held && k->news != NULL)
                atomic_store(&k->news->held_at_end, 1);
        /* dirlock dead and the command just ended: the owner record's two
         * processes are gone, and a judge of this host may take the locks
         * at once -- before this look.  Found lost here, they may have
         * been lost at the end, not while it ran. */
        end->orphaned = parent_gone && !end->held && h->lost && !lost_before;
}

/* dirlock gone and the command ended: release the locks, say what
 * became of them, and exit. */
static void finish(struct keeper *k, struct hold *h, bool told, const struct end_look *end)
{
        dirlock_error e;
        bool lost_before = h->lost;
        int rc = hold_release(h, &e);
        if (h->lost && !lost_before && end->held)
                ; /* lost after the command ended: it ran under its locks */
        else if (end->orphaned && !told)
                fprintf(
                    stderr,
                    "%s: warning: a lock was gone when the command ended (%s); dirlock had been killed, so "
                    "a waiter of this host could take it the moment the command ended -- it was last found "
                    "held %.1f s before the end\n",
                    progname, h->why.message, end->at - h->ok_at);
        else if (h->lost && !told && keeper_claim_telling(k))
                fprintf(stderr, "%s: a lock was lost while the command ran: %s\n", progname, h->why.message);
        else if (rc != DIRLOCK_OK && rc != DIRLOCK_ELOST)
                fprintf(stderr, "%s: warning: %s\n", progname, e.message);
        _exit(0);
}

/* The keeper's life, in the child: never returns. */
static void keep(struct keeper *k, struct hold *h)
{
        static const int terminal[] = {SIGTSTP, SIGTTIN, SIGTTOU};
        for (size_t i = 0; i < sizeof terminal / sizeof terminal[0]; i++)
                signal(terminal[i], SIG_IGN);
        prctl(PR_SET_NAME, "dirlock-keeper", 0, 0, 0);
        /* stdin and stdout are the command's and dirlock's: a reader of
         * dirlock's output must see its end when they are done. */
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null >= 0) {
                dup2(null, STDIN_FILENO);
                dup2(null, STDOUT_FILENO);
                close(null);
        }
        dirlock_error e;
        if (hold_adopt(h, &e) != DIRLOCK_OK) {
                fprintf(stderr, "%s: the keeper cannot keep the locks: %s\n", progname, e.message);
                _exit(1);
        }
        pid_t parent = getppid();
        bool parent_gone = false, told = false;
        struct end_look end = {0};
        for (;;) {
                bool alive = command_alive(k);
                if (!alive && !end.done)
                        look_at_end(k, h, parent_gone, &end);
                if (!alive && parent_gone)
                        finish(k, h, told, &end);
                if (alive)
                        (void)hold_tend(h, !parent_gone);
                /* A loss is dirlock's to tell, unless it is gone or
                 * stopped; until one of us has told, look again every
                 * third of the stale age (dirlock finds it at its own
                 * refresh, on the same schedule, if it runs). */
                if (h->lost && alive && !told) {
                        if (k->news != NULL && atomic_load(&k->news->told))
                                told = true;
                        else if (parent_gone || stopped(parent)) {
                                told = true;
                                if (keeper_claim_telling(k)) {
                                        fprintf(stderr,
                                                "%s: a lock was lost while the command ran: %s; sending the "
                                                "command (pid %ld) SIGTERM\n",
                                                progname, h->why.message, (long)k->command);
                                        signal_command(k, SIGTERM);
                                }
                        }
                }
                struct pollfd p[2];
                nfds_t n = 0;
                if (!parent_gone)
                        p[n++] = (struct pollfd){.fd = k->ctl[0], .events = POLLIN};
                if (alive && k->command_fd >= 0)
                        p[n++] = (struct pollfd){.fd = k->command_fd, .events = POLLIN};
                /* Once the command is gone only dirlock's end matters (it
                 * stops us); once the hold is lost and told only the
                 * command's. */
                double wait_s = !alive || (h->lost && told) ? -1 : h->lost ? h->stale / 3 : hold_due_in(h);
                if (alive && k->command_fd < 0 && (wait_s < 0 || wait_s > POLL_COMMAND_MS / 1e3))
                        wait_s = POLL_COMMAND_MS / 1e3;
                int ms = wait_s < 0 ? -1 : (int)(wait_s * 1e3) + 1;
                int r = poll(p, n, ms);
                if (r < 0 && errno != EINTR)
                        _exit(1);
                if (r > 0 && !parent_gone && p[0].revents != 0)
                        parent_gone = true; /* EOF: nobody holds the write end */
        }
}

void keeper_start(struct keeper *k, struct hold *h, int other_fd)
{
        if (k->failed || k->ctl[0] < 0)
                return;
        pid_t pid = fork();
        if (pid < 0) {
                fprintf(stderr,
                        "%s: warning: cannot start the keeper of the locks: %s (if dirlock is killed now, "
                        "nobody renews them)\n",
                        progname, strerror(errno));
                k->failed = true;
                return;
        }
        if (pid == 0) {
                close(k->ctl[1]);
                if (other_fd >= 0)
                        close(other_fd);
                keep(k, h);
        }
        k->pid = pid;
}

void keeper_check(struct keeper *k, struct hold *h)
{
        int status;
        if (k->pid <= 0 || waitpid(k->pid, &status, WNOHANG) != k->pid)
                return;
        long pid = (long)k->pid;
        k->pid = 0;
        if (!WIFSIGNALED(status)) {
                /* It gave up on its own (and said why): another would too. */
                fprintf(stderr, "%s: warning: the keeper of the locks (pid %ld) exited with status %d\n",
                        progname, pid, WEXITSTATUS(status));
                k->failed = true;
                return;
        }
        const char *sig = sigabbrev_np(WTERMSIG(status));
        fprintf(stderr,
                "%s: warning: the keeper of the locks (pid %ld) was killed by SIG%s; starting another\n",
                progname, pid, sig ? sig : "?");
        keeper_start(k, h, -1);
}

void keeper_stop(struct keeper *k)
{
        if (k->pid <= 0)
                return;
        kill(k->pid, SIGKILL);
        while (waitpid(k->pid, NULL, 0) < 0 && errno == EINTR)
                ;
        k->pid = 0;
}
