/* server_wait.c - how a server backend's wait bounds each request it
 * sends within the call's own deadline, and how it gives up when the
 * server cannot be reached (server.h). */
#include "server.h"

#include <stdio.h>
#include <string.h>

dl_time dl_request_deadline(const dl_time *call, double least_ms, double most_ms)
{
        double ms = dl_remaining(call);
        if (ms < least_ms)
                ms = least_ms;
        if (ms > most_ms)
                ms = most_ms;
        return dl_deadline(ms / 1e3);
}

int dl_gave_up_unreachable(dirlock_error *err, double timeout, bool canceled, const char *what,
                           const char *server)
{
        if (canceled)
                return dl_fail(err, DIRLOCK_ECANCELED, 0,
                               "canceled waiting for %s while %s could not be reached", what, server);
        if (timeout != 0 && err != NULL) {
                size_t len = strlen(err->message);
                snprintf(err->message + len, sizeof err->message - len, " (gave up at the timeout, %.3g s)",
                         timeout);
        }
        return DIRLOCK_ESERVER;
}
