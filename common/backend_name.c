/*
 * Names of storage backends (see backend_name.h): pure string work, shared
 * by the controller's observer (the object names it writes) and the node
 * plugin (the object it reads for a volume's stall).
 */
#include "backend_name.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int gantry_backend_object_name(const char *id, char *buf, size_t size)
{
        size_t n = 0, start = 0, len = id ? strlen(id) : 0;

        if (len == 0 || len > GANTRY_BACKEND_NAME_MAX || size <= len)
                return -EINVAL;
        while (start < len && (id[start] == '-' || id[start] == '.' || id[start] == '_'))
                start++;
        for (size_t i = start; i < len; i++) {
                char c = id[i];
                if (c >= 'A' && c <= 'Z')
                        c = (char)(c - 'A' + 'a');
                else if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.'))
                        c = '-';
                buf[n++] = c;
        }
        while (n > 0 && (buf[n - 1] == '-' || buf[n - 1] == '.'))
                n--;
        buf[n] = '\0';
        return n ? 0 : -EINVAL;
}

int gantry_backend_of_volume(const char *volume_id, char *buf, size_t size,
                             const char **ret_tier)
{
        const char *tier, *p = volume_id;
        unsigned long len;
        char *end;

        if (!p)
                return -EINVAL;
        if (strncmp(p, "0001-", 5) == 0)
                tier = "dataset";
        else if (strncmp(p, "0002-", 5) == 0)
                tier = "checkpoint";
        else
                return -EINVAL;
        p += 5;
        if (strlen(p) < 5 || p[4] != '-')
                return -EINVAL;
        len = strtoul(p, &end, 16);
        if (end != p + 4 || len == 0 || len > GANTRY_BACKEND_NAME_MAX || len >= size)
                return -EINVAL;
        p += 5;
        if (strlen(p) < len + 1 || p[len] != '-')
                return -EINVAL;
        memcpy(buf, p, len);
        buf[len] = '\0';
        if (ret_tier)
                *ret_tier = tier;
        return 0;
}
