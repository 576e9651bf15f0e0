/* tempname.c - temp file names and their dead writers (see tempname.h). */
#include "tempname.h"

#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hex.h"
#include "random.h"

#define TEMP_MARK     ".tmp."
#define TEMP_MARK_LEN (sizeof TEMP_MARK - 1)

int temp_name_make(const char *final, const char *rand16, struct buf *out, struct board_error *err)
{
        char rhex[17];
        if (rand16 == NULL) {
                unsigned char rnd[8];
                if (random_bytes(rnd, sizeof rnd, err) < 0)
                        return -1;
                hex_encode(rnd, sizeof rnd, rhex);
                rand16 = rhex;
        }
        buf_reset(out);
        buf_printf(out, "%s" TEMP_MARK "%ld.%s", final, (long)getpid(), rand16);
        return out->oom ? board_fail(err, 500, "out of memory") : 0;
}

int temp_name_is_dead(const char *name)
{
        const char *t = strstr(name, TEMP_MARK);
        if (t == NULL)
                return 0;
        char *end;
        long pid = strtol(t + TEMP_MARK_LEN, &end, 10);
        if (pid <= 0 || *end != '.' || strlen(end + 1) != 16 || pid == (long)getpid())
                return 0;
        return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

void temp_remove_dead_beside(const char *final)
{
        char *copy = strdup(final);
        if (copy == NULL)
                return;
        DIR *d = opendir(dirname(copy));
        if (d != NULL) {
                struct dirent *de;
                while ((de = readdir(d)) != NULL)
                        if (temp_name_is_dead(de->d_name))
                                unlinkat(dirfd(d), de->d_name, 0);
                closedir(d);
        }
        free(copy);
}
