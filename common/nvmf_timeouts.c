/*
 * Checking the checkpoint volume's NVMe-oF controller timeouts; see
 * nvmf_timeouts.h.
 */
#include <errno.h>
#include <stdlib.h>

#include "nvmf_timeouts.h"

/* Whole seconds @min..@max from @s; -EINVAL for anything else (signs, spaces, units). */
static int parse_seconds(const char *s, long min, long max, long *ret)
{
        char *end;
        long v;

        if (!s[0] || s[0] < '0' || s[0] > '9')
                return -EINVAL;
        errno = 0;
        v = strtol(s, &end, 10);
        if (errno || *end || v < min || v > max)
                return -EINVAL;
        *ret = v;
        return 0;
}

int gantry_nvmf_timeouts_parse(const char *ctrl_loss_tmo, const char *reconnect_delay, const char *prefix,
                               struct gantry_nvmf_timeouts *ret, struct gantry_error *err)
{
        long loss = GANTRY_NVMF_CTRL_LOSS_TMO_S, delay = GANTRY_NVMF_RECONNECT_DELAY_S;

        if (ctrl_loss_tmo && parse_seconds(ctrl_loss_tmo, 1, GANTRY_NVMF_CTRL_LOSS_TMO_MAX_S, &loss) < 0)
                return gantry_error_set(err, EINVAL, "%s.ctrlLossTmoSeconds: whole seconds, 1 to %d (default %d)",
                                        prefix, GANTRY_NVMF_CTRL_LOSS_TMO_MAX_S, GANTRY_NVMF_CTRL_LOSS_TMO_S);
        if (reconnect_delay &&
            parse_seconds(reconnect_delay, 1, GANTRY_NVMF_RECONNECT_DELAY_MAX_S, &delay) < 0)
                return gantry_error_set(err, EINVAL,
                                        "%s.reconnectDelaySeconds: whole seconds, 1 to %d (default %d)", prefix,
                                        GANTRY_NVMF_RECONNECT_DELAY_MAX_S, GANTRY_NVMF_RECONNECT_DELAY_S);
        if (!reconnect_delay && delay > loss)
                delay = loss;
        /* the kernel would try once and give up: say so rather than connect with it */
        if (delay > loss)
                return gantry_error_set(err, EINVAL,
                                        "%s.reconnectDelaySeconds: %ld is longer than ctrlLossTmoSeconds %ld",
                                        prefix, delay, loss);
        ret->ctrl_loss_tmo_s = (int)loss;
        ret->reconnect_delay_s = (int)delay;
        ret->fast_io_fail_tmo_s =
                loss < GANTRY_NVMF_FAST_IO_FAIL_TMO_S ? (int)loss : GANTRY_NVMF_FAST_IO_FAIL_TMO_S;
        return 0;
}
