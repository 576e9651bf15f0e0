/* fiber.h - a function run on a stack of its own, which can stop in the
 * middle and go on later (fiber.c has the states and the stack): how a
 * pending acquire (pending.c) runs the library's one implementation of
 * every acquire. */
#ifndef DIRLOCK_FIBER_H
#define DIRLOCK_FIBER_H

#include "core.h"

typedef struct dl_fiber dl_fiber;
int dl_fiber_new(dl_fiber **out, void (*fn)(void *arg), void *arg, dirlock_error *err);
/* Run f until it suspends (false) or its function returns (true). */
bool dl_fiber_resume(dl_fiber *f);
/* From inside a fiber: back to the one that resumed it. */
void dl_fiber_suspend(void);
dl_fiber *dl_fiber_current(void);
/* Make a finished fiber run fn(arg) anew, on the same stack: 0 or -1. */
int dl_fiber_reuse(dl_fiber *f, void (*fn)(void *arg), void *arg);
/* A fiber that finished or never ran. */
void dl_fiber_free(dl_fiber *f);

#endif
