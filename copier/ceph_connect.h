/*
 * The Ceph connect of a process that must stop within a second or two:
 * rados_connect() waits up to client_mount_timeout for monitors that do not
 * answer (a blackholed address: the whole timeout), and nothing interrupts
 * it. gantry_ceph_connect_stoppable() runs it on a thread of its own and
 * gives up waiting when told to stop; the abandoned connect goes on alone
 * and shuts its handle down when it ends (or the process exits first).
 * Used by the controller's cached connections (controller/dataset) and by
 * gantry-target's drains.
 */
#pragma once

#include <rados/librados.h>
#include <stdatomic.h>

/*
 * Connects @handle (made and configured by the caller), checking @stop
 * (NULL: never) every 50 ms. Returns 0 (the caller owns the connected
 * handle), rados_connect()'s -errno (the caller still owns @handle and
 * shuts it down), or -ECANCELED when @stop was set first: @handle then
 * belongs to the connecting thread, which shuts it down; the caller must
 * not touch it again. @handle's configuration strings must stay valid only
 * until return (librados copied them at rados_conf_set()).
 */
int gantry_ceph_connect_stoppable(rados_t handle, const atomic_bool *stop);
