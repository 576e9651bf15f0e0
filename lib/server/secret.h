/* secret.h - the credentials a lock server's space names, as the server
 * backends read them (lib/redis, lib/etcd): a password from a file or an
 * environment variable, and the files of private keys (secret.c).  What
 * they read is never put in a message: messages name the file or the
 * variable. */
#ifndef DIRLOCK_SECRET_H
#define DIRLOCK_SECRET_H

#include "dirlock.h"

#include <stddef.h>

/* The password of `file` (when not empty), else of environment variable
 * `env`, into buf (size bytes with the NUL): the file's content with one
 * trailing "\n" (or "\r\n") dropped, the variable's value as it is.  It
 * must be 1..size-1 bytes with no NUL and no line break.  The file must
 * be a regular file that not every user of the host may read (mode
 * o-r).  DIRLOCK_OK; DIRLOCK_EINVAL with a message that begins with
 * `who` ("Redis server rediss://h:6379/0...") and says what is wrong with
 * the file or variable; DIRLOCK_ENOMEM.  Wipe buf (dl_secret_wipe) once
 * it is sent. */
int dl_secret_read(const char *file, const char *env, char *buf, size_t size, const char *who,
                   dirlock_error *err);

/* A private key's file (a client certificate's key): DIRLOCK_OK when it
 * is a regular file that not every user may read, and not encrypted (a
 * library has nobody to ask for its pass phrase); DIRLOCK_EINVAL, with
 * `who` and what is wrong, otherwise. */
int dl_secret_check_key(const char *file, const char *who, dirlock_error *err);

/* Overwrite a secret's buffer, in a way the compiler keeps. */
void dl_secret_wipe(void *buf, size_t size);

#endif
