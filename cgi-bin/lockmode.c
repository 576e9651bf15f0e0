/* lockmode.c - the table of the board's lock modes (see lockmode.h). */
#include "lockmode.h"

#include <string.h>

#include "board_error.h"
#include "dirlock.h"

/* Indexed by mode.  What a row must keep (tests/unit/test_board_lockmode.c
 * checks every row): a page view's lock is shared; a fenced lock is the
 * lock space's own (flock(2) has no fences); a mode with group commit
 * takes its write lock before the read, which the queue's leader needs
 * to store every queued post in one read-modify-write; an upgrade needs
 * an intent lock to upgrade. */
static const struct board_lock_mode_row rows[] = {
    [BOARD_LOCK_NONE] =
        {
            .name = "none",
            .read = BOARD_LOCK_NOTHING,
            .write = BOARD_LOCK_NOTHING,
        },
    [BOARD_LOCK_WRONG] =
        {
            .name = "wrong",
            .read = BOARD_LOCK_NOTHING,
            .write = DIRLOCK_EXCLUSIVE,
            .write_after_read = true,
        },
    [BOARD_LOCK_MKDIR] =
        {
            .name = "mkdir",
            .read = BOARD_LOCK_NOTHING,
            .write = DIRLOCK_EXCLUSIVE,
            .fenced = true,
            .side_locks = true,
            .group_commit = true,
        },
    [BOARD_LOCK_RW] =
        {
            .name = "rw",
            .read = DIRLOCK_SHARED,
            .write = DIRLOCK_INTENT,
            .upgrade_before_inplace = true,
            .fenced = true,
            .side_locks = true,
            .group_commit = true,
        },
    [BOARD_LOCK_FLOCK] =
        {
            .name = "flock",
            .flock = true,
            .read = DIRLOCK_SHARED,
            .write = DIRLOCK_EXCLUSIVE,
            .side_locks = true,
            .group_commit = true,
        },
};

_Static_assert(sizeof rows / sizeof rows[0] == BOARD_LOCK_MODES, "one row per enum board_lock_mode value");

const struct board_lock_mode_row *board_lock_mode_row(enum board_lock_mode mode)
{
        /* A gap in the designated initialisers above leaves a row without
         * a name: as much a bug as a value past the end. */
        if ((unsigned)mode >= BOARD_LOCK_MODES || rows[mode].name == NULL)
                board_bug_unknown("lock mode", (int)mode);
        return &rows[mode];
}

const char *board_lock_mode_name(enum board_lock_mode mode)
{
        return board_lock_mode_row(mode)->name;
}

int board_lock_mode_parse(const char *name, enum board_lock_mode *out)
{
        for (int m = 0; m < BOARD_LOCK_MODES; m++)
                if (rows[m].name != NULL && strcmp(name, rows[m].name) == 0) {
                        *out = (enum board_lock_mode)m;
                        return 0;
                }
        return -1;
}
