/* redis_server.h - a private redis-server for a unit test: on a unix
 * socket, its files in a directory of the test's own, no persistence;
 * ready once the socket answers. */
#ifndef DIRLOCK_TEST_REDIS_SERVER_H
#define DIRLOCK_TEST_REDIS_SERVER_H

#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Does a server answer on unix socket `sock`? */
static inline bool redis_server_answers(const char *sock)
{
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        bool ok = fd >= 0 && strlen(sock) < sizeof a.sun_path;
        if (ok) {
                memcpy(a.sun_path, sock, strlen(sock) + 1);
                ok = connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
        }
        if (fd >= 0)
                close(fd);
        return ok;
}

/* Start redis-server on `sock`, its files in `dir`; *pid is its pid (-1
 * once it has exited).  0 when it answers, -1 when it exited or did not
 * answer within 5 s (then *pid may still run: the caller stops it). */
static inline int redis_server_start(const char *sock, const char *dir, pid_t *pid)
{
        unlink(sock);
        *pid = fork();
        if (*pid == 0) {
                execlp("redis-server", "redis-server", "--port", "0", "--unixsocket", sock,
                       "--unixsocketperm", "700", "--save", "", "--appendonly", "no", "--dir", dir,
                       "--logfile", "redis.log", (char *)NULL);
                _exit(127);
        }
        for (int i = 0; i < 500; i++) {
                if (redis_server_answers(sock))
                        return 0;
                int st;
                if (waitpid(*pid, &st, WNOHANG) == *pid) {
                        *pid = -1;
                        return -1;
                }
                nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
        }
        return -1;
}

#endif
