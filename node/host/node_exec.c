/*
 * Running the helper programs a node needs (mkfs.ext4, mkfs.xfs, resize2fs,
 * xfs_growfs): no shell, a bounded wait, and the tail of their output kept
 * for the error message, so "mkfs.xfs exited 1: ..." reaches kubectl
 * describe instead of a bare INTERNAL.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "host.h"

extern char **environ;

#define TAIL_MAX 1024

/* Keeps the last TAIL_MAX bytes of what the child wrote (@n <= TAIL_MAX). */
static void tail_add(char *tail, size_t *len, const char *buf, size_t n)
{
        if (*len + n > TAIL_MAX) {
                size_t drop = *len + n - TAIL_MAX;
                memmove(tail, tail + drop, *len - drop);
                *len -= drop;
        }
        memcpy(tail + *len, buf, n);
        *len += n;
}

/* The last non-empty line of @tail, in place. */
static const char *last_line(char *tail, size_t len)
{
        char *end;

        tail[len] = '\0';
        while (len > 0 && (tail[len - 1] == '\n' || tail[len - 1] == ' '))
                tail[--len] = '\0';
        end = strrchr(tail, '\n');
        return end ? end + 1 : tail;
}

static int spawn(const char *const *argv, int out_fd, pid_t *ret_pid)
{
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        sigset_t none, def;
        int r;

        posix_spawn_file_actions_init(&fa);
        posix_spawnattr_init(&attr);
        sigemptyset(&none);
        sigemptyset(&def);
        sigaddset(&def, SIGPIPE);
        /* the server's threads block SIGTERM/SIGINT and ignore SIGPIPE */
        posix_spawnattr_setsigmask(&attr, &none);
        posix_spawnattr_setsigdefault(&attr, &def);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
        posix_spawn_file_actions_adddup2(&fa, out_fd, 2);
        r = posix_spawnp(ret_pid, argv[0], &fa, &attr, (char *const *)argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        return -r;
}

int gantry_node_exec(const char *const *argv, int64_t deadline_ms, const char *what,
                     struct gantry_error *err)
{
        char tail[TAIL_MAX + 1], buf[512];
        size_t tail_len = 0;
        int fds[2], status = 0, r;
        pid_t pid;
        bool timed_out = false;

        if (pipe2(fds, O_CLOEXEC) < 0)
                return gantry_error_set(err, errno, "%s: pipe: %s", what, strerror(errno));
        r = spawn(argv, fds[1], &pid);
        close(fds[1]);
        if (r < 0) {
                close(fds[0]);
                return gantry_error_set(err, r, "%s: cannot run %s: %s", what, argv[0],
                                        strerror(-r));
        }
        for (;;) {
                int64_t left = deadline_ms == INT64_MAX ? -1 : deadline_ms - gantry_now_ms();
                struct pollfd p = { .fd = fds[0], .events = POLLIN };
                ssize_t n;

                if (deadline_ms != INT64_MAX && left <= 0) {
                        timed_out = true;
                        break;
                }
                r = poll(&p, 1, left < 0 || left > 1000 ? 1000 : (int)left);
                if (r < 0 && errno != EINTR)
                        break;
                if (r <= 0)
                        continue;
                n = read(fds[0], buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break; /* EOF: the child closed its output, it is exiting */
                tail_add(tail, &tail_len, buf, (size_t)n);
        }
        close(fds[0]);
        if (timed_out)
                kill(pid, SIGKILL);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        if (timed_out)
                return gantry_error_set(err, ETIMEDOUT, "%s: %s did not finish in time", what,
                                        argv[0]);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
                return 0;
        if (WIFEXITED(status))
                return gantry_error_set(err, EIO, "%s: %s exited %d: %s", what, argv[0],
                                        WEXITSTATUS(status), last_line(tail, tail_len));
        return gantry_error_set(err, EIO, "%s: %s killed by signal %d", what, argv[0],
                                WTERMSIG(status));
}
