/* delay.c - sleeping and the monotonic clock (see delay.h). */
#include "delay.h"

#include <errno.h>
#include <time.h>

void sleep_ms(long ms)
{
        if (ms <= 0)
                return;
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

double monotonic_seconds(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
