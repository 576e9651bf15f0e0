/* dirlock_range.h - the range module (lib/range): shared, intent and
 * exclusive locks on half-open ranges [lo, hi) of a lock, which needs the
 * reader-writer module (lib/rw) beside it.  A build without it refuses
 * to take a whole lock whose name has ranges held or waited for on disk
 * (DIRLOCK_EINVAL naming this module): it could not wait for them. */
#ifndef DIRLOCK_RANGE_H
#define DIRLOCK_RANGE_H

#include "dirlock.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Lock the half-open range [lo, hi) of lock `name` in opts->mode (shared,
 * intent or exclusive) and policy.  Ranges that do not overlap never wait
 * for each other; overlapping ones follow the reader-writer rules and the
 * policy (under `fair` a waiting writer holds off new overlapping readers,
 * and neither side can be locked out).  A whole lock of `name` (from
 * dirlock_acquire) conflicts with every range of it, whatever the modes.
 * Endpoints are doubles: finite, lo < hi -- seed 002's tree keeps nested
 * real intervals, and a double has room for 52 levels of bisection.
 * The handle is released, refreshed, checked, fenced, upgraded (intent ->
 * exclusive) and downgraded as a whole lock's; it is not reentrant.
 * Directory spaces: lib/range/dir_range.c; Redis spaces: lib/redis/redis_range.c;
 * etcd spaces keep ranges in the name's queue (lib/etcd/etcd_queue.c);
 * flock spaces have none (DIRLOCK_EINVAL). */
int dirlock_acquire_range(const char *space, const char *name, double lo, double hi,
                          const dirlock_options *opts, dirlock **out, dirlock_error *err);
/* A range written as text, as the dirlock command's --range takes it and
 * the bindings pass it on: the one grammar of it (lib/range/range_text.c).
 *
 *   range  = number ":" number                      ; LO:HI, nothing around
 *   number = [sign] (digits ["." [digits]] / "." digits) [exponent]
 *   exponent = ("e" / "E") [sign] digits
 *   sign   = "+" / "-"
 *   digits = 1*("0"-"9")
 *
 * No spaces, no hexadecimal, no "inf" or "nan"; the decimal point is "."
 * whatever the locale.  Each number becomes the nearest double (so 1e-320
 * is the subnormal it names, and 1e-400 is 0); a number too large for a
 * double is refused.  Then, as for dirlock_acquire_range: LO < HI.  On
 * success *lo and *hi are set; otherwise DIRLOCK_EINVAL, a message saying
 * what is wrong, and *lo and *hi are left alone. */
int dirlock_range_parse(const char *text, double *lo, double *hi, dirlock_error *err);
/* Narrow a held range to [lo, hi), a part of it, at once; waiters that no
 * longer overlap get in.  A range can only shrink: growing could deadlock. */
int dirlock_shrink(dirlock *lock, double lo, double hi, dirlock_error *err);
/* 1 and the range held (either pointer may be NULL) for a range lock, 0
 * for a whole lock. */
int dirlock_range_of(const dirlock *lock, double *lo, double *hi);

/* A range holder or waiter of a lock, as dirlock_ranges() lists them. */
typedef struct dirlock_range_info {
        double lo, hi;
        int mode;      /* dirlock_mode                                  */
        int waiting;   /* 1: a waiter's reservation, 0: held            */
        int upgrading; /* an intent holder upgrading to exclusive       */
        pid_t pid;
        char host[256];
        double age; /* seconds since taken, queued or refreshed */
} dirlock_range_info;

/* Every range holder and waiter of lock `name`, ordered by lo: *out is a
 * malloc'd array of *count entries (free() it). */
int dirlock_ranges(const char *space, const char *name, dirlock_range_info **out, size_t *count,
                   dirlock_error *err);

#ifdef __cplusplus
}
#endif
#endif
