/* permit.h - what the counting-lock module's directory part
 * (dir_permit.c) gives the other modules that read a counting lock's
 * directories (lib/deadlock): their names.  The table is in
 * lib/core/dir_layout.h. */
#ifndef DIRLOCK_PERMIT_INTERNAL_H
#define DIRLOCK_PERMIT_INTERNAL_H

#include "dir.h"
#include "dirlock_permit.h"

/* PERMITS_DIR/n<N> (PERMITS_DIR is D/NAME.permits): malloc'd, NULL when
 * out of memory. */
char *dl_layout_permit_group(const char *permits_dir, unsigned n);
/* "n<N>" (a group of permits): 1 and *n, else 0. */
int dl_layout_permit_group_n(const char *leaf, unsigned *n);
/* "<K>" (a permit of a group): 1 and *k, else 0. */
int dl_layout_permit_k(const char *leaf, unsigned *k);

#endif
