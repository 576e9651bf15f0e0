/* tempname.c - temp file names and their dead writers (see tempname.h). */
#include "tempname.h"

#include <dirent.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hex.h"
#include "process.h"
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
        struct process_id self;
        char writer[PROCESS_ID_MAX];
        process_self(&self);
        process_format(&self, writer);
        buf_reset(out);
        buf_printf(out, "%s" TEMP_MARK "%s.%s", final, writer, rand16);
        return out->oom ? board_fail(err, 500, "out of memory") : 0;
}

int temp_name_is_dead(const char *name)
{
        const char *t = strstr(name, TEMP_MARK);
        if (t == NULL)
                return 0;
        struct process_id writer;
        const char *end = process_parse(t + TEMP_MARK_LEN, &writer);
        if (end == NULL || *end != '.' || strlen(end + 1) != 16)
                return 0;
        return process_gone(&writer);
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
