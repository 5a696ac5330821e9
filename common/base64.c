/*
 * Decoding standard base64; see base64.h.
 */
#include <errno.h>
#include <string.h>

#include "base64.h"

static int sextet(unsigned char c)
{
        if (c >= 'A' && c <= 'Z')
                return c - 'A';
        if (c >= 'a' && c <= 'z')
                return c - 'a' + 26;
        if (c >= '0' && c <= '9')
                return c - '0' + 52;
        if (c == '+')
                return 62;
        if (c == '/')
                return 63;
        return -1;
}

int gantry_base64_decode(const char *in, size_t len, unsigned char *out, size_t size, size_t *ret_len)
{
        unsigned int acc = 0;
        size_t n = 0;
        int bits = 0, pad = 0, r = 0;

        for (size_t i = 0; i < len && r == 0; i++) {
                unsigned char c = (unsigned char)in[i];
                int v;

                if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
                        continue;
                if (c == '=') {
                        pad++;
                        continue;
                }
                v = sextet(c);
                if (v < 0 || pad) { /* a character after padding is invalid too */
                        r = -EINVAL;
                        break;
                }
                acc = (acc << 6) | (unsigned int)v;
                bits += 6;
                if (bits >= 8) {
                        bits -= 8;
                        if (n >= size) {
                                r = -ENOBUFS;
                                break;
                        }
                        out[n++] = (unsigned char)(acc >> bits);
                        acc &= (1u << bits) - 1;
                }
        }
        if (r == 0 && (bits >= 6 || pad > 2)) /* a lone trailing sextet carries no byte */
                r = -EINVAL;
        if (r < 0) {
                explicit_bzero(out, n);
                return r;
        }
        *ret_len = n;
        return 0;
}
