/* dir_range.h - what the files that read D/NAME.ranges share
 * (dir_range.c, dir_range_entries.c, and the deadlock search of
 * lib/deadlock): the names of range entries, a scan of the directory and
 * the judging of its entries, and the meta-lock under which entries
 * change.  The protocol is at the top of dir_range.c. */
#ifndef DIRLOCK_DIR_RANGE_H
#define DIRLOCK_DIR_RANGE_H

#include "dir.h"
#include "modes.h"
#include "range.h"

/* An entry's leaf, <state><mode>.<seq>.<lo>.<hi>.<T>, with its NUL. */
#define DL_RANGE_LEAF_SIZE (2 + 1 + DL_RANGE_SEQ_DIGITS + 1 + 16 + 1 + 16 + 1 + DIRLOCK_TOKEN_LEN + 1)

/* Entry states and modes (the letters of a leaf; the modes' are
 * modes.h's). */
#define DL_RANGE_HELD      'h'
#define DL_RANGE_WAITING   'w'
#define DL_RANGE_SHARED    DL_MODE_LETTER_SHARED
#define DL_RANGE_INTENT    DL_MODE_LETTER_INTENT
#define DL_RANGE_EXCL      DL_MODE_LETTER_EXCLUSIVE
#define DL_RANGE_UPGRADING DL_MODE_LETTER_UPGRADING

struct dl_range_entry {
        char state; /* DL_RANGE_HELD or DL_RANGE_WAITING */
        char mode;  /* s, i, x, u */
        unsigned long long seq;
        double lo, hi;
        char token[DIRLOCK_TOKEN_LEN + 1];
        char leaf[DL_RANGE_LEAF_SIZE];
        bool judged, live; /* dl_range_judge looked: the record was read, it lives */
        dl_record rec;     /* when judged and live */
};

/* The entries of one D/NAME.ranges, read at one moment (by name only). */
struct dl_range_scan {
        const char *dir;
        const dl_fs *fs; /* the filesystem it is on (lib/netfs/netfs.c) */
        struct dl_range_entry *e;
        size_t n, cap;
        unsigned long long max_seq;
};

/* The meta-lock of one name: flock(LOCK_EX) on D/.NAME.rmeta. */
struct dl_range_meta {
        char *ranges_dir;      /* D/NAME.ranges                        */
        char *meta_path;       /* D/.NAME.rmeta                        */
        int fd;                /* open on meta_path, or -1             */
        unsigned lockdir_mode; /* D's st_mode: shared D, shared file   */
        dl_backoff backoff;    /* while the meta-lock is busy           */
        const char *name;      /* the lock's name, for messages        */
        const dl_fs *fs;       /* D's filesystem (lib/netfs/netfs.c)             */
};

/* ---- names ------------------------------------------------------------------ */

void dl_range_leaf(char out[DL_RANGE_LEAF_SIZE], char state, char mode, unsigned long long seq, double lo,
                   double hi, const char *token);
/* Parse a leaf of D/NAME.ranges: false when it is not an entry's. */
bool dl_range_parse_leaf(const char *leaf, struct dl_range_entry *e);
char dl_range_mode_letter(int mode);
int dl_range_mode_of_letter(char m);
bool dl_range_overlap(double lo1, double hi1, double lo2, double hi2);

/* ---- the meta-lock -------------------------------------------------------------- */

/* Paths of lock `name` in absolute lock directory `lockdir` (mode
 * `lockdir_mode`); `seed` (a token) seeds the backoff.  DIRLOCK_ENOMEM. */
int dl_range_meta_init(struct dl_range_meta *m, const char *lockdir, unsigned lockdir_mode, const char *name,
                       const char *seed, dirlock_error *err);
/* Closes the file and frees the paths (idempotent). */
void dl_range_meta_free(struct dl_range_meta *m);
/* Take the meta-lock by the deadline: LOCK_NB tries with a short jittered
 * backoff (META_RETRY_* in range_entries.c: a holder never waits for
 * anything while it holds it).  DIRLOCK_ETIMEDOUT, DIRLOCK_EPERM, DIRLOCK_EIO. */
int dl_range_meta_take(struct dl_range_meta *m, const dl_time *deadline, dirlock_error *err);
void dl_range_meta_give(struct dl_range_meta *m);

/* ---- scanning and judging (the meta-lock held) ---------------------------------- */

/* Read the entries of m's D/NAME.ranges into s, by name only.  0, or -1
 * with err. */
int dl_range_scan_dir(const struct dl_range_meta *m, struct dl_range_scan *s, dirlock_error *err);
void dl_range_scan_free(struct dl_range_scan *s);
/* Judge entry e of scan s: 1 live (its record in e->rec), 0 stale or gone
 * (broken now), -1 error (one this user may not break: DIRLOCK_EPERM). */
int dl_range_judge(const struct dl_range_scan *s, struct dl_range_entry *e, double stale_age,
                   dirlock_error *err);
/* The live held entries of m's name: their number, one of them in *one;
 * -1 with err on error.  Takes and gives the meta-lock. */
int dl_range_held(struct dl_range_meta *m, double stale_age, dl_record *one, const dl_time *deadline,
                  dirlock_error *err);

/* ---- from outside the holders (dir_range_entries.c) ------------------------------ */

/* The range holders and waiters of lock `name` (dirlock_ranges), and the
 * number of held ranges (for inspect). */
int dl_range_list(const char *lockdir, const char *name, double stale_age, dirlock_range_info **out,
                  size_t *count, dirlock_error *err);
unsigned dl_range_count_held(const char *lockdir, const char *name);

#endif
