/* say.h - the command's own messages on standard error (say.c). */
#ifndef DIRLOCK_BIN_SAY_H
#define DIRLOCK_BIN_SAY_H

/* The message, one line on standard error, where each control character
 * of what it quotes (a name, a path, an option typed at a terminal) is
 * shown as \xHH, as the library shows them in its own messages
 * (dirlock_error, dirlock.h). */
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
