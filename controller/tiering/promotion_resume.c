/*
 * Resume at controller start: a controller that was killed or
 * restarted leaves copies whose record says "copying". Without this they
 * would wait for the provisioner's next CreateVolume retry, whose backoff
 * grows to minutes; here a thread started with the controller finds them in
 * "gantry.copies" of every pool of every configured cluster (the same
 * listing as `gantryctl tier status`) and resumes each through
 * gantry_promotion_poll() under the volume's uuid lock, exactly as a retry
 * would, from its recorded position.
 *
 * Only CSI volumes are resumed (a journal record, not ready); copies of
 * `gantryctl tier promote` (key "image-...") resume when that command runs
 * again. A copy whose destination image is watched is not taken: another
 * controller replica may be copying it (only the leader's sidecars call
 * CreateVolume, but every replica starts), or the killed controller's watch
 * has not lapsed yet (osd_client_watch_timeout, 30 s by default). Those are
 * tried again every RETRY_MS until WAIT_S after start, then left to
 * CreateVolume. At most MAX_COPIES records are looked at. Every decision is
 * logged ("tier.resume").
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dataset_internal.h"
#include "log.h"
#include "record.h"
#include "tiering_internal.h"

#define MAX_COPIES 256
#define WAIT_S 90
#define RETRY_MS 2000

struct pending {
        char cluster[GANTRY_CONFIG_ID_MAX + 1];
        char pool[128];
        struct gantry_copier_record rec; /* without its position */
        bool settled;
};

static struct {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        pthread_t thread;
        bool started, stopping; /* under lock */
        const struct gantry_config *config;
        struct pending *pending;
        size_t n;
} self = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int collect(const char *cluster_id, const char *pool, const struct gantry_copier_record *rec,
                   void *arg)
{
        struct pending *p;

        (void)arg;
        if (strcmp(rec->kind, "promote") != 0 || strcmp(rec->state, "copying") != 0 ||
            strncmp(rec->id, "image-", 6) == 0)
                return 0;
        if (self.n == MAX_COPIES) {
                log_warn("tier.resume", "cluster=%s pool=%s id=%s result=skipped reason=more than %d "
                         "unfinished copies; the rest resume at CreateVolume's retry",
                         cluster_id, pool, rec->id, MAX_COPIES);
                return 0;
        }
        p = &self.pending[self.n++];
        memset(p, 0, sizeof(*p));
        snprintf(p->cluster, sizeof(p->cluster), "%s", cluster_id);
        snprintf(p->pool, sizeof(p->pool), "%s", pool);
        p->rec = *rec;
        p->rec.position = NULL; /* borrowed from the lister: poll reads the record again */
        return 0;
}

/* True when @image in @io has a watcher (or its watchers cannot be listed). */
static bool watched(rados_ioctx_t io, const char *image)
{
        rbd_image_watcher_t w[4];
        size_t n = 4;
        rbd_image_t img;
        int r;

        if (rbd_open_read_only(io, image, &img, NULL) < 0)
                return false; /* poll finds out what is missing */
        r = rbd_watchers_list(img, w, &n);
        rbd_close(img);
        if (r == 0)
                rbd_watchers_list_cleanup(w, n);
        return r < 0 || n > 0;
}

/*
 * Resumes the copy of @p: 0 when it is settled (started, running, done or
 * not ours), -EBUSY to try again later, -errno when it cannot be resumed.
 * @why says why in the last two cases.
 */
static int resume_one(struct pending *p, const char **why, struct gantry_error *err)
{
        const struct gantry_copier_record *rec = &p->rec;
        struct gantry_dataset_target dst = { 0 }, src = { 0 };
        struct gantry_promotion_request q = { 0 };
        struct gantry_journal_entry e;
        char lock[16 + sizeof(p->rec.id)];
        bool keep;
        int r;

        *why = "";
        /* a CreateVolume retry got there first */
        if (gantry_promotion_running(rec->id))
                return 0;
        r = gantry_dataset_target_open_pool(self.config, p->cluster, p->pool, NULL, 0, &dst, err);
        if (r < 0) {
                *why = "cannot open the destination pool";
                goto out;
        }
        r = gantry_journal_read(dst.io, GANTRY_JOURNAL_VOLUME, rec->id, &e);
        if (r < 0 || e.ready) {
                *why = r < 0 ? "no volume of that uuid" : "the volume is complete";
                r = r < 0 ? r : 0;
                goto out;
        }
        if (watched(dst.io, e.image)) {
                *why = "the image is watched (another controller copies it, or a killed one's "
                       "watch has not lapsed yet)";
                r = -EBUSY;
                goto out;
        }
        if (!(src.cluster = gantry_config_find_cluster(self.config, rec->src_cluster))) {
                *why = "its source cluster is not in the config";
                r = -ENOENT;
                goto out;
        }
        /* the source is read with its cluster's own (config) credentials, as CreateVolume does */
        r = gantry_ceph_credentials(src.cluster, NULL, 0, src.keybuf, sizeof(src.keybuf), &src.creds,
                                    err);
        if (r == 0)
                r = gantry_ceph_ioctx_by_id(src.cluster, &src.creds, rec->src_pool_id, &src.io, err);
        if (r < 0) {
                *why = "cannot open the source pool";
                goto out;
        }
        q.name = e.name;
        q.uuid = rec->id;
        q.dst_cluster = p->cluster;
        q.dst_io = dst.io;
        q.dst_image = e.image;
        q.size = e.size;
        q.src_cluster = src.cluster;
        q.src_io = src.io;
        q.src_image = rec->src_image;
        q.src_snap = rec->own_snap ? NULL : rec->src_snap;
        q.resume_only = true;
        /*
         * The lock only around the poll, as short as a CreateVolume retry
         * holds it: a retry that meets it answers ABORTED and comes again.
         */
        snprintf(lock, sizeof(lock), "volume:%s", rec->id);
        if (gantry_lock_try(lock) < 0) {
                *why = "a request on the volume is in progress";
                r = -EBUSY;
                goto out;
        }
        r = gantry_promotion_poll(&q, &keep, err);
        gantry_lock_release(lock);
        if (r == -EBUSY || r == 0)
                r = 0; /* started (ABORTED with its progress), running, or complete already */
        else
                *why = r == -ENOENT ? "nothing to resume (no record or no image yet)" : "poll failed";
out:
        gantry_dataset_target_close(&src);
        gantry_dataset_target_close(&dst);
        return r;
}

static bool stopping(void)
{
        bool stop;

        pthread_mutex_lock(&self.lock);
        stop = self.stopping;
        pthread_mutex_unlock(&self.lock);
        return stop;
}

/* Waits @ms or until stopping. Returns true when stopping. */
static bool pause_ms(unsigned ms)
{
        struct timespec until;
        bool stop;

        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += ms / 1000;
        until.tv_nsec += (long)(ms % 1000) * 1000000;
        if (until.tv_nsec >= 1000000000) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000;
        }
        pthread_mutex_lock(&self.lock);
        if (!self.stopping)
                pthread_cond_timedwait(&self.cond, &self.lock, &until);
        stop = self.stopping;
        pthread_mutex_unlock(&self.lock);
        return stop;
}

static void *resume_thread(void *arg)
{
        time_t deadline = time(NULL) + WAIT_S;
        size_t left, resumed = 0;

        (void)arg;
        /* a cluster that cannot be read is only reported: its copies wait for CreateVolume */
        gantry_controller_list_copies(self.config, collect, NULL, NULL);
        left = self.n;
        log_info("tier.resume_scan", "unfinished=%zu", self.n);
        while (left > 0) {
                bool last_round = time(NULL) >= deadline;

                for (size_t i = 0; i < self.n; i++) {
                        struct pending *p = &self.pending[i];
                        struct gantry_error err = { 0 };
                        const char *why;
                        int r;

                        if (p->settled || stopping())
                                continue; /* done, or stopping: the loop ends below */
                        r = resume_one(p, &why, &err);
                        if (r == -EBUSY && !last_round)
                                continue;
                        p->settled = true;
                        left--;
                        if (r == 0) {
                                resumed++;
                                log_info("tier.resume", "name=%s uuid=%s result=resumed", p->rec.name,
                                         p->rec.id);
                        } else {
                                log_warn("tier.resume", "name=%s uuid=%s result=left reason=%s%s%s "
                                         "(resumes at CreateVolume's retry)",
                                         p->rec.name, p->rec.id, why, err.msg[0] ? ": " : "",
                                         err.msg);
                        }
                }
                if (left > 0 && pause_ms(RETRY_MS))
                        break;
        }
        log_info("tier.resume_done", "unfinished=%zu resumed=%zu left=%zu", self.n, resumed,
                 self.n - resumed);
        return NULL;
}

void gantry_promotion_resume_start(const struct gantry_config *config)
{
        pthread_condattr_t attr;

        pthread_mutex_lock(&self.lock);
        if (self.started) {
                pthread_mutex_unlock(&self.lock);
                return;
        }
        self.config = config;
        self.stopping = false;
        self.n = 0;
        if (!(self.pending = calloc(MAX_COPIES, sizeof(*self.pending)))) {
                pthread_mutex_unlock(&self.lock);
                log_warn("tier.resume", "result=off reason=out of memory");
                return;
        }
        pthread_condattr_init(&attr);
        pthread_cond_init(&self.cond, &attr);
        pthread_condattr_destroy(&attr);
        if (pthread_create(&self.thread, NULL, resume_thread, NULL) != 0) {
                pthread_cond_destroy(&self.cond);
                free(self.pending);
                self.pending = NULL;
                pthread_mutex_unlock(&self.lock);
                log_warn("tier.resume", "result=off reason=cannot start a thread");
                return;
        }
        self.started = true;
        pthread_mutex_unlock(&self.lock);
}

void gantry_promotion_resume_stop(void)
{
        pthread_mutex_lock(&self.lock);
        if (!self.started) {
                pthread_mutex_unlock(&self.lock);
                return;
        }
        self.stopping = true;
        pthread_cond_broadcast(&self.cond);
        pthread_mutex_unlock(&self.lock);
        pthread_join(self.thread, NULL);
        pthread_mutex_lock(&self.lock);
        pthread_cond_destroy(&self.cond);
        free(self.pending);
        self.pending = NULL;
        self.started = false;
        pthread_mutex_unlock(&self.lock);
}
