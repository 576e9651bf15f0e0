/* fence.c - the fence module's call (dirlock_fence, in any kind of space
 * whose backend offers fences: backend.h), and what a fence is as data,
 * in every kind of space: decimal digits, a number up to
 * DIRLOCK_FENCE_MAX (dirlock_fence.h says why that limit). */
#include "fence.h"
#include "backend.h"

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

int dirlock_fence(dirlock *lock, unsigned long long *fence, dirlock_error *err)
{
        int rc = dl_handle_held(lock, err);
        if (rc != DIRLOCK_OK)
                return rc;
        if (fence == NULL)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "no place to return the fence");
        if (lock->be->fence == NULL)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "%s locks have no fences", lock->be->name);
        if (lock->fence == 0) {
                rc = lock->be->fence(lock, &lock->fence, err);
                if (rc != DIRLOCK_OK) {
                        lock->fence = 0;
                        return rc;
                }
        }
        *fence = lock->fence;
        dl_ok(err);
        return DIRLOCK_OK;
}
