/* replay.c - runs a fuzz harness over files, without libFuzzer: each
 * argument is a file or a directory of files (not recursive), each file is
 * one input.  Exit status 0 when every input passed (a failed property
 * aborts).  Linked with one tests/fuzz/fuzz_*.c by tests/fuzz/fuzz.mk. */
#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>

static int run_file(const char *path)
{
        FILE *f = fopen(path, "rb");
        if (f == NULL) {
                fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
                return -1;
        }
        size_t cap = 4096, len = 0;
        uint8_t *buf = malloc(cap);
        size_t n;
        while (buf != NULL && (n = fread(buf + len, 1, cap - len, f)) > 0) {
                len += n;
                if (len == cap) {
                        uint8_t *nb = realloc(buf, cap * 2);
                        if (nb == NULL) {
                                free(buf);
                                buf = NULL;
                                break;
                        }
                        buf = nb;
                        cap *= 2;
                }
        }
        int bad = ferror(f);
        fclose(f);
        if (buf == NULL || bad) {
                fprintf(stderr, "replay: %s: cannot read\n", path);
                free(buf);
                return -1;
        }
        /* An exact-size copy, so that reads past the end are caught by the
         * sanitizers as they are under libFuzzer. */
        uint8_t *exact = malloc(len ? len : 1);
        if (exact == NULL) {
                free(buf);
                return -1;
        }
        memcpy(exact, buf, len);
        free(buf);
        LLVMFuzzerTestOneInput(exact, len);
        free(exact);
        return 0;
}

int main(int argc, char **argv)
{
        int failed = 0, count = 0;
        for (int i = 1; i < argc; i++) {
                struct stat st;
                if (stat(argv[i], &st) != 0) {
                        fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
                        failed++;
                        continue;
                }
                if (!S_ISDIR(st.st_mode)) {
                        failed += run_file(argv[i]) != 0;
                        count++;
                        continue;
                }
                DIR *d = opendir(argv[i]);
                if (d == NULL) {
                        fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
                        failed++;
                        continue;
                }
                struct dirent *de;
                while ((de = readdir(d)) != NULL) {
                        if (de->d_name[0] == '.')
                                continue;
                        size_t pl = strlen(argv[i]) + strlen(de->d_name) + 2;
                        char *p = malloc(pl);
                        if (p == NULL) {
                                failed++;
                                break;
                        }
                        snprintf(p, pl, "%s/%s", argv[i], de->d_name);
                        failed += run_file(p) != 0;
                        count++;
                        free(p);
                }
                closedir(d);
        }
        printf("replay: %d inputs, %d unreadable\n", count, failed);
        return failed ? 1 : 0;
}
