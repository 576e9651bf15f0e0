/* fiber.c - a function run on a stack of its own, which can stop in the
 * middle (dl_fiber_suspend) and go on later (dl_fiber_resume): how a
 * pending acquire (pending.c) runs the library's one implementation of
 * every acquire, and stops wherever it would have waited (dl_poll).
 *
 * STATES: made (dl_fiber_new) -> running (inside dl_fiber_resume) ->
 * suspended (back in the resumer, dl_fiber_resume returned false) ->
 * running -> ... -> finished (dl_fiber_resume returned true; the function
 * returned).  Only a finished or never-started fiber is freed.  A fiber is
 * resumed by the thread that made it: the library's per-thread state (the
 * inotify hub, connections) belongs to that thread.
 *
 * THE STACK is mapped, not allocated: FIBER_STACK bytes reserved, of which
 * the pages a fiber touches cost memory (a few KiB for an acquire), with
 * an inaccessible guard page below it, so that an overflow faults instead
 * of writing over other memory.
 *
 * Built on ucontext (glibc's makecontext/swapcontext).  Under
 * AddressSanitizer every switch is announced to it (its fiber API), and
 * under valgrind the stack is registered, so that neither takes a switch
 * for a stack overflow or a wild write. */
#include "fiber.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define FIBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FIBER_ASAN 1
#endif
#endif
#ifdef FIBER_ASAN
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define FIBER_VALGRIND 1
#endif
#endif

/* Enough for the deepest acquire (a Redis wait: hiredis replies, owner
 * records, messages) several times over. */
#define FIBER_STACK (256 * 1024)

struct dl_fiber {
        ucontext_t self;   /* where the fiber is while suspended          */
        ucontext_t caller; /* where dl_fiber_resume was called            */
        void (*fn)(void *arg);
        void *arg;
        char *map; /* guard page + stack                               */
        size_t map_size;
        bool finished;
#ifdef FIBER_VALGRIND
        unsigned stack_id;
#endif
#ifdef FIBER_ASAN
        void *caller_fake;         /* ASan's fake stacks, saved while each */
        void *fiber_fake;          /* side is switched away                */
        const void *caller_bottom; /* the resumer's stack, for the way back */
        size_t caller_size;
#endif
};

/* The fiber running on this thread now, or NULL. */
static _Thread_local dl_fiber *running;

dl_fiber *dl_fiber_current(void)
{
        return running;
}

/* makecontext passes int arguments: the pointer in two halves. */
static void trampoline(unsigned hi, unsigned lo)
{
        dl_fiber *f = (dl_fiber *)(((uintptr_t)hi << 16 << 16) | (uintptr_t)lo);
#ifdef FIBER_ASAN
        __sanitizer_finish_switch_fiber(NULL, &f->caller_bottom, &f->caller_size);
#endif
        f->fn(f->arg);
        f->finished = true;
#ifdef FIBER_ASAN
        /* NULL: this stack is done with, ASan may forget it. */
        __sanitizer_start_switch_fiber(NULL, f->caller_bottom, f->caller_size);
#endif
        /* uc_link takes us back to the resumer. */
}

/* Set f up to run fn(arg) from the top of its stack. */
static int fiber_prepare(dl_fiber *f, void (*fn)(void *arg), void *arg)
{
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        if (getcontext(&f->self) != 0)
                return -1;
        f->self.uc_stack.ss_sp = f->map + page;
        f->self.uc_stack.ss_size = FIBER_STACK;
        f->self.uc_link = &f->caller;
        f->fn = fn;
        f->arg = arg;
        f->finished = false;
        uintptr_t p = (uintptr_t)f;
        makecontext(&f->self, (void (*)(void))trampoline, 2, (unsigned)(p >> 16 >> 16), (unsigned)p);
        return 0;
}

int dl_fiber_reuse(dl_fiber *f, void (*fn)(void *arg), void *arg)
{
        DL_ASSERT(f->finished || f->fn == NULL);
        return fiber_prepare(f, fn, arg);
}

int dl_fiber_new(dl_fiber **out, void (*fn)(void *arg), void *arg, dirlock_error *err)
{
        dl_fiber *f = calloc(1, sizeof *f);
        if (f == NULL)
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        f->map_size = FIBER_STACK + page;
        f->map = mmap(NULL, f->map_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                      -1, 0);
        if (f->map == MAP_FAILED) {
                free(f);
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "cannot map a stack for a pending acquire");
        }
        mprotect(f->map, page, PROT_NONE); /* the guard */
        if (fiber_prepare(f, fn, arg) != 0) {
                munmap(f->map, f->map_size);
                free(f);
                return dl_fail(err, DIRLOCK_EIO, 0, "getcontext failed");
        }
#ifdef FIBER_VALGRIND
        f->stack_id = VALGRIND_STACK_REGISTER(f->map + page, f->map + f->map_size);
#endif
        *out = f;
        return DIRLOCK_OK;
}

bool dl_fiber_resume(dl_fiber *f)
{
        DL_ASSERT(!f->finished && running == NULL); /* fibers do not nest */
        running = f;
#ifdef FIBER_ASAN
        __sanitizer_start_switch_fiber(&f->caller_fake, f->self.uc_stack.ss_sp, f->self.uc_stack.ss_size);
#endif
        swapcontext(&f->caller, &f->self);
#ifdef FIBER_ASAN
        __sanitizer_finish_switch_fiber(f->caller_fake, NULL, NULL);
#endif
        running = NULL;
        return f->finished;
}

void dl_fiber_suspend(void)
{
        dl_fiber *f = running;
        DL_ASSERT(f != NULL);
#ifdef FIBER_ASAN
        __sanitizer_start_switch_fiber(&f->fiber_fake, f->caller_bottom, f->caller_size);
#endif
        swapcontext(&f->self, &f->caller);
#ifdef FIBER_ASAN
        __sanitizer_finish_switch_fiber(f->fiber_fake, &f->caller_bottom, &f->caller_size);
#endif
}

void dl_fiber_free(dl_fiber *f)
{
        if (f == NULL)
                return;
#ifdef FIBER_VALGRIND
        VALGRIND_STACK_DEREGISTER(f->stack_id);
#endif
        munmap(f->map, f->map_size);
        free(f);
}
