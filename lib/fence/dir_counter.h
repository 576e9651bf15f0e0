/* dir_counter.h - a COUNTER in a directory space (dir_counter.c): a
 * directory `dir` holding one empty file named by a number, which only
 * grows.  Fences are drawn from one (dir_fence.c), deadlock verdicts too
 * (lib/deadlock). */
#ifndef DIRLOCK_DIR_COUNTER_H
#define DIRLOCK_DIR_COUNTER_H

#include "dir.h"

/* dl_counter_read: 1 and *n, the largest number named in it; 0 when the
 * directory is missing or empty; -1 on error (errno); -2 when it names a
 * number past DIRLOCK_FENCE_MAX, or only things that are no number (data
 * dirlock did not write).  dl_counter_make: make it, holding 0, through
 * the prepared directory `prep` (a name nobody else uses), unless someone
 * else does first.  dl_counter_swap: move it from `from` to `to` -- 0, or
 * -1 with errno (ENOENT or ESTALE: it no longer held `from`). */
int dl_counter_read(const char *dir, unsigned long long *n);
int dl_counter_make(const char *dir, const char *prep, unsigned lockdir_mode, dirlock_error *err);
int dl_counter_swap(const char *dir, unsigned long long from, unsigned long long to);
/* Remove prepared directory `prep` of a maker cut short, and its 0. */
void dl_counter_prep_remove(const char *prep);

#endif
