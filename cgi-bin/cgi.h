/* cgi.h - serving one request as plain CGI (fcgiwrap, mod_cgi), without
 * libfcgi: parameters from an environment array, body from a descriptor,
 * response to a descriptor. */
#ifndef BOARD_CGI_H
#define BOARD_CGI_H

#include "app.h"

/* Serve one request: CGI parameters in `envp` (NULL-terminated
 * "NAME=value" strings), body read from `in_fd`, response written to
 * `out_fd`.  Returns the HTTP status, or -1 when the response could not be
 * written. */
int board_run_cgi(struct app *app, char *const *envp, int in_fd, int out_fd);

#endif
