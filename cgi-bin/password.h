/* password.h - delete passwords, stored only as salted yescrypt hashes. */
#ifndef BOARD_PASSWORD_H
#define BOARD_PASSWORD_H

#include "board_error.h"

/* Hash `password` with a fresh yescrypt salt; *out is a new string. */
int password_hash(const char *password, char **out, struct board_error *err);

/* 1 when `password` matches `hash`, else 0 (also for an empty or broken
 * hash). */
int password_verify(const char *password, const char *hash);

#endif
