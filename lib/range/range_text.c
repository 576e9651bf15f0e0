/* range_text.c - a range written as text, "LO:HI" (dirlock_range_parse):
 * the one reader of it, which the dirlock command and the bindings use,
 * so that every way in takes the same texts.  The grammar is with the
 * declaration in dirlock.h.
 *
 * The text is first matched against the grammar here, by hand, and only
 * then converted, with strtod_l() in the C locale: strtod() alone would
 * also take leading spaces, hexadecimal, "inf" and "nan", and read the
 * decimal point of whatever locale the program set.  A number converts
 * to the nearest double; one too small for a normal double becomes a
 * subnormal or zero (strtod's ERANGE there is no error: every decimal
 * rounds), one too large for any double is refused.  The values must
 * then pass what dirlock_acquire_range() asks of its ends (handle.c):
 * finite, lo < hi. */
#include "core.h"
#include "dirlock_range.h"

#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static const char digits[] = "0123456789";

/* Length of the number at the start of s by the grammar; 0 if there is
 * none. */
static size_t number_length(const char *s)
{
        size_t i = 0;
        if (s[i] == '+' || s[i] == '-')
                i++;
        size_t whole = strspn(s + i, digits);
        i += whole;
        size_t fraction = 0;
        if (s[i] == '.') {
                fraction = strspn(s + i + 1, digits);
                i += 1 + fraction;
        }
        if (whole + fraction == 0)
                return 0;
        if (s[i] == 'e' || s[i] == 'E') {
                size_t j = i + 1;
                if (s[j] == '+' || s[j] == '-')
                        j++;
                size_t exponent = strspn(s + j, digits);
                if (exponent == 0)
                        return 0;
                i = j + exponent;
        }
        return i;
}

static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;

static void make_c_locale(void)
{
        c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
}

/* The number of `len` characters at s (matched by number_length) as a
 * double; DIRLOCK_EINVAL when it does not fit one. */
static int convert(const char *text, const char *s, size_t len, const char *which, double *out,
                   dirlock_error *err)
{
        pthread_once(&c_locale_once, make_c_locale);
        if (c_locale == (locale_t)0)
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        char *end;
        *out = strtod_l(s, &end, c_locale);
        if (end != s + len) /* cannot happen: strtod reads the grammar's numbers whole */
                return dl_fail(err, DIRLOCK_EINVAL, 0, "invalid range '%.80s': %s is not a number", text,
                               which);
        if (!isfinite(*out))
                return dl_fail(err, DIRLOCK_EINVAL, 0, "invalid range '%.80s': %s (%.*s) is too large", text,
                               which, (int)(len > 40 ? 40 : len), s);
        return DIRLOCK_OK;
}

int dirlock_range_parse(const char *text, double *lo, double *hi, dirlock_error *err)
{
        if (text == NULL || lo == NULL || hi == NULL)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "no range text, or no place to put its ends");
        size_t lo_len = number_length(text);
        if (lo_len == 0)
                return dl_fail(err, DIRLOCK_EINVAL, 0,
                               "invalid range '%.80s': expected LO:HI, two decimal numbers such as 0:10 or "
                               "-1.5:2e3, with nothing around them",
                               text);
        if (text[lo_len] != ':')
                return dl_fail(err, DIRLOCK_EINVAL, 0,
                               "invalid range '%.80s': expected ':' right after LO, then HI", text);
        const char *h = text + lo_len + 1;
        size_t hi_len = number_length(h);
        if (hi_len == 0)
                return dl_fail(err, DIRLOCK_EINVAL, 0,
                               "invalid range '%.80s': expected HI, a decimal number, right after ':'", text);
        if (h[hi_len] != '\0')
                return dl_fail(err, DIRLOCK_EINVAL, 0, "invalid range '%.80s': nothing may follow HI", text);
        double l, u;
        int rc = convert(text, text, lo_len, "LO", &l, err);
        if (rc == DIRLOCK_OK)
                rc = convert(text, h, hi_len, "HI", &u, err);
        if (rc != DIRLOCK_OK)
                return rc;
        if (!(l < u))
                return dl_fail(err, DIRLOCK_EINVAL, 0, "invalid range '%.80s': LO must be below HI", text);
        *lo = l;
        *hi = u;
        dl_ok(err);
        return DIRLOCK_OK;
}
