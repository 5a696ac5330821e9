/*
 * NVMe DH-HMAC-CHAP secrets in their text representation (NVMe base spec 2.0,
 * TP8006), the form nvme-cli's gen-dhchap-key prints, libnvme's
 * dhchap_key / dhchap_ctrl_key take and nvmet's hosts/<nqn>/dhchap_key
 * attribute holds:
 *
 *   DHHC-1:<tt>:<base64 of the secret followed by its CRC-32, little endian>:
 *
 * <tt> is the transform the secret goes through before use: 00 none,
 * 01 HMAC-SHA-256, 02 HMAC-SHA-384, 03 HMAC-SHA-512; the secret is 32, 48 or
 * 64 bytes (exactly the hash's length when a transform is named). Gantry
 * generates its secrets from /dev/urandom (getrandom) and parses every key it
 * is given, so a damaged key is refused by name before the kernel sees it.
 *
 * These are secrets: callers never log them and wipe them when done; the
 * errors of this module never quote the key.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define GANTRY_DHCHAP_SECRET_MAX 64
/* "DHHC-1:00:" + base64 of 68 bytes (92) + ":" */
#define GANTRY_DHCHAP_KEY_TEXT_MAX 103

struct gantry_dhchap_key {
        unsigned transform;                            /* 0..3 */
        size_t len;                                    /* 32, 48 or 64 */
        unsigned char secret[GANTRY_DHCHAP_SECRET_MAX];
};

/*
 * Parses the @len bytes of @text (one trailing newline allowed, as a key file
 * has) into @ret. Returns 0, or -EINVAL with @err saying what is wrong (the
 * prefix, the transform, the length, the base64, the CRC) without quoting
 * the key. @ret is untouched on failure; the parser's copies are wiped.
 */
int gantry_dhchap_key_parse(const char *text, size_t len, struct gantry_dhchap_key *ret,
                            struct gantry_error *err) GANTRY_MUST_CHECK;

/* Writes @key's text form into @out (room for GANTRY_DHCHAP_KEY_TEXT_MAX + 1). */
void gantry_dhchap_key_format(const struct gantry_dhchap_key *key, char out[GANTRY_DHCHAP_KEY_TEXT_MAX + 1]);

/*
 * A new 32-byte secret, transform 00 (as nvme-cli's gen-dhchap-key makes by
 * default), from the kernel's random source, in text form in @out.
 * Returns 0 or -errno.
 */
int gantry_dhchap_key_generate(char out[GANTRY_DHCHAP_KEY_TEXT_MAX + 1]) GANTRY_MUST_CHECK;

/* Whether @a and @b (text forms, NULL allowed) hold the same key; constant time in the text. */
int gantry_dhchap_key_equal(const char *a, const char *b);

/*
 * The key of @host_nqn in directory @dir: file "<@host_nqn><@suffix>" (suffix
 * ".key" for the host's key, ".ctrl.key" for the controller's), read into
 * @out and checked. When it does not exist and @create: a new key is
 * generated and written there first (mode 0600, atomically: a concurrent
 * maker's key wins and is the one read). -ENOENT when absent and not
 * @create; errors name the file, never the key.
 */
int gantry_dhchap_key_file_load(const char *dir, const char *host_nqn, const char *suffix, bool create,
                                char out[GANTRY_DHCHAP_KEY_TEXT_MAX + 1], struct gantry_error *err) GANTRY_MUST_CHECK;

/* The CRC-32 (IEEE 802.3, as zlib's crc32()) of @len bytes at @p. */
uint32_t gantry_dhchap_crc32(const unsigned char *p, size_t len);
