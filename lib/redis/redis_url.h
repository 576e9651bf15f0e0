/* redis_url.h - the address of a lock space on a Redis server, parsed from
 * its space string (redis_url.c).  A pure parser: no hiredis, no network,
 * no files read, so it builds everywhere and is fuzzed on its own
 * (tests/fuzz/fuzz_redisurl.c).
 *
 *   redis://[USER[:PASSWORD]@]HOST[:PORT][/DB][?PARAMS]       plain TCP
 *   rediss://[USER[:PASSWORD]@]HOST[:PORT][/DB][?PARAMS]      TLS
 *   redis+unix://[USER[:PASSWORD]@]/PATH/TO/SOCKET[?PARAMS]   a unix socket
 *
 * HOST is a name of [A-Za-z0-9.-], a dotted IPv4 address, or an IPv6
 * address in brackets; PORT 1..65535 (default 6379); DB 0..999999 (default
 * 0).  USER and PASSWORD may hold any byte but NUL, written %XX where they
 * are not [A-Za-z0-9._~!$&'()*+,;=-]; ":PASSWORD@" alone is the default
 * user's password (requirepass), and an empty one is none.  The socket
 * PATH is absolute, at most 107 bytes of printable ASCII without '?',
 * '#', '%' or spaces.  PARAMS, NAME=VALUE joined by '&', each at most
 * once:
 *
 *   prefix=P            1..64 characters of [A-Za-z0-9._:-] (default
 *                       "dirlock"): every key of the space is {P}:...
 *   db=N                the database, for a socket (TCP: the path, /N)
 *   password_file=FILE  the password is FILE's content (one trailing
 *                       newline dropped), read at each connect
 *   password_env=NAME   the password is environment variable NAME's value
 *   cacert=FILE         rediss: the CAs that sign the server's certificate
 *                       (PEM; default: the system's), which must also
 *                       name HOST (a DNS name or an IP address of it)
 *   cert=FILE, key=FILE rediss: our client certificate and its private key
 *                       (PEM), for a server that asks for one
 *                       (tls-auth-clients); both or neither
 *
 * A FILE is 1..255 bytes, written %XX where it is not [A-Za-z0-9._~/-];
 * NAME is 1..63 characters of [A-Za-z0-9_], not starting with a digit.
 * The password comes from at most one of the address, password_file and
 * password_env, and a USER needs one of them.  The parser reads no file:
 * the connection does (redis_conn.c, redis_tls.c). */
#ifndef DIRLOCK_REDIS_URL_H
#define DIRLOCK_REDIS_URL_H

#include <stdbool.h>
#include <stddef.h>

/* The grammar's forms, for usage texts (backend.h: forms). */
#define DL_REDIS_SPACE_FORMS                                                                                 \
        "redis[s]://[USER[:PASSWORD]@]HOST[:PORT][/DB][?prefix=P&password_file=F&cacert=F&cert=F&key=F]",    \
            "redis+unix:///SOCKET[?db=N&prefix=P&password_file=F]"

#define DL_REDIS_DEFAULT_PORT   6379
#define DL_REDIS_DEFAULT_PREFIX "dirlock"
#define DL_REDIS_PREFIX_MAX     64
#define DL_REDIS_DB_MAX         999999
#define DL_REDIS_PATH_MAX       107 /* sun_path holds 108 bytes with the NUL */
#define DL_REDIS_USER_MAX       127
#define DL_REDIS_PASSWORD_MAX   255
#define DL_REDIS_FILE_MAX       255 /* a file named by a parameter, decoded */
#define DL_REDIS_ENV_MAX        63
/* The longest canonical form, NUL included: scheme, credentials (each
 * byte %XX at worst), [host]:port/db, the parameters (each file's bytes
 * %XX at worst). */
#define DL_REDIS_URL_MAX                                                                                     \
        (16 + 3 * DL_REDIS_USER_MAX + 3 * DL_REDIS_PASSWORD_MAX + 2 + 258 + 14 + 8 + DL_REDIS_PREFIX_MAX +   \
         4 * (16 + 3 * DL_REDIS_FILE_MAX) + 16 + DL_REDIS_ENV_MAX + 1)

typedef struct dl_redis_url {
        bool unix_socket;                 /* redis+unix:// */
        bool tls;                         /* rediss:// */
        char host[256];                   /* TCP: a name, an IPv4 or an IPv6 address (no brackets) */
        int port;                         /* TCP */
        char path[DL_REDIS_PATH_MAX + 1]; /* unix socket */
        bool has_user;                    /* an ACL user (Redis 6+): AUTH USER PASSWORD */
        char user[DL_REDIS_USER_MAX + 1];
        bool has_password; /* a password in the address; a lone empty one is none */
        char password[DL_REDIS_PASSWORD_MAX + 1];
        char password_file[DL_REDIS_FILE_MAX + 1]; /* "": none */
        char password_env[DL_REDIS_ENV_MAX + 1];   /* "": none */
        char cacert[DL_REDIS_FILE_MAX + 1];        /* rediss; "": the system's CAs */
        char cert[DL_REDIS_FILE_MAX + 1];          /* rediss; "": no client certificate */
        char key[DL_REDIS_FILE_MAX + 1];
        int db;
        char prefix[DL_REDIS_PREFIX_MAX + 1];
} dl_redis_url;

/* True when `space` names a Redis lock space (starts with redis://,
 * rediss:// or redis+unix://), whether or not the rest is valid. */
bool dl_redis_url_is_redis(const char *space);

/* Parse the `len` bytes at `s` (not NUL-terminated).  0, or -1 with a
 * message in `why` saying what is wrong (never the password). */
int dl_redis_url_parse(const char *s, size_t len, dl_redis_url *u, char *why, size_t why_size);

/* Whether a connection to u logs in (AUTH): a password comes from the
 * address, a file or the environment. */
bool dl_redis_url_logs_in(const dl_redis_url *u);

/* The canonical text form: every part explicit (port, db, prefix), the
 * parameters in the order of the grammar, credentials and files
 * %-encoded, the password replaced by *** when `hide_password`.  Returns
 * its length, or -1 when it does not fit. */
int dl_redis_url_format(const dl_redis_url *u, bool hide_password, char *buf, size_t size);

#endif
