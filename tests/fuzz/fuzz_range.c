/* fuzz_range.c - the text form of a range (dirlock_range_parse,
 * lib/range_text.c).  Properties:
 *   1. any input: dirlock_range_parse either refuses it (DIRLOCK_EINVAL,
 *      a message, the ends left alone) or gives finite ends lo < hi, and
 *      then the text holds nothing but the grammar's characters, and each
 *      end is what strtod (C locale) reads from its part;
 *   2. an accepted text (of up to 64 characters) with a space put
 *      anywhere is refused;
 *   3. two finite doubles from the input bytes, lo < hi, written as
 *      "%.17g:%.17g" (what a binding would pass), parse back to the very
 *      same doubles -- subnormals, negative zero, 1e+308 included. */
#include "fuzz.h"

#include "dirlock.h"
#include "dirlock_range.h"

#include <math.h>

static void check_text(const char *text)
{
        double lo = 42, hi = 42;
        dirlock_error e;
        e.message[0] = '\0';
        int rc = dirlock_range_parse(text, &lo, &hi, &e);
        if (rc != DIRLOCK_OK) {
                FUZZ_CHECK(rc == DIRLOCK_EINVAL && e.code == DIRLOCK_EINVAL);
                FUZZ_CHECK(strstr(e.message, "range") != NULL);
                FUZZ_CHECK(lo == 42 && hi == 42);
                return;
        }
        FUZZ_CHECK(isfinite(lo) && isfinite(hi) && lo < hi);
        size_t len = strlen(text);
        FUZZ_CHECK(strspn(text, "0123456789+-.eE:") == len);
        const char *colon = strchr(text, ':');
        FUZZ_CHECK(colon != NULL && strchr(colon + 1, ':') == NULL);
        char *end;
        FUZZ_CHECK(strtod(text, &end) == lo && end == colon);
        FUZZ_CHECK(strtod(colon + 1, &end) == hi && *end == '\0');
        if (len > 64)
                return;
        /* 2 */
        char *spaced = malloc(len + 2);
        FUZZ_CHECK(spaced != NULL);
        for (size_t at = 0; at <= len; at++) {
                memcpy(spaced, text, at);
                spaced[at] = ' ';
                memcpy(spaced + at + 1, text + at, len - at + 1);
                double l, h;
                FUZZ_CHECK(dirlock_range_parse(spaced, &l, &h, NULL) == DIRLOCK_EINVAL);
        }
        free(spaced);
}

static double double_of(uint64_t bits)
{
        double d;
        memcpy(&d, &bits, sizeof d);
        return d;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        /* 1, 2: the input as text (up to its first NUL, as C reads it). */
        char *text = malloc(size + 1);
        FUZZ_CHECK(text != NULL);
        memcpy(text, data, size);
        text[size] = '\0';
        check_text(text);
        free(text);

        /* 3: two doubles from the input bits. */
        struct fuzz_in in = {data, size};
        double a = double_of(fuzz_u64(&in, 8)), b = double_of(fuzz_u64(&in, 8));
        if (isfinite(a) && isfinite(b) && a != b) {
                double lo = a < b ? a : b, hi = a < b ? b : a;
                char buf[64];
                snprintf(buf, sizeof buf, "%.17g:%.17g", lo, hi);
                double l = 0, h = 0;
                dirlock_error e;
                FUZZ_CHECK(dirlock_range_parse(buf, &l, &h, &e) == DIRLOCK_OK);
                FUZZ_CHECK(memcmp(&l, &lo, sizeof l) == 0 && memcmp(&h, &hi, sizeof h) == 0);
                check_text(buf);
        }
        return 0;
}
