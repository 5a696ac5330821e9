/*
 * Reading one small text value from a file: a sysfs or configfs attribute,
 * a key or token file, a PEM file. The kernel ends such values with a
 * newline (and pads a few with spaces), files written on Windows end lines
 * with "\r\n"; callers want the bare value. Shared by the node plugin
 * (krbd, NVMe sysfs), gantry-target (nvmet configfs, its token and TLS
 * files) and the controller (Ceph key files, gantry-target tokens).
 *
 * And reading a whole small file as it is (a kubeconfig, a CA bundle, a TLS
 * certificate or key): gantry_file_read(), for the extender's API client and
 * its HTTPS server. And the kernel's name of a block device, from the sysfs
 * link /sys/dev/block/MAJ:MIN (the node plugin's krbd and NVMe paths).
 *
 * And the write side for the node plugin's own small records (the stage
 * marker, the QoS cap records): gantry_file_write_atomic() replaces a file
 * whole or not at all, so a plugin killed mid-write never reads half a one.
 */
#pragma once

#include <stddef.h>
#include <sys/types.h>

#include "error.h"

/*
 * Reads @path into @buf, NUL-terminated, with trailing newlines ("\n" and
 * "\r") and spaces removed. Returns the value's length, or -errno (then
 * @buf is ""): the open() or read() error, or -EFBIG when the file holds
 * more than @size - 1 bytes (a value is never silently cut short).
 * @size must be at least 1.
 */
ssize_t gantry_attr_read(const char *path, char *buf, size_t size) GANTRY_MUST_CHECK;

/*
 * Reads all of @path, a regular file of at most @max bytes, unchanged (no
 * stripping; the content may hold NUL bytes). *ret_data is a new buffer
 * with a NUL after the content, owned by the caller (free(); wipe it first
 * if it holds a secret); *ret_len is the content's length. Returns 0, or
 * -errno with the outputs untouched: the open(), fstat() or read() error,
 * -EINVAL when @path is not a regular file, -EFBIG when it holds more than
 * @max bytes, -ENOMEM. A partly read buffer is wiped before it is freed.
 */
int gantry_file_read(const char *path, size_t max, char **ret_data, size_t *ret_len) GANTRY_MUST_CHECK;

/*
 * Writes the kernel's name of block device @dev ("rbd3", "nvme1n1": the last
 * component of the /sys/dev/block/MAJ:MIN link) into @buf. Returns 0, -ENODEV
 * when the device is gone, -ENAMETOOLONG when @size is too small.
 */
int gantry_block_dev_name(dev_t dev, char *buf, size_t size) GANTRY_MUST_CHECK;

/*
 * Replaces @path with the @len bytes of @data atomically: writes
 * "@path.tmp" (mode 0600, never through a symlink), fsyncs it and renames it
 * over @path. Returns 0, or -errno: the open(), write(), fsync() or rename()
 * error (-EIO for a short write), -ENAMETOOLONG when "@path.tmp" exceeds
 * PATH_MAX. On a failed write the temporary file is removed.
 */
int gantry_file_write_atomic(const char *path, const char *data, size_t len) GANTRY_MUST_CHECK;
