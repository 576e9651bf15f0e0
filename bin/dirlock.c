/* dirlock.c - the dirlock command: take one or more named locks, run a
 * command, release (like util-linux flock(1)); plus `status`, `break` and
 * `cleanup` for looking after a lock directory from the shell.
 *
 *   dirlock [options] NAME [NAME...] -- COMMAND [ARGS...]
 *   dirlock status  [-d LOCKDIR] [--stale SECONDS] [NAME...]
 *   dirlock break   [-d LOCKDIR] [--stale SECONDS] [--force] NAME
 *   dirlock cleanup [-d LOCKDIR]
 *
 * COMMAND is forked first and waits on a pipe; the locks are then taken
 * with COMMAND as their partner (dirlock_options.partner_pid), and only
 * then does COMMAND run.  While it runs, dirlock stays its parent,
 * refreshes the locks every stale/3 seconds and passes on every signal it
 * can catch (all but SIGKILL, SIGSTOP, the job-control signals, which stop
 * and continue both, and the fault signals): the locks cannot end before
 * COMMAND does.  If dirlock itself is killed (SIGKILL, the OOM killer),
 * the owner records still name COMMAND: judges on this host keep the locks
 * held until it exits, as flock(1) does; judges on other hosts break them
 * after the stale age, since nobody refreshes them any more. */
#include "dirlock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *progname = "dirlock";

static void usage(FILE *to)
{
        fprintf(to,
                "Usage:\n"
                "  %s [options] NAME [NAME...] -- COMMAND [ARGS...]\n"
                "  %s status  [-d LOCKDIR] [--stale SECONDS] [NAME...]\n"
                "  %s break   [-d LOCKDIR] [--stale SECONDS] [--force] NAME\n"
                "  %s cleanup [-d LOCKDIR]\n"
                "\n"
                "Take all the named locks at once (all or none, in a deadlock-free order), run\n"
                "COMMAND, release them, and exit with COMMAND's status.\n"
                "\n"
                "Options:\n"
                "  -d, --dir LOCKDIR      lock directory (default $DIRLOCK_DIR, else ./locks)\n"
                "  -w, --timeout SECONDS  wait at most SECONDS (fractions allowed; default: forever)\n"
                "  -n, --nonblock         fail at once if a lock is held (same as -w 0)\n"
                "      --stale SECONDS    age after which an unrefreshed lock is stale (default 180)\n"
                "  -E, --conflict-exit-code CODE\n"
                "                         exit status when a lock cannot be had (default 1)\n"
                "  -x, --exclusive        exclusive lock (default)\n"
                "  -s, --shared           shared (read) lock\n"
                "      --intent           upgradable read lock (prewrite-read)\n"
                "      --policy POLICY    fair (default), writer, reader or simple\n"
                "      --fifo             serve exclusive waiters in arrival order\n"
                "  -q, --quiet            no message on conflict\n"
                "  -h, --help             this help\n"
                "  -V, --version          version\n",
                progname, progname, progname, progname);
}

static int parse_seconds(const char *s, double *out)
{
        char *end;
        errno = 0;
        double v = strtod(s, &end);
        if (errno != 0 || end == s || *end != '\0' || isnan(v) || v < 0 || v > 1e9)
                return -1;
        *out = v;
        return 0;
}

static const char *default_dir(void)
{
        const char *d = getenv("DIRLOCK_DIR");
        return d && *d ? d : "./locks";
}

/* ---- status, break, cleanup ------------------------------------------ */

static void print_status_line(const char *dir, const char *name, double stale)
{
        dirlock_owner o;
        dirlock_error e;
        int rc = dirlock_inspect(dir, name, stale, &o, &e);
        if (rc == DIRLOCK_ENOLOCK) {
                printf("%-24s free\n", name);
                return;
        }
        if (rc != DIRLOCK_OK) {
                printf("%-24s error: %s\n", name, e.message);
                return;
        }
        static const char *const modes[] = {"exclusive", "shared", "intent"};
        if (o.pid == 0 && o.mode == DIRLOCK_SHARED) {
                printf("%-24s shared readers=%u\n", name, o.readers);
                return;
        }
        if (o.pid == 0) {
                printf("%-24s held, no readable owner record (break --force to clear)\n", name);
                return;
        }
        const char *alive = o.owner_alive == 1 ? "alive" : o.owner_alive == 0 ? "dead" : "unknown";
        printf("%-24s pid=%ld host=%s age=%.1fs mode=%s owner=%s %s", name, (long)o.pid, o.host, o.age,
               o.mode >= 0 && o.mode <= 2 ? modes[o.mode] : "?", alive, o.stale ? "STALE" : "fresh");
        if (o.partner)
                printf(" command=%ld", (long)o.partner);
        if (o.readers)
                printf(" readers=%u", o.readers);
        printf("\n");
}

static int cmd_status(int argc, char **argv, const char *dir, double stale)
{
        if (argc > 0) {
                int bad = 0;
                for (int i = 0; i < argc; i++) {
                        if (!dirlock_name_valid(argv[i])) {
                                fprintf(stderr, "%s: invalid lock name '%s'\n", progname, argv[i]);
                                bad = 1;
                                continue;
                        }
                        print_status_line(dir, argv[i], stale);
                }
                return bad ? 2 : 0;
        }
        DIR *d = opendir(dir);
        if (d == NULL) {
                fprintf(stderr, "%s: cannot read lock directory '%s': %s\n", progname, dir, strerror(errno));
                return 2;
        }
        /* Every NAME.lock (exclusive side) and NAME.readers (shared side),
         * once each. */
        char **names = NULL;
        size_t n = 0, cap = 0;
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
                if (de->d_name[0] == '.')
                        continue;
                size_t len = strlen(de->d_name);
                size_t base;
                if (len > 5 && strcmp(de->d_name + len - 5, ".lock") == 0)
                        base = len - 5;
                else if (len > 8 && strcmp(de->d_name + len - 8, ".readers") == 0)
                        base = len - 8;
                else
                        continue;
                char name[DIRLOCK_NAME_MAX + 1];
                if (base == 0 || base > DIRLOCK_NAME_MAX)
                        continue;
                memcpy(name, de->d_name, base);
                name[base] = '\0';
                if (!dirlock_name_valid(name))
                        continue;
                bool seen = false;
                for (size_t i = 0; i < n && !seen; i++)
                        seen = strcmp(names[i], name) == 0;
                if (seen)
                        continue;
                if (n == cap) {
                        cap = cap ? cap * 2 : 16;
                        char **grown = realloc(names, cap * sizeof *names);
                        if (grown == NULL)
                                break;
                        names = grown;
                }
                names[n] = strdup(name);
                if (names[n] != NULL)
                        n++;
        }
        closedir(d);
        for (size_t i = 0; i < n; i++) {
                print_status_line(dir, names[i], stale);
                free(names[i]);
        }
        free(names);
        return 0;
}

static int cmd_break(int argc, char **argv, const char *dir, double stale, int force)
{
        if (argc != 1) {
                fprintf(stderr, "%s: break takes exactly one lock name\n", progname);
                return 2;
        }
        dirlock_error e;
        int rc = dirlock_break(dir, argv[0], stale, force, &e);
        if (rc == DIRLOCK_OK) {
                printf("%s: broken\n", argv[0]);
                return 0;
        }
        fprintf(stderr, "%s: %s\n", progname, e.message);
        return rc == DIRLOCK_ELIVE ? 1 : 2;
}

static int cmd_cleanup(const char *dir)
{
        dirlock_error e;
        if (dirlock_cleanup(dir, &e) != DIRLOCK_OK) {
                fprintf(stderr, "%s: %s\n", progname, e.message);
                return 2;
        }
        return 0;
}

/* ---- running a command under the locks ------------------------------- */

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
        int go_fd; /* write end: one byte lets it run; closing kills it */
};

/* Fork COMMAND; it waits for one byte on a pipe before it execs, and exits
 * without running when the pipe closes first (the locks were not had, or
 * dirlock died).  The signal mask is restored in the child. */
static int fork_command(char **command, const sigset_t *old_mask, struct pending_command *pc)
{
        int p[2];
        if (pipe2(p, O_CLOEXEC) != 0)
                return -1;
        pid_t child = fork();
        if (child < 0) {
                close(p[0]);
                close(p[1]);
                return -1;
        }
        if (child == 0) {
                close(p[1]);
                sigprocmask(SIG_SETMASK, old_mask, NULL);
                char go;
                ssize_t n;
                while ((n = read(p[0], &go, 1)) < 0 && errno == EINTR)
                        ;
                if (n != 1)
                        _exit(125); /* no locks: never run */
                close(p[0]);
                execvp(command[0], command);
                int e = errno;
                fprintf(stderr, "%s: cannot run '%s': %s\n", progname, command[0], strerror(e));
                _exit(e == ENOENT ? 127 : 126);
        }
        close(p[0]);
        pc->pid = child;
        pc->go_fd = p[1];
        return 0;
}

static void abandon_command(struct pending_command *pc)
{
        close(pc->go_fd);
        while (waitpid(pc->pid, NULL, 0) < 0 && errno == EINTR)
                ;
}

/* Let the command run and wait for it.  SIGCHLD and the forwarded signals
 * are blocked and taken with sigtimedwait(): the command's exit is seen
 * at once, a signal is passed on at once, and between them the locks are
 * refreshed every stale/3 seconds.  No handler runs, so nothing races. */
static int run_locked(struct pending_command *pc, const sigset_t *wait_for, const sigset_t *old,
                      dirlock_set *set, double stale, int lost_code)
{
        pid_t child = pc->pid;
        if (write(pc->go_fd, "g", 1) != 1) {
                fprintf(stderr, "%s: cannot start the command: %s\n", progname, strerror(errno));
                abandon_command(pc);
                dirlock_release_many(set, NULL);
                return 126;
        }
        close(pc->go_fd);
        double refresh_every = stale / 3.0;
        struct timespec last;
        clock_gettime(CLOCK_MONOTONIC, &last);
        bool lost = false;
        int status = 0;
        for (;;) {
                pid_t r = waitpid(child, &status, WNOHANG);
                if (r == child)
                        break;
                if (r < 0 && errno != EINTR) {
                        status = 126 << 8;
                        break;
                }
                struct timespec now;
                clock_gettime(CLOCK_MONOTONIC, &now);
                double since =
                    (double)(now.tv_sec - last.tv_sec) + (double)(now.tv_nsec - last.tv_nsec) / 1e9;
                if (since >= refresh_every) {
                        dirlock_error e;
                        int rc = dirlock_refresh_many(set, &e);
                        if (rc != DIRLOCK_OK && !lost)
                                fprintf(stderr, "%s: warning: %s\n", progname, e.message);
                        lost = lost || rc == DIRLOCK_ELOST;
                        last = now;
                        since = 0;
                }
                double nap = refresh_every - since;
                struct timespec ts = {(time_t)nap, (long)((nap - (double)(time_t)nap) * 1e9)};
                int sig = sigtimedwait(wait_for, NULL, &ts);
                if (sig > 0 && sig != SIGCHLD)
                        kill(child, sig);
        }
        sigprocmask(SIG_SETMASK, old, NULL);
        dirlock_error e;
        int rc = dirlock_release_many(set, &e);
        if (rc != DIRLOCK_OK && !lost)
                fprintf(stderr, "%s: warning: %s\n", progname, e.message);
        if (lost || rc == DIRLOCK_ELOST) {
                /* The command ran partly unprotected: say so in the status. */
                fprintf(stderr, "%s: a lock was broken as stale while the command ran\n", progname);
                return lost_code;
        }
        if (WIFEXITED(status))
                return WEXITSTATUS(status);
        if (WIFSIGNALED(status))
                return 128 + WTERMSIG(status);
        return 126;
}

enum { OPT_STALE = 256, OPT_INTENT, OPT_POLICY, OPT_FIFO, OPT_FORCE };

int main(int argc, char **argv)
{
        const char *dir = default_dir();
        double timeout = -1, stale = DIRLOCK_DEFAULT_STALE_AGE;
        int conflict_code = 1, quiet = 0, force = 0;
        dirlock_options opts;
        dirlock_options_init(&opts);

        static const struct option longopts[] = {
            {"dir", required_argument, NULL, 'd'},
            {"timeout", required_argument, NULL, 'w'},
            {"wait", required_argument, NULL, 'w'},
            {"nonblock", no_argument, NULL, 'n'},
            {"nb", no_argument, NULL, 'n'},
            {"stale", required_argument, NULL, OPT_STALE},
            {"conflict-exit-code", required_argument, NULL, 'E'},
            {"exclusive", no_argument, NULL, 'x'},
            {"shared", no_argument, NULL, 's'},
            {"intent", no_argument, NULL, OPT_INTENT},
            {"policy", required_argument, NULL, OPT_POLICY},
            {"fifo", no_argument, NULL, OPT_FIFO},
            {"force", no_argument, NULL, OPT_FORCE},
            {"quiet", no_argument, NULL, 'q'},
            {"help", no_argument, NULL, 'h'},
            {"version", no_argument, NULL, 'V'},
            {NULL, 0, NULL, 0},
        };
        int c;
        /* '+': stop at the first non-option, so COMMAND's options stay its own. */
        while ((c = getopt_long(argc, argv, "+d:w:nE:xsqhV", longopts, NULL)) != -1) {
                switch (c) {
                case 'd':
                        dir = optarg;
                        break;
                case 'w':
                        if (parse_seconds(optarg, &timeout) != 0) {
                                fprintf(stderr, "%s: invalid timeout '%s'\n", progname, optarg);
                                return 2;
                        }
                        break;
                case 'n':
                        timeout = 0;
                        break;
                case OPT_STALE:
                        if (parse_seconds(optarg, &stale) != 0 || stale <= 0) {
                                fprintf(stderr, "%s: invalid stale age '%s'\n", progname, optarg);
                                return 2;
                        }
                        break;
                case 'E': {
                        char *end;
                        long v = strtol(optarg, &end, 10);
                        if (*optarg == '\0' || *end != '\0' || v < 0 || v > 255) {
                                fprintf(stderr, "%s: invalid exit code '%s'\n", progname, optarg);
                                return 2;
                        }
                        conflict_code = (int)v;
                        break;
                }
                case 'x':
                        opts.mode = DIRLOCK_EXCLUSIVE;
                        break;
                case 's':
                        opts.mode = DIRLOCK_SHARED;
                        break;
                case OPT_INTENT:
                        opts.mode = DIRLOCK_INTENT;
                        break;
                case OPT_POLICY:
                        if (strcmp(optarg, "fair") == 0)
                                opts.policy = DIRLOCK_POLICY_FAIR;
                        else if (strcmp(optarg, "writer") == 0)
                                opts.policy = DIRLOCK_POLICY_WRITER;
                        else if (strcmp(optarg, "reader") == 0)
                                opts.policy = DIRLOCK_POLICY_READER;
                        else if (strcmp(optarg, "simple") == 0)
                                opts.policy = DIRLOCK_POLICY_SIMPLE;
                        else {
                                fprintf(stderr, "%s: unknown policy '%s' (fair, writer, reader, simple)\n",
                                        progname, optarg);
                                return 2;
                        }
                        break;
                case OPT_FIFO:
                        opts.flags |= DIRLOCK_FIFO;
                        break;
                case OPT_FORCE:
                        force = 1;
                        break;
                case 'q':
                        quiet = 1;
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                case 'V':
                        printf("dirlock %s\n", DIRLOCK_VERSION);
                        return 0;
                default:
                        usage(stderr);
                        return 2;
                }
        }
        argc -= optind;
        argv += optind;
        if (argc == 0) {
                usage(stderr);
                return 2;
        }

        /* Subcommands take their own options after the word. */
        if (strcmp(argv[0], "status") == 0 || strcmp(argv[0], "break") == 0 ||
            strcmp(argv[0], "cleanup") == 0) {
                const char *sub = argv[0];
                bool is_cleanup = strcmp(sub, "cleanup") == 0, is_break = strcmp(sub, "break") == 0;
                static const struct option subopts[] = {
                    {"dir", required_argument, NULL, 'd'},
                    {"stale", required_argument, NULL, OPT_STALE},
                    {"force", no_argument, NULL, OPT_FORCE},
                    {NULL, 0, NULL, 0},
                };
                optind = 0; /* 0, not 1: glibc then starts a fresh scan */
                opterr = 0;
                while ((c = getopt_long(argc, argv, "d:", subopts, NULL)) != -1) {
                        if (c == 'd') {
                                dir = optarg;
                        } else if (c == OPT_STALE && !is_cleanup) {
                                if (parse_seconds(optarg, &stale) != 0 || stale <= 0) {
                                        fprintf(stderr, "%s: invalid stale age '%s'\n", progname, optarg);
                                        return 2;
                                }
                        } else if (c == OPT_FORCE && is_break) {
                                force = 1;
                        } else {
                                const char *what = c == OPT_STALE   ? "--stale"
                                                   : c == OPT_FORCE ? "--force"
                                                                    : argv[optind - 1];
                                fprintf(stderr, "%s %s: option '%s' is not valid here (see %s --help)\n",
                                        progname, sub, what, progname);
                                return 2;
                        }
                }
                if (is_cleanup && optind < argc) {
                        fprintf(stderr, "%s cleanup: takes no lock names\n", progname);
                        return 2;
                }
                if (strcmp(sub, "status") == 0)
                        return cmd_status(argc - optind, argv + optind, dir, stale);
                if (is_break)
                        return cmd_break(argc - optind, argv + optind, dir, stale, force);
                return cmd_cleanup(dir);
        }

        int sep = -1;
        for (int i = 0; i < argc; i++)
                if (strcmp(argv[i], "--") == 0) {
                        sep = i;
                        break;
                }
        if (sep <= 0 || sep == argc - 1) {
                fprintf(stderr, "%s: expected NAME [NAME...] -- COMMAND [ARGS...]\n", progname);
                return 2;
        }
        if (opts.mode != DIRLOCK_EXCLUSIVE && sep > 1) {
                fprintf(stderr, "%s: shared and intent locks take one name\n", progname);
                return 2;
        }
        opts.timeout = timeout;
        opts.stale_age = stale;

        /* From here on every signal to pass on waits for sigtimedwait(). */
        signal(SIGCHLD, SIG_DFL); /* an inherited SIG_IGN would reap the child for us */
        sigset_t wait_for, old;
        forwarded_signals(&wait_for);
        sigaddset(&wait_for, SIGCHLD);
        sigprocmask(SIG_BLOCK, &wait_for, &old);
        struct pending_command pc;
        if (fork_command(argv + sep + 1, &old, &pc) != 0) {
                fprintf(stderr, "%s: cannot fork: %s\n", progname, strerror(errno));
                return 126;
        }
        opts.partner_pid = pc.pid;
        dirlock_set *set;
        dirlock_error e;
        int rc = dirlock_acquire_many(dir, (const char *const *)argv, (size_t)sep, &opts, &set, &e);
        if (rc != DIRLOCK_OK) {
                abandon_command(&pc);
                bool conflict = rc == DIRLOCK_EBUSY || rc == DIRLOCK_ETIMEDOUT;
                if (!conflict || !quiet)
                        fprintf(stderr, "%s: %s\n", progname, e.message);
                return conflict ? conflict_code : 2;
        }
        return run_locked(&pc, &wait_for, &old, set, stale, conflict_code);
}
