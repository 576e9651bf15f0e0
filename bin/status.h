/* status.h - `dirlock status` (status.c): the locks of a space, with
 * their holders and waiters, for a person or as one JSON document. */
#ifndef DIRLOCK_BIN_STATUS_H
#define DIRLOCK_BIN_STATUS_H

#include "dirlock.h"

#include <stdbool.h>

/* Print the status of the locks named in argv[0..argc) (every lock of the
 * space when argc is 0), judged with `stale`; as JSON when `json`.  The
 * exit status to end with. */
int status_run(int argc, char **argv, const char *space, double stale, bool json);

#endif
