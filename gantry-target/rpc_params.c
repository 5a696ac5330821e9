/*
 * The decoding of gantry-target's JSON-RPC parameters that every method
 * group shares: strings, integers, booleans, names safe as file names,
 * NQNs, NGUIDs and UUIDs, each refused with the parameter named (SPDK's
 * "Invalid parameters" answer), and the sizes of new lvols.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "rpc_internal.h"

/* ---- parameter decoding ---- */

int tgt_param_str(json_t *obj, const char *where, const char *key, bool required, size_t max,
                  const char **ret, struct gantry_error *err)
{
        json_t *v = json_object_get(obj, key);

        *ret = NULL;
        if (!v) {
                if (required)
                        return gantry_error_set(err, EINVAL, "%s%s: required", where, key);
                return 0;
        }
        if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > max)
                return gantry_error_set(err, EINVAL, "%s%s: must be a string of 1 to %zu bytes",
                                        where, key, max);
        *ret = json_string_value(v);
        return 0;
}

int tgt_param_u64(json_t *obj, const char *key, uint64_t max, uint64_t *ret, bool *ret_set,
                  struct gantry_error *err)
{
        json_t *v = json_object_get(obj, key);

        *ret_set = v != NULL;
        if (!v)
                return 0;
        if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64_t)json_integer_value(v) > max)
                return gantry_error_set(err, EINVAL, "%s: must be an integer from 0 to %llu", key,
                                        (unsigned long long)max);
        *ret = (uint64_t)json_integer_value(v);
        return 0;
}

int tgt_param_bool(json_t *obj, const char *key, bool def, bool *ret, struct gantry_error *err)
{
        json_t *v = json_object_get(obj, key);

        if (!v) {
                *ret = def;
                return 0;
        }
        if (!json_is_boolean(v))
                return gantry_error_set(err, EINVAL, "%s: must be a boolean", key);
        *ret = json_is_true(v);
        return 0;
}

/* [A-Za-z0-9._-], not starting with '.': safe as a file name */
bool tgt_param_valid_name(const char *s, size_t max)
{
        size_t n = strlen(s);

        if (n == 0 || n > max || s[0] == '.')
                return false;
        for (; *s; s++)
                if (!isalnum((unsigned char)*s) && *s != '.' && *s != '_' && *s != '-')
                        return false;
        return true;
}

/* an NQN is a configfs directory name: "nqn." and [A-Za-z0-9.:_-] only */
static bool valid_nqn(const char *s)
{
        size_t n = strlen(s);

        if (n < 5 || n > TGT_NQN_MAX || strncmp(s, "nqn.", 4) != 0)
                return false;
        for (; *s; s++)
                if (!isalnum((unsigned char)*s) && !strchr(".:_-", *s))
                        return false;
        return true;
}

int tgt_param_nqn(json_t *obj, const char *key, const char **ret, struct gantry_error *err)
{
        int r = tgt_param_str(obj, "", key, true, TGT_NQN_MAX, ret, err);

        if (r < 0)
                return r;
        if (!valid_nqn(*ret))
                return gantry_error_set(err, EINVAL,
                                        "%s: must start with \"nqn.\" and hold only "
                                        "[A-Za-z0-9.:_-], at most %d bytes",
                                        key, TGT_NQN_MAX);
        return 0;
}

/* Copies @in as 32 lower-case hex digits (dashes dropped) into @out. */
bool tgt_param_nguid(const char *in, char out[33])
{
        size_t n = 0;

        for (; *in; in++) {
                if (*in == '-')
                        continue;
                if (!isxdigit((unsigned char)*in) || n >= 32)
                        return false;
                out[n++] = (char)tolower((unsigned char)*in);
        }
        out[n] = '\0';
        return n == 32;
}

bool tgt_param_valid_uuid(const char *s)
{
        if (strlen(s) != 36)
                return false;
        for (int i = 0; i < 36; i++) {
                if (i == 8 || i == 13 || i == 18 || i == 23) {
                        if (s[i] != '-')
                                return false;
                } else if (!isxdigit((unsigned char)s[i])) {
                        return false;
                }
        }
        return true;
}

void tgt_random_uuid(char out[37])
{
        unsigned char b[16] = { 0 };

        if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
                for (size_t i = 0; i < sizeof(b); i++)
                        b[i] = (unsigned char)random();
        b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
        b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
        snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
                 b[13], b[14], b[15]);
}

int tgt_param_size(json_t *p, uint64_t *ret, struct gantry_error *err)
{
        uint64_t mib = 0, bytes = 0;
        bool has_mib, has_bytes;
        int r;

        if ((r = tgt_param_u64(p, "size_in_mib", UINT64_MAX >> 20, &mib, &has_mib, err)) < 0 ||
            (r = tgt_param_u64(p, "size", INT64_MAX, &bytes, &has_bytes, err)) < 0)
                return r;
        if (has_mib == has_bytes)
                return gantry_error_set(err, EINVAL, "size_in_mib: required (or size in bytes)");
        *ret = has_mib ? mib << 20 : bytes;
        if (*ret == 0 || *ret % 4096)
                return gantry_error_set(err, EINVAL, "size_in_mib: must be > 0 (size: a multiple of 4096)");
        return 0;
}
