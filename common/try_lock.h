/*
 * Try-locks by name, one table for the whole process: the controller's
 * per-volume and per-name locks, the checkpoint tier's, and the node's
 * per-volume ones (in --mode all they share it, so callers prefix their
 * keys: "volume:<uuid>", "ckpt:<uuid>", "node:<volume id>"). A second
 * operation on a held key is refused at once, never queued: the CSI spec
 * wants ABORTED and a retry from the CO, not a caller left waiting.
 */
#pragma once

#include "error.h"

/*
 * Takes the lock on @key. Returns 0, -EBUSY when it is held, -EAGAIN when
 * more keys are held than any CO keeps in flight (GANTRY_TRY_LOCK_MAX), or
 * -ENOMEM. Thread-safe.
 */
int gantry_lock_try(const char *key) GANTRY_MUST_CHECK;
/* Releases @key (a key not held: no-op). Thread-safe. */
void gantry_lock_release(const char *key);
