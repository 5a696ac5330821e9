/*
 * Mount points, read back from /proc/self/mountinfo, and the mount(2) calls
 * the Node service makes. Nothing about what is staged or published is kept
 * in memory: a mount is the state, so a restarted plugin sees exactly what
 * the kernel sees. mountinfo's major:minor names the block device of a file
 * system; a raw block volume is a device node bind-mounted on a file, which
 * stat() of the mount point reveals.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "attr_file.h"
#include "host.h"

/* Copies one space-separated mountinfo field, decoding \NNN octal escapes. */
static const char *field(const char *p, char *out, size_t size)
{
        size_t n = 0;

        while (*p == ' ')
                p++;
        while (*p && *p != ' ' && *p != '\n') {
                char c = *p++;
                if (c == '\\' && p[0] >= '0' && p[0] <= '3' && p[1] >= '0' && p[1] <= '7' &&
                    p[2] >= '0' && p[2] <= '7') {
                        c = (char)(((p[0] - '0') << 6) | ((p[1] - '0') << 3) | (p[2] - '0'));
                        p += 3;
                }
                if (n + 1 < size)
                        out[n++] = c;
        }
        if (size)
                out[n] = '\0';
        return p;
}

int gantry_node_mountinfo_parse_line(const char *line, struct node_mount *ret)
{
        char tmp[NODE_PATH_MAX], opts[1024];
        unsigned maj, min;
        const char *p = line;
        struct node_mount m = { 0 };

        p = field(p, tmp, sizeof(tmp)); /* mount id */
        p = field(p, tmp, sizeof(tmp)); /* parent id */
        p = field(p, tmp, sizeof(tmp));
        if (sscanf(tmp, "%u:%u", &maj, &min) != 2)
                return -EINVAL;
        m.dev = makedev(maj, min);
        p = field(p, m.root, sizeof(m.root));
        p = field(p, m.target, sizeof(m.target));
        p = field(p, opts, sizeof(opts));
        if (!m.target[0] || !opts[0])
                return -EINVAL;
        m.readonly = strncmp(opts, "ro", 2) == 0 && (opts[2] == ',' || opts[2] == '\0');
        for (;;) { /* optional fields up to the "-" separator */
                p = field(p, tmp, sizeof(tmp));
                if (!tmp[0])
                        return -EINVAL;
                if (strcmp(tmp, "-") == 0)
                        break;
        }
        p = field(p, m.fstype, sizeof(m.fstype));
        field(p, m.source, sizeof(m.source));
        if (!m.fstype[0])
                return -EINVAL;
        *ret = m;
        return 0;
}

/* Calls @fn on each mount; stops when it returns non-zero and returns that. */
static int each_mount(int (*fn)(const struct node_mount *m, void *ud), void *ud)
{
        FILE *f = fopen("/proc/self/mountinfo", "re");
        char *line = NULL;
        size_t cap = 0;
        int r = 0;

        if (!f)
                return -errno;
        while (getline(&line, &cap, f) > 0) {
                struct node_mount m;
                if (gantry_node_mountinfo_parse_line(line, &m) < 0)
                        continue;
                r = fn(&m, ud);
                if (r)
                        break;
        }
        free(line);
        fclose(f);
        return r;
}

/*
 * @path as mountinfo spells it: symlinks resolved (a kubelet root that is a
 * symlink must not hide a mount), else without trailing slashes.
 */
static void canonical(const char *path, char *buf, size_t size)
{
        char *real = realpath(path, NULL);
        size_t n;

        snprintf(buf, size, "%s", real ? real : path);
        free(real);
        n = strlen(buf);
        while (n > 1 && buf[n - 1] == '/')
                buf[--n] = '\0';
}

struct find_ctx {
        const char *target;
        struct node_mount *ret;
        int found;
};

static int find_one(const struct node_mount *m, void *ud)
{
        struct find_ctx *c = ud;

        if (strcmp(m->target, c->target) == 0) {
                *c->ret = *m; /* keep going: the last one is on top */
                c->found = 1;
        }
        return 0;
}

int gantry_node_mount_find(const char *target, struct node_mount *ret)
{
        char path[NODE_PATH_MAX];
        struct node_mount m;
        struct find_ctx c = { .target = path, .ret = &m };
        int r;

        canonical(target, path, sizeof(path));
        r = each_mount(find_one, &c);
        if (r < 0)
                return r;
        if (c.found)
                *ret = m;
        return c.found;
}

struct count_ctx {
        dev_t dev;
        int n;
};

static int count_one(const struct node_mount *m, void *ud)
{
        struct count_ctx *c = ud;
        struct stat st;

        if (m->dev == c->dev)
                c->n++;
        else if (strcmp(m->fstype, "devtmpfs") == 0 && strcmp(m->root, "/") != 0 &&
                 stat(m->target, &st) == 0 && S_ISBLK(st.st_mode) && st.st_rdev == c->dev)
                c->n++; /* a device node bind-mounted for a raw block volume */
        return 0;
}

int gantry_node_mount_count_dev(dev_t dev)
{
        struct count_ctx c = { .dev = dev };
        int r = each_mount(count_one, &c);

        return r < 0 ? r : c.n;
}

int gantry_node_mount_device(const char *path, dev_t *ret_dev, struct node_mount *ret_mount)
{
        struct node_mount m;
        struct stat st;
        int r;

        if (stat(path, &st) < 0)
                return -errno;
        r = gantry_node_mount_find(path, &m);
        if (r <= 0)
                return r;
        *ret_dev = S_ISBLK(st.st_mode) ? st.st_rdev : m.dev;
        if (ret_mount)
                *ret_mount = m;
        return 1;
}

int gantry_node_umount(const char *target, struct gantry_error *err)
{
        if (umount2(target, UMOUNT_NOFOLLOW) == 0 || errno == EINVAL || errno == ENOENT)
                return 0;
        return gantry_error_set(err, errno, "cannot unmount %s: %s", target, strerror(errno));
}

int gantry_node_bind(const char *source, const char *target, bool readonly,
                     struct gantry_error *err)
{
        if (mount(source, target, NULL, MS_BIND, NULL) < 0)
                return gantry_error_set(err, errno, "cannot bind %s on %s: %s", source, target,
                                        strerror(errno));
        /* a bind mount takes MS_RDONLY only on a remount */
        if (readonly && mount(NULL, target, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL) < 0) {
                int e = errno;
                umount2(target, 0);
                return gantry_error_set(err, e, "cannot make %s read-only: %s", target,
                                        strerror(e));
        }
        return 0;
}

int gantry_node_mkdir_p(const char *path)
{
        char buf[NODE_PATH_MAX];
        size_t n = strlen(path);

        if (n == 0 || n >= sizeof(buf))
                return -EINVAL;
        memcpy(buf, path, n + 1);
        for (char *p = buf + 1; *p; p++) {
                if (*p != '/')
                        continue;
                *p = '\0';
                if (mkdir(buf, 0750) < 0 && errno != EEXIST)
                        return -errno;
                *p = '/';
        }
        if (mkdir(buf, 0750) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

int gantry_node_touch(const char *path)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640);

        if (fd < 0)
                return -errno;
        close(fd);
        return 0;
}

int gantry_node_dev_path(dev_t dev, char *buf, size_t size)
{
        char name[NAME_MAX + 1];
        int r = gantry_block_dev_name(dev, name, sizeof(name));

        if (r < 0)
                return r;
        if ((size_t)snprintf(buf, size, "/dev/%s", name) >= size)
                return -ENAMETOOLONG;
        return 0;
}
