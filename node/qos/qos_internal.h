/*
 * Private declarations of node/qos/: io.max lines (qos_cgroup.c) and the
 * per-target-path records in the state dir (qos_record.c).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "qos.h"

/* What is recorded for one published target path. */
struct qos_record {
        char target_path[GANTRY_QOS_PATH_MAX];
        char volume_id[GANTRY_QOS_NAME_MAX + 1];
        char pod_uid[GANTRY_QOS_NAME_MAX + 1];
        char pod_namespace[GANTRY_QOS_NAME_MAX + 1];
        char pod_name[GANTRY_QOS_NAME_MAX + 1];
        char job[GANTRY_BW_JOB_MAX]; /* "" when none (and in records of older plugins) */
        unsigned dev_major, dev_minor;
        struct gantry_qos_rates declared;
        enum gantry_qos_policy policy;
        double burst_factor;
        /* not persisted: found again at each apply */
        char cgroup_dir[GANTRY_QOS_PATH_MAX];
        struct gantry_qos_rates in_force;
        bool enforced;
};

/* "MAJ:MIN rbps=.. wbps=.. riops=.. wiops=.." ("max" for 0). Returns its length or -errno. */
int gantry_qos_iomax_line(unsigned major, unsigned minor, const struct gantry_qos_rates *r,
                          char *buf, size_t size);

/*
 * Writes the line for (@major, @minor) to @cgroup_dir/io.max, first turning
 * the io controller on in the ancestors below @cgroup_root when io.max is
 * missing. Returns 0 or -errno.
 */
int gantry_qos_iomax_write(const char *cgroup_root, const char *cgroup_dir, unsigned major,
                           unsigned minor, const struct gantry_qos_rates *r);

/* Reads @cgroup_dir/io.max's line for the device into @ret (0 = max). 1 found, 0 not, -errno. */
int gantry_qos_iomax_read(const char *cgroup_dir, unsigned major, unsigned minor,
                          struct gantry_qos_rates *ret);

/* The record file of @target_path in @state_dir ("<dir>/qos-<hash>.rec"). */
int gantry_qos_record_path(const char *state_dir, const char *target_path, char *buf, size_t size);

/* Writes @rec atomically (tmp + rename + fsync). Returns 0 or -errno. */
int gantry_qos_record_write(const char *state_dir, const struct qos_record *rec);

/* Parses the record file @path into @ret. Returns 0, -ENOENT or -EINVAL (malformed). */
int gantry_qos_record_read(const char *path, struct qos_record *ret);

/* Removes @target_path's record (none: 0). */
int gantry_qos_record_remove(const char *state_dir, const char *target_path);
