/* range.h - what the range module gives every backend that keeps ranges
 * (its directory part, dir_range.h; lib/redis; lib/etcd): how a holder's
 * record reads in the list of a name's ranges (range.c). */
#ifndef DIRLOCK_RANGE_INTERNAL_H
#define DIRLOCK_RANGE_INTERNAL_H

#include "core.h"
#include "dirlock_range.h"

/* What a holder's record says of it, for dirlock_ranges(): pid, host, and
 * the age since it was acquired at wall-clock time now_ns (0 when the
 * record has no time). */
void dl_record_to_range(const dl_record *rec, long long now_ns, dirlock_range_info *range);

#endif
