/* run.c - the lock-and-run mode of the dirlock command (run.h): take the
 * named locks, run COMMAND under them, release them.
 *
 * COMMAND is forked first and waits on a pipe; the locks are then taken
 * with COMMAND as their partner (dirlock_options.partner_pid), and only
 * then does COMMAND run.  While it runs, dirlock stays its parent,
 * refreshes the locks every stale/3 seconds (hold.c) and passes on every
 * signal it can catch (all but SIGKILL, SIGSTOP, the job-control signals,
 * which stop and continue both, and the fault signals): the locks cannot
 * end before COMMAND does.  Its keeper (keeper.c), forked right before
 * COMMAND is let run, refreshes them too, and goes on doing so if dirlock
 * is killed or stopped, until COMMAND exits: the locks are COMMAND's for
 * as long as it lives, as with flock(1).
 *
 * LOST.  If the locks are found lost while COMMAND runs (broken, expired,
 * gone from their server, or not refreshed for a whole stale age: hold.h),
 * dirlock says so at once and sends COMMAND SIGTERM: it no longer runs
 * alone, and must not go on as if it did.  dirlock then exits with the
 * conflict code once COMMAND has ended.
 *
 * SIGNALS.  The signals to pass on are blocked from the start, so none
 * is lost and no handler races with anything.  Until COMMAND is let run,
 * those that would end a process (ending_signals) make a signalfd
 * readable, which is the library's cancel descriptor: the wait ends at
 * once, nothing is held, COMMAND never runs, and dirlock ends as killed
 * by the signal.  The go message divides the two: a signal that came
 * before it -- also one that came while the library's last try took the
 * locks -- is read from the signalfd right before it, and ends dirlock
 * the same way, releasing the locks; one that comes after it stays
 * pending, and run_locked passes it on to COMMAND, which by then is let
 * run.  Nothing is lost in between, and no lock outlives COMMAND. */
#include "run.h"
#include "dirlock_fence.h"
#include "dirlock_permit.h"
#include "dirlock_range.h"
#include "hold.h"
#include "keeper.h"
#include "say.h"
#include "test_hooks.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *progname = DIRLOCK_COMMAND_NAME;

/* Signals dirlock passes on to COMMAND: every one it can catch except
 * SIGCHLD (its own), the job-control signals (a terminal's ^Z stops both,
 * and the shell's SIGCONT continues both, as with flock(1)) and the
 * signals the kernel sends for a fault of dirlock itself. */
static void forwarded_signals(sigset_t *set)
{
        static const int kept[] = {SIGKILL, SIGSTOP, SIGCHLD, SIGTSTP, SIGTTIN, SIGTTOU, SIGCONT,
                                   SIGSEGV, SIGBUS,  SIGFPE,  SIGILL,  SIGTRAP, SIGSYS};
        sigfillset(set);
        for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
                sigdelset(set, kept[i]);
}

/* The command, forked but held back until the locks are taken. */
struct pending_command {
        pid_t pid;
        int go_fd;   /* write end: the go message lets it run; closing first kills it */
        bool reaped; /* it died before it ran, and was waited for: */
        int status;  /* its wait status */
};

/* Fork COMMAND; it waits for the go message on a pipe before it execs, and
 * exits without running when the pipe closes first (the locks were not
 * had, or dirlock died).  The go message is "g" and then NAME=VALUE lines
 * to put in its environment (the fences).  The signal mask is restored in
 * the child. */
static int fork_command(char **command, const sigset_t *old_mask, struct pending_command *pc)
{
        int p[2];
        if (pipe2(p, O_CLOEXEC) != 0) {
                say("%s: cannot make the pipe that lets the command run: %s", progname, strerror(errno));
                return -1;
        }
        pid_t child = fork();
        if (child < 0) {
                say("%s: cannot fork: %s", progname, strerror(errno));
                close(p[0]);
                close(p[1]);
                return -1;
        }
        if (child == 0) {
                close(p[1]);
                sigprocmask(SIG_SETMASK, old_mask, NULL);
                char msg[8192];
                size_t got = 0;
                ssize_t n;
                while (got < sizeof msg - 1 &&
                       ((n = read(p[0], msg + got, sizeof msg - 1 - got)) > 0 || (n < 0 && errno == EINTR)))
                        got += n > 0 ? (size_t)n : 0;
                if (got == 0 || msg[0] != 'g')
                        _exit(125); /* no locks: never run */
                close(p[0]);
                msg[got] = '\0';
                for (char *line = strtok(msg + 1, "\n"); line != NULL; line = strtok(NULL, "\n"))
                        putenv(line);
                execvp(command[0], command);
                int e = errno;
                say("%s: cannot run '%s': %s", progname, command[0], strerror(e));
                _exit(e == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN);
        }
        close(p[0]);
        pc->pid = child;
        pc->go_fd = p[1];
        pc->reaped = false;
        pc->status = 0;
        return 0;
}

/* Never let it run: it exits at the closed pipe; wait for it. */
static void abandon_command(struct pending_command *pc)
{
        close(pc->go_fd);
        while (!pc->reaped && waitpid(pc->pid, &pc->status, 0) < 0 && errno == EINTR)
                ;
        pc->reaped = true;
}

/* The status for a command that died before it could run (a signal sent
 * to it alone, or to it and dirlock but seen for it first), saying so. */
static int died_before_running(const struct pending_command *pc)
{
        if (WIFSIGNALED(pc->status)) {
                int sig = WTERMSIG(pc->status);
                const char *name = sigabbrev_np(sig);
                fprintf(stderr, "%s: the command was killed by %s%s before it could run; no lock is held\n",
                        progname, name ? "SIG" : "signal ", name ? name : "?");
                return EXIT_SIGNAL + sig;
        }
        fprintf(stderr, "%s: the command ended before it could run; no lock is held\n", progname);
        return EXIT_CANNOT_RUN;
}

/* ---- signals before the command runs ------------------------------------ */

/* The signals that end dirlock while it waits for its locks (the wait is
 * canceled through the library's cancel descriptor, a signalfd readable
 * while one of them is pending): the forwarded ones whose default action
 * ends a process -- unless dirlock was started with one ignored, as nohup
 * ignores SIGHUP and a shell SIGINT and SIGQUIT for a background job:
 * whoever started it meant it to outlive those -- and SIGCHLD, for a
 * command that dies before it runs.  SIGURG and SIGWINCH, ignored by
 * default, stay pending and are passed on once the command runs. */
static void ending_signals(const sigset_t *forwarded, sigset_t *set)
{
        sigemptyset(set);
        for (int sig = 1; sig < NSIG; sig++) {
                struct sigaction sa;
                if (sigismember(forwarded, sig) != 1 || sig == SIGURG || sig == SIGWINCH ||
                    sigaction(sig, NULL, &sa) != 0 || sa.sa_handler == SIG_IGN)
                        continue;
                sigaddset(set, sig);
        }
        sigaddset(set, SIGCHLD);
}

/* What the signals pending on `sfd` say, taking them: the first that ends
 * dirlock (its number); else -1 when the pending command has died (it is
 * reaped: pc->status); else 0 -- nothing, or the SIGCHLD of a command
 * stopped or continued with dirlock (^Z, fg). */
static int signals_taken(int sfd, struct pending_command *pc)
{
        int ending = 0;
        bool child = false;
        struct signalfd_siginfo si;
        while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
                if (si.ssi_signo == SIGCHLD)
                        child = true;
                else if (ending == 0)
                        ending = (int)si.ssi_signo;
        }
        if (ending != 0)
                return ending;
        if (child && waitpid(pc->pid, &pc->status, WNOHANG) == pc->pid) {
                pc->reaped = true;
                return -1;
        }
        return 0;
}

/* The end of a dirlock that signal `sig` stopped before its command ran:
 * nothing is held, nothing ran.  It dies of the signal, as it would have
 * with nothing to clean up first, so that a shell sees it killed (and a
 * loop that got ^C stops); a signal whose default action would dump core
 * ends it with the status a shell gives that death, 128 + N, and no core
 * file of a dirlock that did nothing wrong. */
static int end_by_signal(int sig, bool quiet)
{
        const char *name = sigabbrev_np(sig);
        if (!quiet)
                fprintf(stderr, "%s: %s%s while waiting for the locks: the command was not run\n", progname,
                        name ? "SIG" : "signal ", name ? name : "?");
        static const int dumps_core[] = {SIGQUIT, SIGABRT, SIGXCPU, SIGXFSZ};
        bool core = false;
        for (size_t i = 0; i < sizeof dumps_core / sizeof dumps_core[0]; i++)
                core = core || sig == dumps_core[i];
        if (!core) {
                sigset_t one;
                sigemptyset(&one);
                sigaddset(&one, sig);
                signal(sig, SIG_DFL);
                raise(sig);
                sigprocmask(SIG_UNBLOCK, &one, NULL); /* dies here */
        }
        return EXIT_SIGNAL + sig;
}

/* The lock server has not answered the wait for a while, or answers
 * again (dirlock_options.server_notice): said on stderr, so that a wait
 * without end on a server that is down, or misspelt, is never silent.
 * The wait goes on. */
static void server_notice(int answering, const char *message, void *arg)
{
        (void)arg;
        if (answering)
                fprintf(stderr, "%s: %s\n", progname, message);
        else
                fprintf(stderr, "%s: no answer from the lock server for %g s or more (%s); still trying\n",
                        progname, DIRLOCK_SERVER_NOTICE_MS / 1e3, message);
}

/* Take the locks, watching `sfd` (ending_signals) through the library's
 * cancel descriptor: a wait ends at once when a signal that ends dirlock
 * comes (*ended = its number) or the pending command dies (*ended = -1),
 * holding nothing.  A SIGCHLD of a command stopped or continued only
 * starts the wait again, for the time left. */
static int take_locks(struct run_request *rq, int sfd, struct pending_command *pc, dirlock_set **set,
                      dirlock **one, int *ended, dirlock_error *e)
{
        struct timespec start, now;
        clock_gettime(CLOCK_MONOTONIC, &start);
        double timeout = rq->opts.timeout;
        rq->opts.flags |= DIRLOCK_CANCEL_FD | DIRLOCK_SERVER_NOTICE;
        rq->opts.cancel_fd = sfd;
        rq->opts.server_notice = server_notice;
        *ended = 0;
        for (;;) {
                if (timeout > 0) {
                        clock_gettime(CLOCK_MONOTONIC, &now);
                        double left = timeout - ((double)(now.tv_sec - start.tv_sec) +
                                                 (double)(now.tv_nsec - start.tv_nsec) / 1e9);
                        rq->opts.timeout = left > 0 ? left : 0;
                }
                int rc = rq->ranged ? dirlock_acquire_range(rq->space, rq->names[0], rq->lo, rq->hi,
                                                            &rq->opts, one, e)
                         : rq->permits > 0
                             ? dirlock_acquire_permit(rq->space, rq->names[0], rq->permits, &rq->opts, one, e)
                             : dirlock_acquire_many(rq->space, (const char *const *)rq->names, rq->count,
                                                    &rq->opts, set, e);
                if (rc != DIRLOCK_ECANCELED)
                        return rc;
                *ended = signals_taken(sfd, pc);
                if (*ended != 0)
                        return rc;
        }
}

/* go_message's answer when the fences do not fit the message (no
 * dirlock code is negative). */
#define GO_TOO_BIG (-1)

/* The go message: "g", then DIRLOCK_FENCE (the first lock's fence, in name
 * order) and DIRLOCK_FENCES ("NAME=FENCE ..." for every lock), when the
 * space has fences.  DIRLOCK_OK; GO_TOO_BIG when it does not fit; or the
 * error of a fence that could not be drawn (out of memory included), in
 * *e, with the lock it was for in *which: a command whose store compares
 * fences must not run without one, so it does not run at all. */
static int go_message(const struct hold *hl, char *buf, size_t size, const char **which, dirlock_error *e)
{
        int n = snprintf(buf, size, "g");
        char fences[4096] = "";
        size_t used = 0;
        unsigned long long first = 0;
        for (size_t i = 0; i < hold_count(hl); i++) {
                dirlock *h = hold_lock(hl, i);
                unsigned long long f;
                if (dirlock_fence(h, &f, e) != DIRLOCK_OK) {
                        if (e->code == DIRLOCK_EINVAL) /* this space has no fences */
                                return n < (int)size ? DIRLOCK_OK : GO_TOO_BIG;
                        *which = dirlock_name(h);
                        return e->code;
                }
                if (i == 0)
                        first = f;
                int k = snprintf(fences + used, sizeof fences - used, "%s%s=%llu", i ? " " : "",
                                 dirlock_name(h), f);
                if (k < 0 || (size_t)k >= sizeof fences - used)
                        return GO_TOO_BIG;
                used += (size_t)k;
        }
        n += snprintf(buf + n, size - (size_t)n, "\nDIRLOCK_FENCE=%llu\nDIRLOCK_FENCES=%s\n", first, fences);
        return n > 0 && (size_t)n < size ? DIRLOCK_OK : GO_TOO_BIG;
}

/* The locks were found lost while the command runs: say so, and stop
 * the command (LOST at the top of this file) -- unless the keeper did,
 * while dirlock was stopped. */
static void lost_while_running(const struct hold *hl, struct keeper *k, pid_t child)
{
        if (!keeper_claim_telling(k))
                return;
        fprintf(stderr,
                "%s: a lock was lost while the command ran: %s; sending the command (pid %ld) SIGTERM\n",
                progname, hl->why.message, (long)child);
        kill(child, SIGTERM);
}

/* The command has ended with `status` and its keeper is stopped: release
 * the locks, and the exit status to end with -- the command's, or
 * `lost_code` when a lock was lost while it ran. */
static int released(struct hold *hl, struct keeper *keeper, int status, int lost_code)
{
        dirlock_error e;
        bool lost_before = hl->lost;
        int rc = hold_release(hl, &e);
        if (rc != DIRLOCK_OK && rc != DIRLOCK_ELOST)
                fprintf(stderr, "%s: warning: %s\n", progname, e.message);
        bool lost_at_release = hl->lost && !lost_before;
        bool after_end = lost_at_release && keeper_held_at_end(keeper);
        bool tell = lost_at_release && !after_end && keeper_claim_telling(keeper);
        keeper_close(keeper);
        if (after_end)
                /* Held when the command ended (its keeper looked), lost
                 * since, while dirlock did not run (stopped past the
                 * stale age): the command ran under its locks. */
                fprintf(stderr,
                        "%s: warning: the locks were held when the command ended, and lost after, while "
                        "dirlock did not run: %s\n",
                        progname, hl->why.message);
        else if (hl->lost) {
                /* The command ran partly unprotected: say so (once: dirlock
                 * or its keeper), and why (broken as stale, gone from a
                 * lock server, not refreshed), in the status too. */
                if (tell)
                        fprintf(stderr, "%s: a lock was lost while the command ran: %s\n", progname,
                                hl->why.message);
                return lost_code;
        }
        if (WIFEXITED(status))
                return WEXITSTATUS(status);
        if (WIFSIGNALED(status))
                return EXIT_SIGNAL + WTERMSIG(status);
        return EXIT_CANNOT_RUN;
}

/* Let the command run and wait for it.  SIGCHLD and the forwarded signals
 * are blocked and taken with sigtimedwait(): the command's exit is seen
 * at once, a signal is passed on at once, and between them the locks are
 * refreshed every stale/3 seconds.  No handler runs, so nothing races. */
static int run_locked(struct pending_command *pc, const sigset_t *wait_for, const sigset_t *old,
                      struct hold *hl, int lost_code)
{
        pid_t child = pc->pid;
        char go[8192];
        const char *which = "?";
        dirlock_error e;
        int rc = go_message(hl, go, sizeof go, &which, &e);
        if (rc != DIRLOCK_OK && rc != GO_TOO_BIG) {
                fprintf(stderr, "%s: no fence for lock '%s', so the command was not run: %s\n", progname,
                        which, e.message);
                abandon_command(pc);
                hold_release(hl, NULL);
                return EXIT_NO_FENCE;
        }
        struct keeper keeper;
        if (rc == DIRLOCK_OK && keeper_init(&keeper, child) != 0) {
                fprintf(stderr, "%s: cannot start the keeper of the locks: %s\n", progname, strerror(errno));
                rc = DIRLOCK_EIO;
        }
        if (rc == DIRLOCK_OK)
                keeper_start(&keeper, hl, pc->go_fd);
        if (rc != DIRLOCK_OK || write(pc->go_fd, go, strlen(go)) != (ssize_t)strlen(go)) {
                int why = errno;
                if (rc == DIRLOCK_OK) { /* started: the fences fitted and the keeper began */
                        keeper_stop(&keeper);
                        keeper_close(&keeper);
                }
                hold_release(hl, NULL);
                abandon_command(pc);
                if (rc == DIRLOCK_OK && why == EPIPE) /* it died in the moment since the last look */
                        return died_before_running(pc);
                if (rc != DIRLOCK_EIO)
                        fprintf(stderr, "%s: cannot start the command: %s\n", progname,
                                rc != DIRLOCK_OK ? "its locks' fences do not fit its environment"
                                                 : strerror(why));
                return EXIT_CANNOT_RUN;
        }
        close(pc->go_fd);
        const char *stop_at = dl_test_hook(STOP_AT); /* test builds: right after the go */
        if (stop_at != NULL && strcmp(stop_at, "started") == 0)
                raise(SIGSTOP);
        int status = 0;
        for (;;) {
                pid_t r = waitpid(child, &status, WNOHANG);
                if (r == child)
                        break;
                if (r < 0 && errno != EINTR) {
                        status = EXIT_CANNOT_RUN << 8;
                        break;
                }
                keeper_check(&keeper, hl);
                if (hold_tend(hl, false))
                        lost_while_running(hl, &keeper, child);
                double nap = hl->lost ? 3600 : hold_due_in(hl);
                struct timespec ts = {(time_t)nap, (long)((nap - (double)(time_t)nap) * 1e9)};
                int sig = sigtimedwait(wait_for, NULL, &ts);
                if (sig > 0 && sig != SIGCHLD)
                        kill(child, sig);
        }
        /* The keeper first: it must not refresh what is released next. */
        keeper_stop(&keeper);
        sigprocmask(SIG_SETMASK, old, NULL);
        return released(hl, &keeper, status, lost_code);
}

int run_under_locks(struct run_request *rq)
{
        /* From here on every signal to pass on waits for sigtimedwait(), or,
         * before the command runs, ends the wait through a signalfd. */
        signal(SIGCHLD, SIG_DFL); /* an inherited SIG_IGN would reap the child for us */
        sigset_t wait_for, old, ending;
        forwarded_signals(&wait_for);
        ending_signals(&wait_for, &ending);
        sigaddset(&wait_for, SIGCHLD);
        sigprocmask(SIG_BLOCK, &wait_for, &old);
        struct pending_command pc;
        if (fork_command(rq->command, &old, &pc) != 0)
                return EXIT_CANNOT_RUN; /* said */
        int sfd = signalfd(-1, &ending, SFD_CLOEXEC | SFD_NONBLOCK);
        if (sfd < 0) {
                fprintf(stderr, "%s: cannot watch for signals: %s\n", progname, strerror(errno));
                abandon_command(&pc);
                return EXIT_ERROR;
        }
        rq->opts.partner_pid = pc.pid;
        dirlock_set *set = NULL;
        dirlock *one = NULL;
        dirlock_error e;
        int ended;
        int rc = take_locks(rq, sfd, &pc, &set, &one, &ended, &e);
        struct hold hl;
        hold_init(&hl, set, one, rq->opts.stale_age);
        /* Test builds: between taking the locks and the look at the
         * signals that came meanwhile. */
        const char *stop_at = dl_test_hook(STOP_AT);
        if (rc == DIRLOCK_OK && stop_at != NULL && strcmp(stop_at, "taken") == 0)
                raise(SIGSTOP);
        /* A signal that came while the locks were being taken -- the
         * library's last try after a cancel may have got them -- ends
         * dirlock as one during the wait does: the command never starts.
         * From the next line on, a signal waits for the command, which
         * gets it the moment it is let run (run_locked). */
        if (rc == DIRLOCK_OK && ended == 0)
                ended = signals_taken(sfd, &pc);
        close(sfd);
        if (ended != 0) {
                if (rc == DIRLOCK_OK)
                        hold_release(&hl, NULL);
                abandon_command(&pc);
                return ended > 0 ? end_by_signal(ended, rq->quiet) : died_before_running(&pc);
        }
        if (rc != DIRLOCK_OK) {
                abandon_command(&pc);
                bool conflict = rc == DIRLOCK_EBUSY || rc == DIRLOCK_ETIMEDOUT;
                if (!conflict || !rq->quiet)
                        fprintf(stderr, "%s: %s\n", progname, e.message);
                return conflict ? rq->conflict_code : rc == DIRLOCK_EDEADLK ? EXIT_DEADLOCK : EXIT_ERROR;
        }
        return run_locked(&pc, &wait_for, &old, &hl, rq->conflict_code);
}
