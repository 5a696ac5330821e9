/*
 * The records of applied caps: one small text file per published target
 * path in the plugin's state dir, so that a restarted plugin knows every cap
 * it must re-apply (and every line it must take back). key=value lines, no
 * secret in them; written to a temporary file, synced and renamed.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attr_file.h"
#include "qos_internal.h"

int gantry_qos_record_path(const char *state_dir, const char *target_path, char *buf, size_t size)
{
        uint64_t h = 14695981039346656037ULL; /* FNV-1a */
        int n;

        for (const char *p = target_path; *p; p++)
                h = (h ^ (unsigned char)*p) * 1099511628211ULL;
        n = snprintf(buf, size, "%s/qos-%016llx.rec", state_dir, (unsigned long long)h);
        return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

int gantry_qos_record_write(const char *state_dir, const struct qos_record *rec)
{
        char path[GANTRY_QOS_PATH_MAX];
        char *text = NULL;
        int n, r;

        if ((r = gantry_qos_record_path(state_dir, rec->target_path, path, sizeof(path))) < 0)
                return r;
        n = asprintf(&text,
                     "target_path=%s\nvolume_id=%s\npod_uid=%s\npod_namespace=%s\npod_name=%s\njob=%s\n"
                     "dev=%u:%u\npolicy=%s\nburst_factor=%.6g\n"
                     "declared=%llu %llu %llu %llu\n",
                     rec->target_path, rec->volume_id, rec->pod_uid, rec->pod_namespace,
                     rec->pod_name, rec->job, rec->dev_major, rec->dev_minor,
                     gantry_qos_policy_name(rec->policy), rec->burst_factor,
                     (unsigned long long)rec->declared.rbps, (unsigned long long)rec->declared.wbps,
                     (unsigned long long)rec->declared.riops,
                     (unsigned long long)rec->declared.wiops);
        if (n < 0)
                return -ENOMEM;
        r = gantry_file_write_atomic(path, text, (size_t)n);
        free(text);
        return r;
}

static bool copy(char *dst, size_t size, const char *src)
{
        size_t len = strlen(src);

        if (len >= size)
                return false;
        memcpy(dst, src, len + 1);
        return true;
}

int gantry_qos_record_read(const char *path, struct qos_record *ret)
{
        struct qos_record rec = { .burst_factor = 1 };
        char line[GANTRY_QOS_PATH_MAX + 64];
        unsigned seen = 0;
        bool ok = true;
        FILE *f;

        f = fopen(path, "re");
        if (!f)
                return -errno;
        while (ok && fgets(line, sizeof(line), f)) {
                char *eq = strchr(line, '='), *v;
                size_t len = strlen(line);

                if (len && line[len - 1] == '\n')
                        line[--len] = '\0';
                if (!eq) {
                        ok = false;
                        break;
                }
                *eq = '\0';
                v = eq + 1;
                if (!strcmp(line, "target_path"))
                        ok = copy(rec.target_path, sizeof(rec.target_path), v), seen |= 1;
                else if (!strcmp(line, "volume_id"))
                        ok = copy(rec.volume_id, sizeof(rec.volume_id), v), seen |= 2;
                else if (!strcmp(line, "pod_uid"))
                        ok = copy(rec.pod_uid, sizeof(rec.pod_uid), v), seen |= 4;
                else if (!strcmp(line, "pod_namespace"))
                        ok = copy(rec.pod_namespace, sizeof(rec.pod_namespace), v);
                else if (!strcmp(line, "pod_name"))
                        ok = copy(rec.pod_name, sizeof(rec.pod_name), v);
                else if (!strcmp(line, "job"))
                        ok = copy(rec.job, sizeof(rec.job), v);
                else if (!strcmp(line, "dev"))
                        ok = sscanf(v, "%u:%u", &rec.dev_major, &rec.dev_minor) == 2, seen |= 8;
                else if (!strcmp(line, "policy"))
                        ok = gantry_qos_policy_parse("policy", v, &rec.policy, NULL) == 0;
                else if (!strcmp(line, "burst_factor"))
                        ok = sscanf(v, "%lf", &rec.burst_factor) == 1 && rec.burst_factor >= 1;
                else if (!strcmp(line, "declared")) {
                        unsigned long long a, b, c, d;

                        ok = sscanf(v, "%llu %llu %llu %llu", &a, &b, &c, &d) == 4;
                        rec.declared = (struct gantry_qos_rates){ a, b, c, d };
                        seen |= 16;
                }
        }
        fclose(f);
        if (!ok || seen != 31)
                return -EINVAL;
        *ret = rec;
        return 0;
}

int gantry_qos_record_remove(const char *state_dir, const char *target_path)
{
        char path[GANTRY_QOS_PATH_MAX];
        int r;

        if ((r = gantry_qos_record_path(state_dir, target_path, path, sizeof(path))) < 0)
                return r;
        return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
}
