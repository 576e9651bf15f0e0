/* clock.c - time for the library: CLOCK_MONOTONIC deadlines for timeouts
 * (immune to wall-clock jumps) and the wall clock for owner records. */
#include "core.h"

#include <math.h> /* isnan: a macro, no libm */

dl_time dl_now(void)
{
        dl_time t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return t;
}

dl_time dl_deadline(double timeout)
{
        if (timeout < 0 || isnan(timeout))
                return (dl_time){.tv_sec = -1, .tv_nsec = 0};
        dl_time t = dl_now();
        if (timeout > 1e9)
                timeout = 1e9;
        double whole = (double)(time_t)timeout; /* 0 <= timeout: floor, without libm */
        t.tv_sec += (time_t)whole;
        t.tv_nsec += (long)((timeout - whole) * 1e9);
        if (t.tv_nsec >= 1000000000L) {
                t.tv_sec++;
                t.tv_nsec -= 1000000000L;
        }
        return t;
}

bool dl_deadline_never(const dl_time *deadline)
{
        return deadline->tv_sec < 0;
}

bool dl_deadline_passed(const dl_time *deadline)
{
        return !dl_deadline_never(deadline) && dl_remaining(deadline) <= 0;
}

double dl_remaining(const dl_time *deadline)
{
        if (dl_deadline_never(deadline))
                return 1e12;
        dl_time now = dl_now();
        double ms =
            (double)(deadline->tv_sec - now.tv_sec) * 1e3 + (double)(deadline->tv_nsec - now.tv_nsec) / 1e6;
        return ms > 0 ? ms : 0;
}

double dl_ms_since(const dl_time *then)
{
        dl_time now = dl_now();
        return (double)(now.tv_sec - then->tv_sec) * 1e3 + (double)(now.tv_nsec - then->tv_nsec) / 1e6;
}

long long dl_wall_ns(void)
{
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        return dl_ts_ns(&t);
}

long long dl_ts_ns(const struct timespec *ts)
{
        return (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec;
}
