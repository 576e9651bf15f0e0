/* dir_rw.h - what the reader-writer module's directory part (dir_rw.c)
 * gives the other modules that read its entries (lib/deadlock): the name
 * of an intent holder's upgrade entry.  The names are in
 * lib/core/dir_layout.h. */
#ifndef DIRLOCK_DIR_RW_H
#define DIRLOCK_DIR_RW_H

#include "dir.h"

/* D/NAME.up.<T>: malloc'd, NULL when out of memory. */
char *dl_layout_up(const char *lockdir, const char *name, const char *token);

#endif
