/* redis_url.h - the address of a lock space on a Redis server, parsed from
 * its space string (redis_url.c).  A pure parser: no hiredis, no network,
 * so it builds everywhere and is fuzzed on its own (tests/fuzz/fuzz_redisurl.c).
 *
 *   redis://[[USER]:PASSWORD@]HOST[:PORT][/DB][?prefix=P]
 *   redis+unix://[[USER]:PASSWORD@]/PATH/TO/SOCKET[?db=N&prefix=P]
 *
 * HOST is a name of [A-Za-z0-9.-], a dotted IPv4 address, or an IPv6
 * address in brackets; PORT 1..65535 (default 6379); DB 0..999999 (default
 * 0); P 1..64 characters of [A-Za-z0-9._:-] (default "dirlock").  USER and
 * PASSWORD may hold any byte but NUL, written %XX where they are not
 * [A-Za-z0-9._~!$&'()*+,;=-].  The socket PATH is absolute, at most 107
 * bytes of printable ASCII without '?', '#', '%' or spaces. */
#ifndef DIRLOCK_REDIS_URL_H
#define DIRLOCK_REDIS_URL_H

#include <stdbool.h>
#include <stddef.h>

/* The grammar's two forms, for usage texts (backend.h: forms). */
#define DL_REDIS_SPACE_FORMS                                                                                 \
        "redis://[[USER]:PASSWORD@]HOST[:PORT][/DB][?prefix=P]", "redis+unix:///SOCKET[?db=N&prefix=P]"

#define DL_REDIS_DEFAULT_PORT   6379
#define DL_REDIS_DEFAULT_PREFIX "dirlock"
#define DL_REDIS_PREFIX_MAX     64
#define DL_REDIS_DB_MAX         999999
#define DL_REDIS_PATH_MAX       107  /* sun_path holds 108 bytes with the NUL */
#define DL_REDIS_URL_MAX        1600 /* the longest canonical form, NUL included */

typedef struct dl_redis_url {
        bool unix_socket;                 /* redis+unix:// */
        char host[256];                   /* TCP: a name, an IPv4 or an IPv6 address (no brackets) */
        int port;                         /* TCP */
        char path[DL_REDIS_PATH_MAX + 1]; /* unix socket */
        bool has_user;                    /* an ACL user (Redis 6+): AUTH USER PASSWORD */
        char user[128];
        bool has_password; /* AUTH [USER] PASSWORD; a lone empty password is none */
        char password[256];
        int db;
        char prefix[DL_REDIS_PREFIX_MAX + 1];
} dl_redis_url;

/* True when `space` names a Redis lock space (starts with redis:// or
 * redis+unix://), whether or not the rest is valid. */
bool dl_redis_url_is_redis(const char *space);

/* Parse the `len` bytes at `s` (not NUL-terminated).  0, or -1 with a
 * message in `why` saying what is wrong (never the password). */
int dl_redis_url_parse(const char *s, size_t len, dl_redis_url *u, char *why, size_t why_size);

/* The canonical text form: every part explicit (port, db, prefix),
 * credentials %-encoded, or replaced by *** when `hide_password`.  Returns
 * its length, or -1 when it does not fit. */
int dl_redis_url_format(const dl_redis_url *u, bool hide_password, char *buf, size_t size);

#endif
