/* server_notice.c - telling the caller of a waiting acquire that its lock
 * server does not answer, and when it does again
 * (dirlock_options.server_notice, DIRLOCK_SERVER_NOTICE).  The server
 * backends' wait loops (lib/redis/redis_wait.c, lib/etcd/etcd_backend.c)
 * report each attempt that got no answer and each that did; a silence
 * is told once it has lasted DIRLOCK_SERVER_NOTICE_MS from the wait's
 * start or the last answer, and its end once. */
#include "server.h"

#include <stdio.h>

void dl_silence_begin(dl_silence *s)
{
        s->since = dl_now();
        s->told = false;
}

static double ms_since(const dl_time *then)
{
        dl_time now = dl_now();
        return (double)(now.tv_sec - then->tv_sec) * 1e3 + (double)(now.tv_nsec - then->tv_nsec) / 1e6;
}

void dl_silence_failed(dl_silence *s, const dirlock *h, const dirlock_error *why)
{
        if (s->told || h->opts.server_notice == NULL || ms_since(&s->since) < DIRLOCK_SERVER_NOTICE_MS)
                return;
        s->told = true;
        h->opts.server_notice(0, why != NULL ? why->message : "no answer", h->opts.server_notice_arg);
}

void dl_silence_answered(dl_silence *s, const dirlock *h)
{
        s->since = dl_now();
        if (!s->told)
                return;
        s->told = false;
        char msg[DIRLOCK_NAME_MAX + 64];
        snprintf(msg, sizeof msg, "the lock server of lock '%s' answers again", h->name);
        if (h->opts.server_notice != NULL)
                h->opts.server_notice(1, msg, h->opts.server_notice_arg);
}
