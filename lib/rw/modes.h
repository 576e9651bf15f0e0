/* modes.h - which lock modes keep which out: the one table the backends
 * judge by (the directory backend's ranges, lib/range/dir_range.c, and
 * its deadlock search, lib/deadlock; etcd's queue, lib/etcd/etcd_queue.c;
 * the Redis scripts, which get it printed into their constants.lua at
 * build time, lib/redis/scripts/gen_constants.c), with each mode's name
 * and letter.  The table is in modes.c. */
#ifndef DIRLOCK_MODES_H
#define DIRLOCK_MODES_H

#include "dirlock_rw.h"

#include <stdbool.h>

/* The modes of the table: the three a lock is asked in, and an intent
 * holder on its way to exclusive (it waits for the readers already in,
 * and keeps every new request out). */
enum dl_mode {
        DL_MODE_EXCLUSIVE = DIRLOCK_EXCLUSIVE,
        DL_MODE_SHARED = DIRLOCK_SHARED,
        DL_MODE_INTENT = DIRLOCK_INTENT,
        DL_MODE_UPGRADING,
        DL_MODE_COUNT
};

/* The modes' letters: in the leaves of range entries (lib/dir/
 * dir_range.h), the values of etcd's entries, the Redis range
 * entries and scripts. */
#define DL_MODE_LETTER_EXCLUSIVE 'x'
#define DL_MODE_LETTER_SHARED    's'
#define DL_MODE_LETTER_INTENT    'i'
#define DL_MODE_LETTER_UPGRADING 'u'

/* Does a holder in mode `held` keep a request in mode `want` out (of the
 * same whole lock, or of overlapping ranges)?  Both modes as their
 * policies make them (dl_mode_under_policy); a number that is no mode
 * conflicts with everything. */
bool dl_modes_conflict(int held, int want);

/* Mode `mode` under `policy`: DIRLOCK_POLICY_SIMPLE makes every mode
 * exclusive (its readers share nothing). */
int dl_mode_under_policy(int mode, int policy);

/* A mode's letter ('\0' for no mode), and the mode of a letter (-1 for
 * none); its name for people is dirlock_mode_name (dirlock_rw.h). */
char dl_mode_letter(int mode);
int dl_mode_of_letter(char letter);

#endif
