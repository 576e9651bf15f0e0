/* fuzz.h - shared by the fuzz harnesses (tests/fuzz/fuzz_*.c).
 *
 * Each harness defines LLVMFuzzerTestOneInput().  Built with clang and
 * -fsanitize=fuzzer it is a libFuzzer target (make fuzz, into build-fuzz/);
 * built with the normal compiler and tests/fuzz/replay.c it is a plain
 * program that feeds the files named on its command line (seed corpora and
 * regression inputs) to the same function (make test, tests/fuzz-regress.t).
 *
 * FUZZ_CHECK states a property; when it does not hold the input is a bug:
 * the harness prints what failed and aborts, so libFuzzer saves the input
 * and the replay program fails. */
#ifndef DIRLOCK_FUZZ_H
#define DIRLOCK_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_CHECK(cond)                                                                                     \
        do {                                                                                                 \
                if (!(cond)) {                                                                               \
                        fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__, __LINE__, #cond);          \
                        abort();                                                                             \
                }                                                                                            \
        } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A cursor over the fuzz input, for building structured values (a poor
 * man's FuzzedDataProvider): takes bytes from the front; past the end
 * every read gives zeros. */
struct fuzz_in {
        const uint8_t *p;
        size_t left;
};

static inline uint64_t fuzz_u64(struct fuzz_in *in, unsigned nbytes)
{
        uint64_t v = 0;
        for (unsigned i = 0; i < nbytes; i++) {
                v <<= 8;
                if (in->left > 0) {
                        v |= *in->p++;
                        in->left--;
                }
        }
        return v;
}

/* Up to `max` bytes, length taken from one byte of the input. */
static inline size_t fuzz_bytes(struct fuzz_in *in, size_t max, const uint8_t **out)
{
        size_t n = (size_t)fuzz_u64(in, 1);
        if (n > max)
                n = max;
        if (n > in->left)
                n = in->left;
        *out = in->p;
        in->p += n;
        in->left -= n;
        return n;
}

#endif
