/*
 * Fuzz target: gantry-target's JSON-RPC handling (gantry-target/rpc*.c) -- the code
 * that sees an API caller's bytes: envelope, parameter decoding, and the
 * state and configfs edits a valid request makes.
 *
 * Input: JSON-RPC request bodies, one per line, handled in order (so that a
 * sequence can build a subsystem and then edit it). The agent runs against a stand-in
 * configfs directory and an lvstore in a temp directory made once; the state
 * starts empty for every input and the directories are emptied after it, so
 * inputs do not depend on each other.
 *
 * Speed: nearly all of an input's cost is system calls (the agent fsyncs and
 * renames its state, makes configfs directories, preallocates lvols). The
 * scratch directory is on a tmpfs when there is one ($GANTRY_FUZZ_TMPDIR,
 * else /dev/shm, else /tmp), where fsync and rename cost microseconds, not
 * milliseconds; emptying it afterwards uses unlinkat() by d_type (no stat
 * per entry) and skips configfs when it has no subdirectory. Preallocation on a
 * tmpfs is memory, so the harness caps file sizes (RLIMIT_FSIZE): a larger
 * lvol is refused with EFBIG, which drives the agent's rollback path.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "target_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FILE_SIZE_CAP (4u << 20) /* per lvol file: inputs may hold dozens */

static char root[4096];
static struct tgt_context ctx;

/*
 * Removes everything inside directory @fd, then closes it. getdents64
 * directly: readdir() over fdopendir() costs an fstat and an fcntl per
 * directory, and the d_type it returns saves a stat per entry.
 */
static void empty_dir(int fd)
{
        char buf[8192];
        long n;

        while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
                for (long off = 0; off < n;) {
                        struct dirent64 *e = (struct dirent64 *)(buf + off);
                        const char *name = e->d_name;
                        bool dir = e->d_type == DT_DIR;

                        off += e->d_reclen;
                        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
                                continue;
                        if (!dir && unlinkat(fd, name, 0) < 0 && errno == EISDIR) /* DT_UNKNOWN */
                                dir = true;
                        if (dir) {
                                int sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                                if (sub >= 0)
                                        empty_dir(sub);
                                unlinkat(fd, name, AT_REMOVEDIR);
                        }
                }
        }
        close(fd);
}

static void cleanup(void)
{
        struct stat st;
        int fd;

        /* the stand-in configfs root holds only directories (subsystems, ports, hosts) */
        fd = open(ctx.configfs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd >= 0 && fstat(fd, &st) == 0 && st.st_nlink <= 2)
                close(fd);
        else if (fd >= 0)
                empty_dir(fd);
        fd = open(ctx.lvstores[0].dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd >= 0)
                empty_dir(fd);
}

static void remove_all(void)
{
        cleanup();
        rmdir(ctx.configfs);
        rmdir(ctx.lvstores[0].dir);
        unlink(ctx.state_path);
        rmdir(root);
        json_decref(ctx.state);
        free(ctx.configfs);
        free(ctx.state_path);
        free(ctx.lvstores[0].dir);
}

static const char *scratch_dir(void)
{
        const char *dir = getenv("GANTRY_FUZZ_TMPDIR");

        if (dir && dir[0])
                return dir;
        if (access("/dev/shm", W_OK | X_OK) == 0)
                return "/dev/shm";
        return "/tmp";
}

static void setup(void)
{
        struct rlimit cap = { FILE_SIZE_CAP, FILE_SIZE_CAP };

        if (snprintf(root, sizeof(root), "%s/gantry-fuzz-target-%d-XXXXXX", scratch_dir(), (int)getpid()) >=
            (int)sizeof(root) ||
            !mkdtemp(root))
                abort();
        /* a write past the cap fails with EFBIG instead of raising SIGXFSZ */
        if (signal(SIGXFSZ, SIG_IGN) == SIG_ERR || setrlimit(RLIMIT_FSIZE, &cap) < 0)
                abort();
        if (asprintf(&ctx.configfs, "%s/cfs", root) < 0 || asprintf(&ctx.state_path, "%s/state.json", root) < 0 ||
            asprintf(&ctx.lvstores[0].dir, "%s/lvs", root) < 0)
                abort();
        mkdir(ctx.configfs, 0700);
        mkdir(ctx.lvstores[0].dir, 0700);
        strcpy(ctx.lvstores[0].name, "gantry");
        strcpy(ctx.lvstores[0].uuid, "5852db16-09c2-466c-806e-6d7bf754efe6");
        ctx.n_lvstores = 1;
        ctx.dhchap_supported = true; /* as a stand-in configfs answers: hosts' keys are taken */
        gantry_log_set_level(GANTRY_LOG_ERROR);
        atexit(remove_all);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *resp;

        if (!root[0])
                setup();
        ctx.state = json_pack("{s:i, s:{}, s:{}}", "version", 1, "bdevs", "subsystems");
        for (size_t off = 0; off < size;) {
                const uint8_t *nl = memchr(data + off, '\n', size - off);
                size_t len = nl ? (size_t)(nl - (data + off)) : size - off;

                resp = tgt_rpc_handle(&ctx, (const char *)data + off, len);
                free(resp);
                off += len + 1;
        }
        /* freed here, not at the next input: libFuzzer counts mallocs against
         * frees per input to look for leaks, and a state kept over would both
         * hide a real leak and make it re-run every input that built one */
        json_decref(ctx.state);
        ctx.state = NULL;
        cleanup();
        return 0;
}
