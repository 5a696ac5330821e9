/*
 * Whether a promoted copy is in use (copy_in_use.c): VolumeAttachments of
 * our driver, read through the Kubernetes API (the watchers on its image:
 * gantry_image_watched() of dataset/).
 */
#pragma once

#include <rados/librados.h>
#include <rbd/librbd.h>
#include <stddef.h>

#include "error.h"

struct gantry_kube_client;
struct gantry_attachments;

/*
 * Lists the VolumeAttachments of csi.gantry.io (every page) into a new
 * *@ret (free with gantry_attachments_free). -ENOTCONN / -EACCES when the
 * API cannot be read.
 */
int gantry_attachments_list(struct gantry_kube_client *client, struct gantry_attachments **ret,
                            struct gantry_error *err);
/* The node PV @pv is attached to, or NULL (borrowed). @a may be NULL: none. */
const char *gantry_attachments_node(const struct gantry_attachments *a, const char *pv);
void gantry_attachments_free(struct gantry_attachments *a);
