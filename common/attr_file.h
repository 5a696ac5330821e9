/*
 * Reading one small text value from a file: a sysfs or configfs attribute,
 * a key file. The kernel ends such values with a newline (and pads a few
 * with spaces); callers want the bare value. Shared by the node plugin
 * (krbd, NVMe sysfs), gantry-target (nvmet configfs) and the controller
 * (Ceph key files).
 */
#pragma once

#include <stddef.h>
#include <sys/types.h>

/*
 * Reads at most @size - 1 bytes of @path into @buf, NUL-terminated, with
 * trailing newlines and spaces removed. Returns the value's length, or
 * -errno when the file cannot be opened or read (then @buf is "").
 * @size must be at least 1.
 */
ssize_t gantry_attr_read(const char *path, char *buf, size_t size);
