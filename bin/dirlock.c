/* dirlock.c - the dirlock command: take one or more named locks, run a
 * command, release (like util-linux flock(1)); plus `status`, `break` and
 * `cleanup` for looking after a lock directory from the shell.
 *
 *   dirlock [options] NAME [NAME...] -- COMMAND [ARGS...]
 *   dirlock [options] NAME [NAME...] -c COMMAND-LINE   (run by /bin/sh -c)
 *   dirlock status  [-d SPACE] [--stale SECONDS] [--json] [NAME...]
 *   dirlock break   [-d SPACE] [--stale SECONDS] [--force] NAME
 *   dirlock cleanup [-d SPACE]
 *
 * SPACE is a lock directory, flock:DIR, or a Redis server
 * (redis://HOST[:PORT][/DB][?prefix=P], redis+unix:///SOCKET[?db=N&prefix=P]);
 * everything below works the same in each (lib/backend.h).
 *
 * Here: the options, the subcommands, and the checks of the lock-and-run
 * mode's arguments (a usage mistake is one line and "Try 'dirlock
 * --help'", as flock(1) says it); taking the locks and running COMMAND
 * under them is run.c's. */
#include "dirlock.h"
#include "dirlock_permit.h"
#include "dirlock_range.h"
#include "run.h"
#include "say.h"
#include "status.h"

#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static const char *progname = DIRLOCK_COMMAND_NAME;

static void usage(FILE *to)
{
        fprintf(to,
                "Usage:\n"
                "  %s [options] NAME [NAME...] -- COMMAND [ARGS...]\n"
                "  %s [options] NAME [NAME...] -c COMMAND-LINE\n"
                "  %s [options] --range LO:HI NAME -- COMMAND [ARGS...]\n"
                "  %s [options] --permits N NAME -- COMMAND [ARGS...]\n"
                "  %s status  [-d SPACE] [--stale SECONDS] [--json] [NAME...]\n"
                "  %s break   [-d SPACE] [--stale SECONDS] [--force] NAME\n"
                "  %s cleanup [-d SPACE]\n"
                "\n"
                "Take all the named locks at once (all or none, in a deadlock-free order), run\n"
                "COMMAND (or COMMAND-LINE through /bin/sh -c), release them, and exit with its\n"
                "status.  A lock directory is made if missing, but not its parents.\n"
                "\n"
                "Options:\n"
                "  -d, --dir SPACE        lock space (default $DIRLOCK_DIR, else ./locks); one of the\n"
                "                         forms listed below\n"
                "  -w, --timeout SECONDS  wait at most SECONDS (fractions allowed; default: forever)\n"
                "  -n, --nonblock         fail at once if a lock is held (same as -w 0)\n"
                "      --stale SECONDS    age after which an unrefreshed lock is stale (default %g)\n"
                "  -E, --conflict-exit-code CODE\n"
                "                         exit status when a lock cannot be had (default 1)\n"
                "  -x, --exclusive        exclusive lock (default)\n"
                "  -s, --shared           shared (read) lock\n"
                "      --intent           upgradable read lock (prewrite-read)\n"
                "      --policy POLICY    fair (default), writer, reader or simple\n"
                "      --fifo             serve exclusive waiters in arrival order\n"
                "      --range LO:HI      lock only the range [LO, HI) of NAME (one name)\n"
                "      --one-client       every user of SPACE is on this client of its network\n"
                "                         filesystem: allow shared, intent and range locks there\n"
                "      --permits N        take one of N permits of counting lock NAME: at most N\n"
                "                         commands hold NAME at once (one name)\n"
                "  -q, --quiet            no message on conflict\n"
                "  -h, --help             this help\n"
                "  -V, --version          version\n",
                progname, progname, progname, progname, progname, progname, progname,
                DIRLOCK_DEFAULT_STALE_AGE);
        /* The lock spaces this build of the library knows (lib/space.c). */
        fprintf(to, "\nLock spaces:\n");
        const char *form;
        int built;
        for (size_t i = 0; (form = dirlock_space_form(i, &built)) != NULL; i++)
                fprintf(to, "  %s%s\n", form, built ? "" : "  (not in this build)");
}

/* A usage mistake: one line saying what, and where the help is (as
 * flock(1) and the other util-linux commands say it).  Returns EXIT_ERROR. */
static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        char msg[sizeof((dirlock_error *)0)->message];
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        say("%s: %s", progname, msg);
        fprintf(stderr, "Try '%s --help' for more information.\n", progname);
        return EXIT_ERROR;
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

/* The settings every subcommand and the lock-and-run mode share. */
struct settings {
        const char *space; /* -d: the lock space */
        double timeout, stale;
        int conflict_code, quiet, force;
        bool json; /* status --json */
        dirlock_options opts;
        bool ranged; /* --range LO:HI */
        double lo, hi;
        unsigned permits; /* --permits N */
};

static int cmd_status(int argc, char **argv, const struct settings *st)
{
        return status_run(argc, argv, st->space, st->stale, st->json);
}

static int cmd_break(int argc, char **argv, const struct settings *st)
{
        if (argc != 1) {
                fprintf(stderr, "%s: break takes exactly one lock name\n", progname);
                return EXIT_ERROR;
        }
        dirlock_error e;
        int rc = dirlock_break(st->space, argv[0], st->stale, st->force, &e);
        if (rc == DIRLOCK_OK) {
                printf("%s: broken\n", argv[0]);
                return 0;
        }
        fprintf(stderr, "%s: %s\n", progname, e.message);
        return rc == DIRLOCK_ELIVE ? 1 : EXIT_ERROR;
}

static int cmd_cleanup(int argc, char **argv, const struct settings *st)
{
        (void)argv;
        if (argc > 0) {
                fprintf(stderr, "%s cleanup: takes no lock names\n", progname);
                return EXIT_ERROR;
        }
        dirlock_error e;
        if (dirlock_cleanup(st->space, &e) != DIRLOCK_OK) {
                fprintf(stderr, "%s: %s\n", progname, e.message);
                return EXIT_ERROR;
        }
        return 0;
}

/* A lock directory (-d, or DIR of flock:DIR) that is missing is made by
 * the library, but only when its parent is there: a mistyped path would
 * otherwise become a whole new tree.  0, or EXIT_ERROR with a message. */
static int check_space_parent(const char *space)
{
        dirlock_space_info info;
        dirlock_error e;
        if (dirlock_space_query(space, &info, &e) != DIRLOCK_OK || info.dir == NULL)
                return 0; /* a bad space is reported by the acquire; a server's is not ours */
        struct stat st;
        if (stat(info.dir, &st) == 0 || errno != ENOENT)
                return 0;
        char *copy = strdup(info.dir);
        if (copy == NULL)
                return 0;
        size_t n = strlen(copy);
        while (n > 1 && copy[n - 1] == '/')
                copy[--n] = '\0';
        const char *parent = dirname(copy);
        int rc = 0;
        if (stat(parent, &st) != 0 && errno == ENOENT) {
                say("%s: lock directory '%s' does not exist, nor does '%s': nothing was created (%s makes "
                    "the lock directory itself, not its parents; check -d or DIRLOCK_DIR)",
                    progname, info.dir, parent, progname);
                rc = EXIT_ERROR;
        }
        free(copy);
        return rc;
}

/* Take the locks named before "--" (or "-c"), run the command after it
 * (run.c): COMMAND [ARGS...] as given, or "-c COMMAND-LINE" through
 * /bin/sh -c, as flock(1) runs it. */
static int cmd_run(int argc, char **argv, struct settings *st)
{
        int sep = -1;
        bool shell = false;
        for (int i = 0; i < argc && sep < 0; i++) {
                if (strcmp(argv[i], "--") == 0) {
                        sep = i;
                } else if (strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "--command") == 0) {
                        sep = i;
                        shell = true;
                }
        }
        if (sep < 0)
                return usage_error(
                    "expected NAME [NAME...] -- COMMAND [ARGS...] (or NAME... -c COMMAND-LINE)");
        if (sep == 0)
                return usage_error("no lock name before '%s'", argv[0]);
        if (shell && argc != sep + 2)
                return usage_error("%s takes exactly one argument, the command line (quote it)", argv[sep]);
        if (sep == argc - 1)
                return usage_error("no command after '--'");
        if ((st->opts.mode != DIRLOCK_EXCLUSIVE || st->ranged || st->permits > 0) && sep > 1)
                return usage_error("shared, intent and range locks and permits take one name");
        if (st->permits > 0 && (st->ranged || st->opts.mode != DIRLOCK_EXCLUSIVE))
                return usage_error("--permits takes neither a range nor a mode");
        int bad = check_space_parent(st->space);
        if (bad)
                return bad;
        char *shell_command[] = {"/bin/sh", "-c", argv[sep + 1], NULL};
        struct run_request rq = {.space = st->space,
                                 .names = argv,
                                 .count = (size_t)sep,
                                 .ranged = st->ranged,
                                 .lo = st->lo,
                                 .hi = st->hi,
                                 .permits = st->permits,
                                 .opts = st->opts,
                                 .quiet = st->quiet,
                                 .conflict_code = st->conflict_code,
                                 .command = shell ? shell_command : argv + sep + 1};
        rq.opts.timeout = st->timeout;
        rq.opts.stale_age = st->stale;
        return run_under_locks(&rq);
}

enum {
        OPT_STALE = 256,
        OPT_INTENT,
        OPT_POLICY,
        OPT_FIFO,
        OPT_FORCE,
        OPT_RANGE,
        OPT_ONE_CLIENT,
        OPT_PERMITS,
        OPT_JSON
};

/* --range LO:HI, as the library reads it (dirlock_range_parse). */
static int parse_range(const char *s, struct settings *st)
{
        dirlock_error e;
        if (dirlock_range_parse(s, &st->lo, &st->hi, &e) != DIRLOCK_OK) {
                fprintf(stderr, "%s: %s\n", progname, e.message);
                return -1;
        }
        st->ranged = true;
        return 0;
}

/* The subcommands: their word, the options they take besides -d, and what
 * runs them.  They take their options after the word. */
static const struct subcommand {
        const char *word;
        bool stale, force, json;
        int (*run)(int argc, char **argv, const struct settings *st);
} subcommands[] = {
    {"status", true, false, true, cmd_status},
    {"break", true, true, false, cmd_break},
    {"cleanup", false, false, false, cmd_cleanup},
};

static int parse_policy(const char *s, int *policy)
{
        static const char *const names[] = {"fair", "writer", "reader", "simple"};
        static const int values[] = {DIRLOCK_POLICY_FAIR, DIRLOCK_POLICY_WRITER, DIRLOCK_POLICY_READER,
                                     DIRLOCK_POLICY_SIMPLE};
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
                if (strcmp(s, names[i]) == 0) {
                        *policy = values[i];
                        return 0;
                }
        usage_error("unknown policy '%s' (fair, writer, reader, simple)", s);
        return -1;
}

static int parse_stale(const char *s, double *stale)
{
        if (parse_seconds(s, stale) != 0 || *stale <= 0) {
                usage_error("invalid stale age '%s'", s);
                return -1;
        }
        return 0;
}

/* One option of the lock-and-run mode: 0 handled, 1 exit 0 (help,
 * version), -1 bad usage. */
static int take_option(int c, struct settings *st)
{
        switch (c) {
        case 'd':
                st->space = optarg;
                return 0;
        case 'w':
                if (parse_seconds(optarg, &st->timeout) == 0)
                        return 0;
                usage_error("invalid timeout '%s'", optarg);
                return -1;
        case 'n':
                st->timeout = 0;
                return 0;
        case OPT_STALE:
                return parse_stale(optarg, &st->stale);
        case 'E': {
                char *end;
                long v = strtol(optarg, &end, 10);
                if (*optarg == '\0' || *end != '\0' || v < 0 || v > 255) {
                        usage_error("invalid exit code '%s' (0 to 255)", optarg);
                        return -1;
                }
                st->conflict_code = (int)v;
                return 0;
        }
        case 'x':
                st->opts.mode = DIRLOCK_EXCLUSIVE;
                return 0;
        case 's':
                st->opts.mode = DIRLOCK_SHARED;
                return 0;
        case OPT_INTENT:
                st->opts.mode = DIRLOCK_INTENT;
                return 0;
        case OPT_POLICY:
                return parse_policy(optarg, &st->opts.policy);
        case OPT_FIFO:
                st->opts.flags |= DIRLOCK_FIFO;
                return 0;
        case OPT_ONE_CLIENT:
                st->opts.flags |= DIRLOCK_ONE_CLIENT;
                return 0;
        case OPT_RANGE:
                return parse_range(optarg, st);
        case OPT_PERMITS: {
                char *end;
                errno = 0;
                unsigned long v = strtoul(optarg, &end, 10);
                if (errno != 0 || *optarg < '1' || *optarg > '9' || *end != '\0' || v > DIRLOCK_PERMITS_MAX) {
                        usage_error("invalid number of permits '%s' (1 to %u)", optarg,
                                    (unsigned)DIRLOCK_PERMITS_MAX);
                        return -1;
                }
                st->permits = (unsigned)v;
                return 0;
        }
        case 'q':
                st->quiet = 1;
                return 0;
        case 'h':
                usage(stdout);
                return 1;
        case 'V':
                printf("dirlock %s\n", DIRLOCK_VERSION);
                return 1;
        default:
                return -1; /* unknown or without its argument: said by bad_option() */
        }
}

/* What getopt_long() found wrong with argv[optind - 1] (it says nothing
 * itself: opterr is 0, so no message carries argv[0]'s path). */
static void bad_option(int c, char **argv)
{
        const char *arg = argv[optind - 1];
        bool long_form = strncmp(arg, "--", 2) == 0;
        if (c == ':' && long_form)
                usage_error("option '%s' needs an argument", arg);
        else if (c == ':')
                usage_error("option '-%c' needs an argument", optopt);
        else if (optopt == 'c')
                usage_error("-c comes after the lock names, as in flock(1): %s NAME -c COMMAND-LINE",
                            progname);
        else if (optopt != 0 && !long_form)
                usage_error("invalid option -- '%c'", optopt);
        else
                usage_error("unrecognized option '%s'", arg);
}

/* A subcommand's own options, after its word (argv[0]). */
static int run_subcommand(const struct subcommand *sub, int argc, char **argv, struct settings *st)
{
        static const struct option subopts[] = {
            {"dir", required_argument, NULL, 'd'},
            {"stale", required_argument, NULL, OPT_STALE},
            {"force", no_argument, NULL, OPT_FORCE},
            {"json", no_argument, NULL, OPT_JSON},
            {NULL, 0, NULL, 0},
        };
        optind = 0; /* 0, not 1: glibc then starts a fresh scan */
        opterr = 0;
        int c;
        /* The leading ':' makes a missing argument ':', told apart from an
         * unknown option ('?'). */
        while ((c = getopt_long(argc, argv, ":d:", subopts, NULL)) != -1) {
                if (c == ':') {
                        say("%s %s: option '%s' needs an argument (see %s --help)", progname, sub->word,
                            argv[optind - 1], progname);
                        return EXIT_ERROR;
                } else if (c == 'd') {
                        st->space = optarg;
                } else if (c == OPT_STALE && sub->stale) {
                        if (parse_stale(optarg, &st->stale) != 0)
                                return EXIT_ERROR;
                        /* A judge takes the floor a holder is held to (the
                         * library refuses a lock taken with less). */
                        if (st->stale < DIRLOCK_MIN_STALE_AGE)
                                return usage_error("stale age '%s' is below the smallest accepted, %.1f s",
                                                   optarg, DIRLOCK_MIN_STALE_AGE);
                } else if (c == OPT_FORCE && sub->force) {
                        st->force = 1;
                } else if (c == OPT_JSON && sub->json) {
                        st->json = true;
                } else {
                        const char *what = c == OPT_STALE   ? "--stale"
                                           : c == OPT_FORCE ? "--force"
                                           : c == OPT_JSON  ? "--json"
                                                            : argv[optind - 1];
                        say("%s %s: option '%s' is not valid here (see %s --help)", progname, sub->word, what,
                            progname);
                        return EXIT_ERROR;
                }
        }
        return sub->run(argc - optind, argv + optind, st);
}

int main(int argc, char **argv)
{
        struct settings st = {default_dir(),
                              -1,
                              DIRLOCK_DEFAULT_STALE_AGE,
                              1,
                              0,
                              0,
                              false,
                              DIRLOCK_OPTIONS_INIT,
                              false,
                              0,
                              0,
                              0};
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
            {"one-client", no_argument, NULL, OPT_ONE_CLIENT},
            {"range", required_argument, NULL, OPT_RANGE},
            {"permits", required_argument, NULL, OPT_PERMITS},
            {"quiet", no_argument, NULL, 'q'},
            {"help", no_argument, NULL, 'h'},
            {"version", no_argument, NULL, 'V'},
            {NULL, 0, NULL, 0},
        };
        int c;
        opterr = 0;
        /* '+': stop at the first non-option, so COMMAND's options stay its
         * own; ':' tells a missing argument (':') from an unknown option. */
        while ((c = getopt_long(argc, argv, "+:d:w:nE:xsqhV", longopts, NULL)) != -1) {
                if (c == '?' || c == ':') {
                        bad_option(c, argv);
                        return EXIT_ERROR;
                }
                int r = take_option(c, &st);
                if (r != 0)
                        return r > 0 ? 0 : EXIT_ERROR;
        }
        argc -= optind;
        argv += optind;
        if (argc == 0)
                return usage_error("no lock name given");
        for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
                if (strcmp(argv[0], subcommands[i].word) == 0)
                        return run_subcommand(&subcommands[i], argc, argv, &st);
        return cmd_run(argc, argv, &st);
}
