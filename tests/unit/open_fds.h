/* open_fds.h - how many of this process's descriptors are open on a path
 * (read from /proc/self/fd): for the tests that a lock file is kept open,
 * or closed.  Included by tests/unit/test_space.c and test_board_locking.c. */
#ifndef OPEN_FDS_H
#define OPEN_FDS_H

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* -1 when /proc/self/fd cannot be read. */
static int fds_open_on(const char *path)
{
        DIR *d = opendir("/proc/self/fd");
        if (d == NULL)
                return -1;
        int n = 0;
        struct dirent *ent;
        while ((ent = readdir(d)) != NULL) {
                char link[300], target[512];
                snprintf(link, sizeof link, "/proc/self/fd/%s", ent->d_name);
                ssize_t len = readlink(link, target, sizeof target - 1);
                if (len <= 0)
                        continue;
                target[len] = '\0';
                n += strcmp(target, path) == 0;
        }
        closedir(d);
        return n;
}

#endif
