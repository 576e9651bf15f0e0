/* store_log.h - the flat-log store (store.h): messages in
 * data_dir/messages.log (logfile.h), read and written under the lock of
 * the configured mode (locking.h; a page view chooses the file under it
 * and, when it is written by rename, reads it after), posts committed in
 * groups through the pending queue (postqueue.h), page views served from
 * a per-process cache of the parsed log. */
#ifndef BOARD_STORE_LOG_H
#define BOARD_STORE_LOG_H

#include "store.h"

extern const struct store_ops store_log_ops;

#endif
