/* random.c - random bytes (see random.h). */
#include "random.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

int random_bytes(void *buf, size_t n, struct board_error *err)
{
        unsigned char *p = buf;
        while (n > 0) {
                ssize_t got = getrandom(p, n, 0);
                if (got < 0) {
                        if (errno == EINTR)
                                continue;
                        return board_fail(err, 500, "cannot get random bytes: %s", strerror(errno));
                }
                p += got;
                n -= (size_t)got;
        }
        return 0;
}
