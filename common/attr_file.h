/*
 * Reading one small text value from a file: a sysfs or configfs attribute,
 * a key or token file, a PEM file. The kernel ends such values with a
 * newline (and pads a few with spaces), files written on Windows end lines
 * with "\r\n"; callers want the bare value. Shared by the node plugin
 * (krbd, NVMe sysfs), gantry-target (nvmet configfs, its token and TLS
 * files) and the controller (Ceph key files, gantry-target tokens).
 */
#pragma once

#include <stddef.h>
#include <sys/types.h>

/*
 * Reads @path into @buf, NUL-terminated, with trailing newlines ("\n" and
 * "\r") and spaces removed. Returns the value's length, or -errno (then
 * @buf is ""): the open() or read() error, or -EFBIG when the file holds
 * more than @size - 1 bytes (a value is never silently cut short).
 * @size must be at least 1.
 */
ssize_t gantry_attr_read(const char *path, char *buf, size_t size);
