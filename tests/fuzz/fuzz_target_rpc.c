/*
 * Fuzz target: gantry-target's JSON-RPC handling (target/rpc.c) -- the code
 * that sees an API caller's bytes: envelope, parameter decoding, and the
 * state and configfs edits a valid request makes.
 *
 * Input: JSON-RPC request bodies, one per line, handled in order (so that a
 * sequence can build a subsystem and then edit it). The agent runs against a stand-in
 * configfs directory and an lvstore in a temp directory made once; the state
 * starts empty for every input and the directories are emptied after it, so
 * inputs do not depend on each other.
 */
#include <ftw.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "target_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char root[64];
static struct tgt_context ctx;

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st;
        (void)flag;
        if (ftw->level > 0) /* keep root/cfs and root/lvs themselves */
                remove(path);
        return 0;
}

static void cleanup(void)
{
        char path[128];

        snprintf(path, sizeof(path), "%s/cfs", root);
        nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        snprintf(path, sizeof(path), "%s/lvs", root);
        nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void remove_all(void)
{
        char path[128];

        cleanup();
        snprintf(path, sizeof(path), "%s/cfs", root);
        rmdir(path);
        snprintf(path, sizeof(path), "%s/lvs", root);
        rmdir(path);
        unlink(ctx.state_path);
        rmdir(root);
        json_decref(ctx.state);
        free(ctx.configfs);
        free(ctx.state_path);
        free(ctx.lvstores[0].dir);
}

static void setup(void)
{
        snprintf(root, sizeof(root), "/tmp/gantry-fuzz-target-%d-XXXXXX", (int)getpid());
        if (!mkdtemp(root))
                abort();
        if (asprintf(&ctx.configfs, "%s/cfs", root) < 0 || asprintf(&ctx.state_path, "%s/state.json", root) < 0 ||
            asprintf(&ctx.lvstores[0].dir, "%s/lvs", root) < 0)
                abort();
        mkdir(ctx.configfs, 0700);
        mkdir(ctx.lvstores[0].dir, 0700);
        strcpy(ctx.lvstores[0].name, "gantry");
        strcpy(ctx.lvstores[0].uuid, "5852db16-09c2-466c-806e-6d7bf754efe6");
        ctx.n_lvstores = 1;
        gantry_log_set_level(GANTRY_LOG_ERROR);
        atexit(remove_all);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *resp;

        if (!root[0])
                setup();
        json_decref(ctx.state);
        ctx.state = json_pack("{s:i, s:{}, s:{}}", "version", 1, "bdevs", "subsystems");
        for (size_t off = 0; off < size;) {
                const uint8_t *nl = memchr(data + off, '\n', size - off);
                size_t len = nl ? (size_t)(nl - (data + off)) : size - off;

                resp = tgt_rpc_handle(&ctx, (const char *)data + off, len);
                free(resp);
                off += len + 1;
        }
        cleanup();
        return 0;
}
