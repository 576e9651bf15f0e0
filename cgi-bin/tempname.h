/* tempname.h - names of temp files, written next to the file they are
 * to become (then renamed or linked into place):
 * "<final>.tmp.<pid>-<start time>.<16 hex>", so that a temp file left by
 * a writer killed before its rename can be told from a live writer's,
 * even when its pid was reused since (process.h), and removed.  Names of
 * the older form "<final>.tmp.<pid>.<16 hex>" are still recognised and
 * judged by the pid alone. */
#ifndef BOARD_TEMPNAME_H
#define BOARD_TEMPNAME_H

#include "board_error.h"
#include "buf.h"

/* The temp name for `final` into *out (reset first): `rand16` is its 16
 * hex digits, or NULL for fresh random ones.  0, or -1 with a 500 error. */
int temp_name_make(const char *final, const char *rand16, struct buf *out, struct board_error *err);

/* 1 when `name` (a directory entry) is a temp name whose writer is gone.
 * A live writer's temp file is never reported, so removing what this
 * names is safe with or without a lock. */
int temp_name_is_dead(const char *name);

/* Remove the dead writers' temp files in the directory of `final`. */
void temp_remove_dead_beside(const char *final);

#endif
