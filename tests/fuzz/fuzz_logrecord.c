/* fuzz_logrecord.c - the message-log record parser and serializer
 * (cgi-bin/logrecord.c).  Properties:
 *   1. any input: parse(line) either fails with a LOGRECORD_E* code and a
 *      zeroed record, or gives x with serialize(x) succeeding, and then
 *      parse(serialize(x)) == x and serialize is stable (same bytes);
 *   2. a record built from the input bytes (any no >= 1, time >= 0, any
 *      bytes in the text fields, with or without a post id):
 *      parse(serialize(x)) == x, the line ends in LF and holds exactly
 *      five TABs (six with an id) and that one LF. */
#include "fuzz.h"

#include "logrecord.h"

static void check_round_trip(const struct logrecord *x)
{
        char *line = NULL;
        size_t len = 0;
        int rc = logrecord_serialize(x, &line, &len);
        FUZZ_CHECK(rc == LOGRECORD_OK);
        FUZZ_CHECK(line != NULL && len > 0 && line[len - 1] == '\n' && line[len] == '\0');
        size_t tabs = 0, lfs = 0;
        for (size_t i = 0; i < len; i++) {
                tabs += line[i] == '\t';
                lfs += line[i] == '\n';
        }
        FUZZ_CHECK(tabs == (x->id[0] ? 6u : 5u) && lfs == 1);
        struct logrecord y;
        rc = logrecord_parse(line, len, &y);
        if (rc != LOGRECORD_OK)
                fprintf(stderr, "re-parse failed: %s\n", logrecord_strerror(rc));
        FUZZ_CHECK(rc == LOGRECORD_OK);
        FUZZ_CHECK(logrecord_equal(x, &y));
        char *again = NULL;
        size_t again_len = 0;
        FUZZ_CHECK(logrecord_serialize(&y, &again, &again_len) == LOGRECORD_OK);
        FUZZ_CHECK(again_len == len && memcmp(again, line, len) == 0);
        free(again);
        logrecord_free(&y);
        free(line);
}

static int set_text(struct fuzz_in *in, struct lr_text *t, size_t max)
{
        const uint8_t *p;
        size_t n = fuzz_bytes(in, max, &p);
        return lr_text_set(t, (const char *)p, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        /* 1: the input as a line. */
        struct logrecord x;
        int rc = logrecord_parse((const char *)data, size, &x);
        FUZZ_CHECK(rc >= LOGRECORD_OK && rc <= LOGRECORD_EID);
        FUZZ_CHECK(logrecord_strerror(rc) != NULL);
        if (rc == LOGRECORD_OK) {
                FUZZ_CHECK(x.no >= 1 && x.time >= 0);
                FUZZ_CHECK(x.name.ptr && x.subject.ptr && x.body.ptr && x.pwhash.ptr);
                check_round_trip(&x);
        } else {
                FUZZ_CHECK(x.name.ptr == NULL && x.body.ptr == NULL && x.no == 0);
        }
        logrecord_free(&x);

        /* 2: the input as the values of a record. */
        struct fuzz_in in = {data, size};
        struct logrecord r;
        memset(&r, 0, sizeof r);
        r.no = (long long)(fuzz_u64(&in, 8) & 0x7fffffffffffffffULL);
        r.time = (long long)(fuzz_u64(&in, 8) & 0x7fffffffffffffffULL);
        if (r.no == 0)
                r.no = 1;
        uint64_t id = fuzz_u64(&in, 8);
        if (id & 1) /* half of them with a post id */
                snprintf(r.id, sizeof r.id, "%016llx", (unsigned long long)id);
        if (set_text(&in, &r.name, 255) == LOGRECORD_OK && set_text(&in, &r.subject, 255) == LOGRECORD_OK &&
            set_text(&in, &r.body, 255) == LOGRECORD_OK && set_text(&in, &r.pwhash, 255) == LOGRECORD_OK)
                check_round_trip(&r);
        logrecord_free(&r);

        /* Out-of-range numbers are refused, never written. */
        struct logrecord bad;
        memset(&bad, 0, sizeof bad);
        bad.no = 0;
        char *line = (char *)1;
        size_t len = 1;
        FUZZ_CHECK(logrecord_serialize(&bad, &line, &len) == LOGRECORD_ENUMBER && line == NULL && len == 0);
        bad.no = 1;
        bad.time = -1;
        FUZZ_CHECK(logrecord_serialize(&bad, &line, &len) == LOGRECORD_ETIME && line == NULL);
        return 0;
}
