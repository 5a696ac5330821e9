/*
 * DH-HMAC-CHAP secrets: parsing, formatting and generating the DHHC-1 text
 * form; see dhchap_key.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attr_file.h"

#include "base64.h"
#include "dhchap_key.h"

#define PREFIX "DHHC-1:"

uint32_t gantry_dhchap_crc32(const unsigned char *p, size_t len)
{
        uint32_t crc = 0xffffffffu;

        for (size_t i = 0; i < len; i++) {
                crc ^= p[i];
                for (int b = 0; b < 8; b++)
                        crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
        }
        return ~crc;
}

static size_t transform_len(unsigned t)
{
        static const size_t lens[] = { 0, 32, 48, 64 };
        return lens[t];
}

int gantry_dhchap_key_parse(const char *text, size_t len, struct gantry_dhchap_key *ret,
                            struct gantry_error *err)
{
        unsigned char buf[GANTRY_DHCHAP_SECRET_MAX + 4 + 3];
        const char *b64;
        size_t b64_len, n = 0;
        unsigned t;
        uint32_t crc;
        int r;

        if (!text)
                return gantry_error_set(err, EINVAL, "dhchap key: missing");
        if (len > 0 && text[len - 1] == '\n')
                len--;
        if (len > GANTRY_DHCHAP_KEY_TEXT_MAX)
                return gantry_error_set(err, EINVAL, "dhchap key: longer than %d characters",
                                        GANTRY_DHCHAP_KEY_TEXT_MAX);
        if (len < sizeof(PREFIX) - 1 + 4 || memcmp(text, PREFIX, sizeof(PREFIX) - 1) != 0)
                return gantry_error_set(err, EINVAL, "dhchap key: does not start with \"DHHC-1:\"");
        text += sizeof(PREFIX) - 1;
        len -= sizeof(PREFIX) - 1;
        if (text[0] != '0' || text[1] < '0' || text[1] > '3' || text[2] != ':')
                return gantry_error_set(err, EINVAL, "dhchap key: transform must be 00, 01, 02 or 03");
        t = (unsigned)(text[1] - '0');
        b64 = text + 3;
        b64_len = len - 3;
        if (b64_len == 0 || b64[b64_len - 1] != ':')
                return gantry_error_set(err, EINVAL, "dhchap key: must end with \":\"");
        b64_len--;
        for (size_t i = 0; i < b64_len; i++)
                if (b64[i] == ':' || b64[i] == ' ' || b64[i] == '\t' || b64[i] == '\n' || b64[i] == '\r')
                        return gantry_error_set(err, EINVAL, "dhchap key: unexpected character in the secret");
        r = gantry_base64_decode(b64, b64_len, buf, sizeof(buf), &n);
        if (r < 0)
                return gantry_error_set(err, EINVAL, "dhchap key: the secret is not valid base64");
        if (n != 36 && n != 52 && n != 68) {
                explicit_bzero(buf, sizeof(buf));
                return gantry_error_set(err, EINVAL, "dhchap key: the secret must be 32, 48 or 64 bytes "
                                        "(decoded %zu with its CRC)", n);
        }
        n -= 4;
        if (t != 0 && transform_len(t) != n) {
                explicit_bzero(buf, sizeof(buf));
                return gantry_error_set(err, EINVAL, "dhchap key: transform %02u needs a %zu-byte secret, "
                                        "not %zu", t, transform_len(t), n);
        }
        crc = (uint32_t)buf[n] | (uint32_t)buf[n + 1] << 8 | (uint32_t)buf[n + 2] << 16 |
              (uint32_t)buf[n + 3] << 24;
        if (crc != gantry_dhchap_crc32(buf, n)) {
                explicit_bzero(buf, sizeof(buf));
                return gantry_error_set(err, EINVAL, "dhchap key: CRC-32 mismatch (the key is damaged)");
        }
        ret->transform = t;
        ret->len = n;
        memcpy(ret->secret, buf, n);
        explicit_bzero(buf, sizeof(buf));
        return 0;
}

static void base64_encode(const unsigned char *in, size_t len, char *out)
{
        static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        size_t o = 0;

        for (size_t i = 0; i < len; i += 3) {
                uint32_t v = (uint32_t)in[i] << 16;
                size_t rest = len - i;

                if (rest > 1)
                        v |= (uint32_t)in[i + 1] << 8;
                if (rest > 2)
                        v |= in[i + 2];
                out[o++] = alphabet[(v >> 18) & 63];
                out[o++] = alphabet[(v >> 12) & 63];
                out[o++] = rest > 1 ? alphabet[(v >> 6) & 63] : '=';
                out[o++] = rest > 2 ? alphabet[v & 63] : '=';
        }
        out[o] = '\0';
}

void gantry_dhchap_key_format(const struct gantry_dhchap_key *key, char out[GANTRY_DHCHAP_KEY_TEXT_MAX + 1])
{
        unsigned char buf[GANTRY_DHCHAP_SECRET_MAX + 4];
        uint32_t crc = gantry_dhchap_crc32(key->secret, key->len);
        size_t o;

        memcpy(buf, key->secret, key->len);
        buf[key->len] = (unsigned char)crc;
        buf[key->len + 1] = (unsigned char)(crc >> 8);
        buf[key->len + 2] = (unsigned char)(crc >> 16);
        buf[key->len + 3] = (unsigned char)(crc >> 24);
        memcpy(out, PREFIX, sizeof(PREFIX) - 1);
        o = sizeof(PREFIX) - 1;
        out[o++] = '0';
        out[o++] = (char)('0' + key->transform);
        out[o++] = ':';
        base64_encode(buf, key->len + 4, out + o);
        o += strlen(out + o);
        out[o++] = ':';
        out[o] = '\0';
        explicit_bzero(buf, sizeof(buf));
}

int gantry_dhchap_key_generate(char out[GANTRY_DHCHAP_KEY_TEXT_MAX + 1])
{
        struct gantry_dhchap_key k = { .transform = 0, .len = 32 };
        size_t got = 0;

        while (got < k.len) {
                ssize_t n = getrandom(k.secret + got, k.len - got, 0);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                got += (size_t)n;
        }
        gantry_dhchap_key_format(&k, out);
        explicit_bzero(&k, sizeof(k));
        return 0;
}

int gantry_dhchap_key_equal(const char *a, const char *b)
{
        size_t la, lb;
        unsigned char d = 0;

        if (!a || !b)
                return a == b;
        la = strlen(a);
        lb = strlen(b);
        if (la != lb)
                return 0;
        for (size_t i = 0; i < la; i++)
                d |= (unsigned char)(a[i] ^ b[i]);
        return d == 0;
}

int gantry_dhchap_key_file_load(const char *dir, const char *host_nqn, const char *suffix, bool create,
                                char out[GANTRY_DHCHAP_KEY_TEXT_MAX + 1], struct gantry_error *err)
{
        char path[PATH_MAX], tmp[PATH_MAX], buf[GANTRY_DHCHAP_KEY_TEXT_MAX + 2];
        struct gantry_dhchap_key k;
        struct gantry_error kerr = { 0 };
        ssize_t n;
        int fd, r;

        if (!dir)
                return gantry_error_set(err, ENOENT, "dhchapKeyDir: not set in the driver config");
        if (strchr(host_nqn, '/') || snprintf(path, sizeof(path), "%s/%s%s", dir, host_nqn, suffix) >= (int)sizeof(path))
                return gantry_error_set(err, EINVAL, "host %s: not usable as a key file name", host_nqn);
        n = gantry_attr_read(path, buf, sizeof(buf));
        if (n == -ENOENT && create) {
                char key[GANTRY_DHCHAP_KEY_TEXT_MAX + 1];

                snprintf(tmp, sizeof(tmp), "%s/.%s%s.XXXXXX", dir, host_nqn, suffix);
                fd = mkstemp(tmp);
                if (fd < 0)
                        return gantry_error_set(err, errno, "%s: cannot make a key file: %s", dir, strerror(errno));
                r = gantry_dhchap_key_generate(key);
                if (r == 0 && (fchmod(fd, 0600) < 0 || write(fd, key, strlen(key)) != (ssize_t)strlen(key) ||
                               fsync(fd) < 0))
                        r = -errno;
                explicit_bzero(key, sizeof(key));
                close(fd);
                /* link(2) fails with EEXIST when another maker was first: its key is the one */
                if (r == 0 && link(tmp, path) < 0 && errno != EEXIST)
                        r = -errno;
                unlink(tmp);
                if (r < 0)
                        return gantry_error_set(err, -r, "%s: cannot write a new key: %s", path, strerror(-r));
                n = gantry_attr_read(path, buf, sizeof(buf));
        }
        if (n == -ENOENT)
                return gantry_error_set(err, ENOENT, "%s: no DH-HMAC-CHAP key for host %s", path, host_nqn);
        if (n < 0)
                return gantry_error_set(err, (int)-n, "%s: cannot read: %s", path, strerror((int)-n));
        if ((r = gantry_dhchap_key_parse(buf, (size_t)n, &k, &kerr)) < 0) {
                explicit_bzero(buf, sizeof(buf));
                return gantry_error_set(err, EINVAL, "%s: %s", path, kerr.msg);
        }
        explicit_bzero(&k, sizeof(k));
        memcpy(out, buf, (size_t)n + 1 > GANTRY_DHCHAP_KEY_TEXT_MAX + 1 ? GANTRY_DHCHAP_KEY_TEXT_MAX + 1 : (size_t)n + 1);
        out[GANTRY_DHCHAP_KEY_TEXT_MAX] = '\0';
        explicit_bzero(buf, sizeof(buf));
        return 0;
}
