/*
 * The pod's cgroup v2 and its io.max: where the kubelet puts a pod for each
 * cgroup driver and QoS class, and the one line per device written there.
 *
 * The kubelet names a pod's cgroup from its QoS class and UID
 * (pkg/kubelet/cm: GetPodContainerName, cgroupfs and systemd drivers):
 *   cgroupfs  kubepods/pod<uid>, kubepods/burstable/pod<uid>,
 *             kubepods/besteffort/pod<uid>
 *   systemd   kubepods.slice/kubepods-pod<uid_>.slice,
 *             kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice,
 *             kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod<uid_>.slice
 * where <uid_> is the UID with '-' turned into '_' (systemd reserves '-'
 * in a slice name for nesting). Guaranteed pods have no QoS level.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attr_file.h"
#include "qos_internal.h"

static bool uid_ok(const char *uid)
{
        size_t n = strlen(uid);

        if (n == 0 || n > 64)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((uid[i] >= '0' && uid[i] <= '9') || (uid[i] >= 'a' && uid[i] <= 'f') ||
                      (uid[i] >= 'A' && uid[i] <= 'F') || uid[i] == '-'))
                        return false;
        return true;
}

static bool is_dir(const char *path)
{
        struct stat st;

        return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int gantry_qos_cgroup_find(const char *cgroup_root, const char *uid, char *buf, size_t size)
{
        static const char *const qos[] = { "", "burstable", "besteffort" };
        char uid_[65], path[GANTRY_QOS_PATH_MAX];
        size_t n;

        if (!uid || !uid_ok(uid))
                return -EINVAL;
        n = strlen(uid);
        for (size_t i = 0; i <= n; i++)
                uid_[i] = uid[i] == '-' ? '_' : uid[i];
        for (size_t q = 0; q < sizeof(qos) / sizeof(qos[0]); q++) {
                int len;

                /* cgroupfs driver */
                len = snprintf(path, sizeof(path), "%s/kubepods/%s%spod%s", cgroup_root, qos[q],
                               *qos[q] ? "/" : "", uid);
                if (len > 0 && (size_t)len < sizeof(path) && is_dir(path))
                        goto found;
                /* systemd driver */
                if (*qos[q])
                        len = snprintf(path, sizeof(path),
                                       "%s/kubepods.slice/kubepods-%s.slice/kubepods-%s-pod%s.slice",
                                       cgroup_root, qos[q], qos[q], uid_);
                else
                        len = snprintf(path, sizeof(path),
                                       "%s/kubepods.slice/kubepods-pod%s.slice", cgroup_root, uid_);
                if (len > 0 && (size_t)len < sizeof(path) && is_dir(path))
                        goto found;
        }
        return 0;
found:
        if (strlen(path) >= size)
                return -ENAMETOOLONG;
        memcpy(buf, path, strlen(path) + 1);
        return 1;
}

bool gantry_qos_cgroup_v2(const char *cgroup_root)
{
        char path[GANTRY_QOS_PATH_MAX], ctl[512];
        const char *p;

        snprintf(path, sizeof(path), "%s/cgroup.controllers", cgroup_root);
        if (gantry_attr_read(path, ctl, sizeof(ctl)) < 0)
                return false;
        for (p = ctl; (p = strstr(p, "io")); p += 2)
                if ((p == ctl || p[-1] == ' ') && (p[2] == '\0' || p[2] == ' '))
                        return true;
        return false;
}

/*
 * Turns the io controller on for @dir's children in every ancestor of @dir
 * below @root (what the container runtimes do when they make a cgroup): a
 * pod's io.max exists only when its parent delegates io. Best effort.
 */
static void enable_io_down_to(const char *root, const char *dir)
{
        char path[GANTRY_QOS_PATH_MAX], ctl[GANTRY_QOS_PATH_MAX + 32];
        size_t rl = strlen(root);

        snprintf(path, sizeof(path), "%s", dir);
        /* from the root down: a child can only enable what its parent has */
        for (char *p = path + rl; p && *p; p = strchr(p + 1, '/')) {
                int fd;

                *p = '\0';
                snprintf(ctl, sizeof(ctl), "%s/cgroup.subtree_control", path);
                *p = '/';
                fd = open(ctl, O_WRONLY | O_CLOEXEC);
                if (fd >= 0) {
                        if (write(fd, "+io", 3) < 0) {
                                /* a parent that cannot delegate: io.max will say */
                        }
                        close(fd);
                }
        }
}

static void rate(char *buf, size_t size, const char *key, uint64_t v)
{
        if (v)
                snprintf(buf, size, " %s=%llu", key, (unsigned long long)v);
        else
                snprintf(buf, size, " %s=max", key);
}

int gantry_qos_iomax_line(unsigned major, unsigned minor, const struct gantry_qos_rates *r,
                          char *buf, size_t size)
{
        char rb[40], wb[40], ri[40], wi[40];
        int n;

        rate(rb, sizeof(rb), "rbps", r->rbps);
        rate(wb, sizeof(wb), "wbps", r->wbps);
        rate(ri, sizeof(ri), "riops", r->riops);
        rate(wi, sizeof(wi), "wiops", r->wiops);
        n = snprintf(buf, size, "%u:%u%s%s%s%s", major, minor, rb, wb, ri, wi);
        return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : n;
}

int gantry_qos_iomax_write(const char *cgroup_root, const char *cgroup_dir, unsigned major,
                           unsigned minor, const struct gantry_qos_rates *r)
{
        char path[GANTRY_QOS_PATH_MAX + 16], line[256];
        int fd, n, ret;

        if ((n = gantry_qos_iomax_line(major, minor, r, line, sizeof(line))) < 0)
                return n;
        snprintf(path, sizeof(path), "%s/io.max", cgroup_dir);
        if (access(path, F_OK) < 0 && errno == ENOENT && is_dir(cgroup_dir))
                enable_io_down_to(cgroup_root, cgroup_dir);
        /* O_TRUNC as a shell's "echo > io.max": the kernel merges per device */
        fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ret = write(fd, line, (size_t)n) == n ? 0 : (errno ? -errno : -EIO);
        close(fd);
        return ret;
}

int gantry_qos_iomax_read(const char *cgroup_dir, unsigned major, unsigned minor,
                          struct gantry_qos_rates *ret)
{
        char path[GANTRY_QOS_PATH_MAX + 16], line[512], dev[32];
        FILE *f;
        int found = 0;

        snprintf(path, sizeof(path), "%s/io.max", cgroup_dir);
        snprintf(dev, sizeof(dev), "%u:%u ", major, minor);
        f = fopen(path, "re");
        if (!f)
                return -errno;
        memset(ret, 0, sizeof(*ret));
        while (fgets(line, sizeof(line), f)) {
                char *tok, *save = NULL;

                if (strncmp(line, dev, strlen(dev)) != 0)
                        continue;
                found = 1;
                for (tok = strtok_r(line + strlen(dev), " \n", &save); tok;
                     tok = strtok_r(NULL, " \n", &save)) {
                        unsigned long long v = 0;
                        char key[8];

                        if (sscanf(tok, "%7[a-z]=%llu", key, &v) != 2)
                                continue; /* "max" */
                        if (!strcmp(key, "rbps"))
                                ret->rbps = v;
                        else if (!strcmp(key, "wbps"))
                                ret->wbps = v;
                        else if (!strcmp(key, "riops"))
                                ret->riops = v;
                        else if (!strcmp(key, "wiops"))
                                ret->wiops = v;
                }
        }
        fclose(f);
        return found;
}
