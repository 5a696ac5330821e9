/*
 * The IO stall detector of the node plugin: from the sampler's successive
 * readings of one pod's io.pressure ("some" total) and of its io.stat IOs
 * on one volume's device, it tells when the pod's IO to that volume hangs
 * -- the pod's tasks wait on IO most of a sampling interval while not one
 * new IO goes to the volume -- and how long the hang lasts, across as many
 * consecutive intervals as it spans. A stall becomes worth telling once its
 * accumulated stall time reaches the threshold (the node's
 * --io-stall-seconds): then, and only then, the detector says STARTED; when
 * that stall ends it says ENDED, once. A pod waiting flat out on a healthy
 * volume is not stalled (its IOs move); a volume the pod never did IO to
 * is not watched. Pure arithmetic over the times the caller gives, so tests
 * feed synthetic series; the event text is built here too.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define GANTRY_IO_STALL_DEFAULT_SECONDS 5
/* An interval counts as stalled when "some" stall covers this share of it. */
#define GANTRY_IO_STALL_SHARE 0.5

struct gantry_io_stall_config {
        uint64_t threshold_ms; /* the stall that is told; 0: detection off */
        double stalled_share;  /* 0: GANTRY_IO_STALL_SHARE */
};

/* One pod and volume's detector state; zero it to start. */
struct gantry_io_stall {
        bool have_last;
        uint64_t last_ms;       /* monotonic time of the last sample */
        uint64_t last_stall_us; /* its io.pressure "some" total */
        uint64_t last_rios, last_wios;
        bool io_seen;           /* the pod did IO to the volume since the baseline */
        bool last_was_write;    /* the direction of the last interval that moved IO */
        bool in_stall;
        uint64_t start_ms;      /* the sample before the first stalled interval */
        uint64_t end_ms;        /* the last stalled interval's end */
        uint64_t stalled_us;    /* "some" stall accumulated over the stalled intervals */
        bool reported;          /* STARTED was said for this stall */
        bool writes;            /* the stall hit writes (the IO that moved last was writes) */
};

enum gantry_io_stall_change {
        GANTRY_IO_STALL_NONE = 0,
        GANTRY_IO_STALL_STARTED, /* a stall reached the threshold: tell it */
        GANTRY_IO_STALL_ENDED,   /* a stall that was told ended: finish its story */
};

/*
 * Feeds one sample taken at monotonic @t_ms: @stall_us is io.pressure's
 * cumulative "some" total, @rios / @wios the cumulative IOs of io.stat on
 * the volume's device. A sample not later than the last one is ignored. A
 * counter that went back (the cgroup was made again) ends the stall in
 * progress (ENDED when it was told) and makes this sample the new
 * baseline. Returns what changed.
 */
enum gantry_io_stall_change gantry_io_stall_feed(struct gantry_io_stall *st,
                                                 const struct gantry_io_stall_config *config,
                                                 uint64_t t_ms, uint64_t stall_us, uint64_t rios,
                                                 uint64_t wios);

/* The length of the current (or just ended) stall, milliseconds of "some" stall. */
uint64_t gantry_io_stall_length_ms(const struct gantry_io_stall *st);

/* What a backend's published live state says, for the event's cause. */
struct gantry_io_stall_backend {
        const char *name;   /* the backend (clusterID / targetID); NULL or "": unknown */
        const char *state;  /* "Degraded", ...; NULL or "": its state is not known */
        const char *reason; /* the observer's reason; may be NULL */
};

/* Everything the event tells. */
struct gantry_io_stall_report {
        const char *tier;      /* "dataset", "checkpoint"; NULL: none said */
        bool writes;           /* writes stalled, else reads */
        const char *volume_id;
        uint64_t stalled_ms;
        time_t started_at;     /* wall clock (UTC in the text) */
        bool ongoing;          /* still stalled when told */
        struct gantry_io_stall_backend backend;
};

/* The event's reason. */
#define GANTRY_IO_STALL_REASON "IOStalled"

/*
 * The event text, e.g. "dataset reads stalled 23 s at 14:02:11 UTC on
 * volume X: backend ceph-a was Degraded (OSD_DOWN: 1 osds down)"; while
 * ongoing "dataset reads stalled since 14:02:11 UTC on volume X, 5 s so
 * far: backend ...". Without the backend's state the text ends after the
 * volume. Writes at most @size bytes to @buf, NUL-terminated; returns @buf.
 */
char *gantry_io_stall_message(const struct gantry_io_stall_report *r, char *buf, size_t size);
