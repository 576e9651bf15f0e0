/* secret.c - reading the credentials a lock server's space names
 * (secret.h): a password file or variable, and the check of a private
 * key's file.  A file that every user of the host may read protects
 * nothing, so it is refused rather than used: the message says which
 * file and the chmod that fixes it. */
#include "secret.h"
#include "core.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void dl_secret_wipe(void *buf, size_t size)
{
        explicit_bzero(buf, size);
}

/* DIRLOCK_OK when the open file fd (named `file`) is a regular file
 * not readable by every user. */
static int private_file(int fd, const char *file, const char *what, const char *who, dirlock_error *err)
{
        struct stat st;
        if (fstat(fd, &st) != 0)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "%.300s: cannot read the %s '%.200s': %s", who, what,
                               file, strerror(errno));
        if (!S_ISREG(st.st_mode))
                return dl_fail(err, DIRLOCK_EINVAL, 0, "%.300s: the %s '%.200s' is not a regular file", who,
                               what, file);
        if (st.st_mode & S_IROTH)
                return dl_fail(err, DIRLOCK_EINVAL, 0,
                               "%.300s: the %s '%.200s' may be read by every user of this host (mode %04o): "
                               "refused (chmod o-r it)",
                               who, what, file, (unsigned)(st.st_mode & 07777));
        return DIRLOCK_OK;
}

/* Read at most size bytes of fd into buf; the count, or -1 (errno). */
static ssize_t read_some(int fd, char *buf, size_t size)
{
        size_t n = 0;
        while (n < size) {
                ssize_t k = read(fd, buf + n, size - n);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -1;
                if (k == 0)
                        break;
                n += (size_t)k;
        }
        return (ssize_t)n;
}

/* Whether the PEM text of a key says it is encrypted: PKCS #8's "BEGIN
 * ENCRYPTED PRIVATE KEY", or the older "Proc-Type: 4,ENCRYPTED" header. */
static bool pem_encrypted(const char *text)
{
        return strstr(text, "-----BEGIN ENCRYPTED PRIVATE KEY-----") != NULL ||
               strstr(text, "Proc-Type: 4,ENCRYPTED") != NULL;
}

int dl_secret_check_key(const char *file, const char *who, dirlock_error *err)
{
        int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "%.300s: cannot read the private key '%.200s': %s",
                               who, file, strerror(errno));
        int rc = private_file(fd, file, "private key", who, err);
        char head[512];
        ssize_t n = rc == DIRLOCK_OK ? read_some(fd, head, sizeof head - 1) : -1;
        close(fd);
        if (n >= 0) {
                head[n] = '\0';
                if (pem_encrypted(head))
                        rc = dl_fail(err, DIRLOCK_EINVAL, 0,
                                     "%.300s: the private key '%.200s' is encrypted, and no pass phrase is "
                                     "asked for: give a key without one (openssl pkey -in KEY -out NEW)",
                                     who, file);
                dl_secret_wipe(head, sizeof head);
        }
        return rc;
}

static int from_file(const char *file, char *buf, size_t size, const char *who, dirlock_error *err)
{
        int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "%.300s: cannot read the password file '%.200s': %s",
                               who, file, strerror(errno));
        int rc = private_file(fd, file, "password file", who, err);
        /* One byte more than fits, and two for a "\r\n" to drop. */
        char *tmp = rc == DIRLOCK_OK ? malloc(size + 2) : NULL;
        ssize_t n = tmp != NULL ? read_some(fd, tmp, size + 2) : -1;
        int saved = errno;
        close(fd);
        if (rc != DIRLOCK_OK)
                return rc;
        if (tmp == NULL)
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        if (n < 0) {
                free(tmp);
                return dl_fail(err, DIRLOCK_EINVAL, 0, "%.300s: cannot read the password file '%.200s': %s",
                               who, file, strerror(saved));
        }
        size_t len = (size_t)n;
        if (len > 0 && tmp[len - 1] == '\n')
                len--;
        if (len > 0 && tmp[len - 1] == '\r')
                len--;
        const char *bad = len == 0                         ? "is empty"
                          : len >= size                    ? "holds a password longer than the server takes"
                          : memchr(tmp, '\0', len) != NULL ? "holds a NUL byte"
                          : memchr(tmp, '\n', len) != NULL || memchr(tmp, '\r', len) != NULL
                              ? "holds more than one line"
                              : NULL;
        if (bad == NULL) {
                memcpy(buf, tmp, len);
                buf[len] = '\0';
        }
        dl_secret_wipe(tmp, size + 2);
        free(tmp);
        if (bad != NULL)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "%.300s: the password file '%.200s' %s", who, file,
                               bad);
        return DIRLOCK_OK;
}

int dl_secret_read(const char *file, const char *env, char *buf, size_t size, const char *who,
                   dirlock_error *err)
{
        if (file != NULL && file[0] != '\0')
                return from_file(file, buf, size, who, err);
        const char *v = env != NULL ? getenv(env) : NULL;
        if (v == NULL)
                return dl_fail(err, DIRLOCK_EINVAL, 0,
                               "%.300s: the password's environment variable %.64s is not set", who,
                               env != NULL ? env : "(none)");
        size_t len = strlen(v);
        const char *bad = len == 0                     ? "is empty"
                          : len >= size                ? "holds a password longer than the server takes"
                          : strpbrk(v, "\r\n") != NULL ? "holds a line break"
                                                       : NULL;
        if (bad != NULL)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "%.300s: the password's environment variable %.64s %s",
                               who, env, bad);
        memcpy(buf, v, len + 1);
        return DIRLOCK_OK;
}
