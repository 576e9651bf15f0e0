/* fence.c - what a fence is as data, in every kind of space: decimal
 * digits, a number up to DIRLOCK_FENCE_MAX (dirlock.h says why that
 * limit).  The directory backend reads its counter's name with it
 * (dir/dir_fence.c), the Redis backend the fences its scripts answer
 * (redis/). */
#include "internal.h"

#include <stdbool.h>
#include <string.h>

int dl_fence_parse(const char *text, size_t len, unsigned long long *out)
{
        if (len == 0)
                return 0;
        unsigned long long v = 0;
        bool past = false;
        for (size_t i = 0; i < len; i++) {
                if (text[i] < '0' || text[i] > '9')
                        return 0;
                if (!past) { /* v <= DIRLOCK_FENCE_MAX here: v * 10 + 9 cannot overflow */
                        v = v * 10 + (unsigned)(text[i] - '0');
                        past = v > DIRLOCK_FENCE_MAX;
                }
        }
        if (past)
                return -1;
        *out = v;
        return 1;
}

unsigned long long dl_fence_of_text(const char *text)
{
        unsigned long long f = 0;
        return text != NULL && dl_fence_parse(text, strlen(text), &f) == 1 ? f : 0;
}
