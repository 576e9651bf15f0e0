/* fuzz_owner.c - the owner-record parser and formatter of the library
 * (dl_record_parse / dl_record_format in lib/owner.c).  Properties:
 *   1. any input: dl_record_parse either refuses it or gives a record r
 *      whose text form fits DL_RECORD_MAX, parses back to r, and formats
 *      to the same text again (the canonical form);
 *   2. a valid record built from the input bytes (pid 1..2^31-1, any start
 *      time, 32 hex digit token, acquired >= 0, boot id of [0-9a-z-],
 *      any pid namespace, mode 0..2, stale age 0..10^15 ms, no partner or
 *      a partner pid 1..2^31-1 with any start time, host of 1..255 bytes
 *      without NUL):
 *      parse(format(r)) == r. */
#include "fuzz.h"

#include "core.h"

static int record_equal(const dl_record *a, const dl_record *b)
{
        return a->pid == b->pid && a->start_time == b->start_time && strcmp(a->token, b->token) == 0 &&
               a->acquired_ns == b->acquired_ns && strcmp(a->boot_id, b->boot_id) == 0 &&
               a->pidns == b->pidns && a->mode == b->mode && a->stale_ms == b->stale_ms &&
               a->partner == b->partner && a->partner_start == b->partner_start &&
               strcmp(a->host, b->host) == 0;
}

static void check_round_trip(const dl_record *r)
{
        char text[DL_RECORD_MAX];
        int n = dl_record_format(r, text, sizeof text);
        FUZZ_CHECK(n > 0 && (size_t)n < sizeof text);
        dl_record back;
        FUZZ_CHECK(dl_record_parse(text, (size_t)n, &back) == 0);
        FUZZ_CHECK(record_equal(r, &back));
        char again[DL_RECORD_MAX];
        int m = dl_record_format(&back, again, sizeof again);
        FUZZ_CHECK(m == n && memcmp(text, again, (size_t)n) == 0);
        /* A buffer one byte short is refused, never overrun. */
        char small[DL_RECORD_MAX];
        FUZZ_CHECK(dl_record_format(r, small, (size_t)n) == -1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        /* 1: the input as record text. */
        dl_record r;
        if (dl_record_parse((const char *)data, size, &r) == 0) {
                FUZZ_CHECK(r.pid > 0);
                FUZZ_CHECK(strlen(r.token) == 32);
                FUZZ_CHECK(r.mode >= 0 && r.mode <= 2);
                FUZZ_CHECK(r.host[0] != '\0');
                FUZZ_CHECK(r.acquired_ns >= 0);
                FUZZ_CHECK(r.stale_ms <= 1000000000000000ULL);
                FUZZ_CHECK(r.partner >= 0 && (r.partner > 0 || r.partner_start == 0));
                check_round_trip(&r);
        }

        /* 2: the input as the values of a record. */
        static const char hexd[] = "0123456789abcdef";
        static const char bootc[] = "0123456789abcdefghijklmnopqrstuvwxyz-";
        struct fuzz_in in = {data, size};
        memset(&r, 0, sizeof r);
        r.pid = (pid_t)(fuzz_u64(&in, 4) & 0x7fffffff);
        if (r.pid == 0)
                r.pid = 1;
        r.start_time = fuzz_u64(&in, 8);
        for (int i = 0; i < 32; i++)
                r.token[i] = hexd[fuzz_u64(&in, 1) & 15];
        r.acquired_ns = (long long)(fuzz_u64(&in, 8) & 0x7fffffffffffffffULL);
        size_t bl = 1 + (size_t)(fuzz_u64(&in, 1) % 36);
        for (size_t i = 0; i < bl; i++)
                r.boot_id[i] = bootc[fuzz_u64(&in, 1) % (sizeof bootc - 1)];
        r.pidns = fuzz_u64(&in, 8);
        r.mode = (int)(fuzz_u64(&in, 1) % 3);
        r.stale_ms = fuzz_u64(&in, 8) % (1000000000000000ULL + 1);
        r.partner = (pid_t)(fuzz_u64(&in, 4) & 0x7fffffff);
        if (r.partner > 0)
                r.partner_start = fuzz_u64(&in, 8);
        const uint8_t *h;
        size_t hl = fuzz_bytes(&in, sizeof r.host - 1, &h);
        size_t k = 0;
        for (size_t i = 0; i < hl; i++)
                if (h[i] != 0)
                        r.host[k++] = (char)h[i];
        if (k == 0)
                r.host[k++] = 'h';
        r.host[k] = '\0';
        check_round_trip(&r);
        return 0;
}
