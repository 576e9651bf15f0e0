/* config.h - the board's configuration file: `key = value` lines, `#`
 * comments (format and keys in docs/board.md). */
#ifndef BOARD_CONFIG_H
#define BOARD_CONFIG_H

#include <stddef.h>

#include "board_error.h"
#include "lockmode.h"

/* The stores (one struct store_ops each, named in store.c's table). */
enum board_store_kind { BOARD_STORE_LOG, BOARD_STORE_SQLITE };
#define BOARD_STORES (BOARD_STORE_SQLITE + 1)
/* How the flat log is written (logfile.h). */
enum board_write_method { BOARD_WRITE_RENAME, BOARD_WRITE_INPLACE };
#define BOARD_WRITE_METHODS (BOARD_WRITE_INPLACE + 1)

struct board_config {
        char *title;
        char *base_path; /* starts and ends with '/' */
        char *data_dir;
        /* Where the board's locks live, handed to the dirlock library as
         * its lock space: a directory, "flock:DIR", or a backend's URL.
         * Default data_dir/locks. */
        char *lock_space;
        /* The directory of a lock space of this host's filesystem (a
         * directory, or DIR of flock:DIR), pointing into lock_space; NULL
         * for a lock server's space. */
        const char *lock_dir;
        enum board_lock_mode lock_mode; /* lockmode.h */
        enum board_store_kind store;
        double lock_timeout; /* seconds */
        double stale_age;    /* seconds */
        long delay_ms;
        enum board_write_method write_method;
        long max_messages;
        long page_size;
        long min_post_interval; /* seconds, 0 = off */
        long max_body;          /* bytes */
        int group_commit;       /* posts through the pending queue (postqueue.h) */
        int group_commit_given; /* group_commit was in the file (not the default) */
        /* Every board process that uses data_dir and the lock space runs
         * on this host, though they are on a network filesystem: group
         * commit, SQLite and the library's one-client modes are allowed
         * there (config_check_storage, DIRLOCK_ONE_CLIENT). */
        int single_host;
        char *error_log;            /* file the board appends its error lines to, or NULL (errlog.h) */
        long delete_max_failures;   /* wrong passwords per address or message ... */
        long delete_failure_window; /* ... within this many seconds, then 429 (0 = off) */
        /* The posts that may wait for the board's lock (or hold it) at
         * once; one more is refused at once with 503 (0 = no cap). */
        long max_waiting_posts;
        /* Where the posts' gate (board_post_gate) counts them: the lock
         * space, or for flock:DIR the directory DIR (a space with counting
         * locks); pointing into lock_space. */
        const char *gate_space;
};

/* Parse the text of a configuration file; `filename` is used in messages
 * ("FILE:LINE: key 'k': ...").  On error the config is freed and err set
 * (status 500). */
int config_parse(const char *text, size_t len, const char *filename, struct board_config *cfg,
                 struct board_error *err);
/* Read and parse file `path`. */
int config_load(const char *path, struct board_config *cfg, struct board_error *err);
/* What the filesystem of data_dir (which exists) allows, once the file
 * is parsed: on a network filesystem several hosts may share, group commit
 * goes off (an error when the file asks for it) and the SQLite store is
 * refused, unless single_host (config.c says why).  0, or -1 (500, the
 * message naming `filename` and the key). */
int config_check_storage(const char *filename, struct board_config *cfg, struct board_error *err);
void config_free(struct board_config *cfg);

#endif
