/* fence.h - what a fence is as data, in every kind of space (fence.c):
 * decimal digits, a number up to DIRLOCK_FENCE_MAX.  The directory
 * backend reads its counters' names with it (dir_counter.c), the server
 * backends the fences their servers answer (lib/redis, lib/etcd). */
#ifndef DIRLOCK_FENCE_INTERNAL_H
#define DIRLOCK_FENCE_INTERNAL_H

#include "core.h"
#include "dirlock_fence.h"

/* A fence or fence counter written as text: `len` decimal digits (leading
 * zeros allowed).  1 and *out when it is a number up to DIRLOCK_FENCE_MAX;
 * -1 for a number past it (data dirlock did not write: DIRLOCK_EDATA); 0
 * for anything else. */
int dl_fence_parse(const char *text, size_t len, unsigned long long *out);
/* The fence a server answered as text (NUL-terminated): the number, or 0
 * -- no fence -- when it is not one of 1..DIRLOCK_FENCE_MAX. */
unsigned long long dl_fence_of_text(const char *text);

#endif
