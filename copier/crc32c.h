/*
 * CRC-32C (Castagnoli) as Ceph computes it for its checksum op
 * (rados_read_op_checksum with LIBRADOS_CHECKSUM_TYPE_CRC32C): the running
 * register is taken and returned as is, with no inversion before or after,
 * so a caller passes the same seed it sends to the OSD and compares the
 * result with the OSD's answer directly.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* @crc updated with @len bytes at @buf (NULL: @len zero bytes). Uses the CPU's CRC32 instruction where it has one. */
uint32_t gantry_copier_crc32c(uint32_t crc, const void *buf, size_t len);
