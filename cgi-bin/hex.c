/* hex.c - lower-case hex (see hex.h). */
#include "hex.h"

void hex_encode(const unsigned char *in, size_t n, char *out)
{
        static const char digits[] = "0123456789abcdef";
        for (size_t i = 0; i < n; i++) {
                out[2 * i] = digits[in[i] >> 4];
                out[2 * i + 1] = digits[in[i] & 15];
        }
        out[2 * n] = '\0';
}
