/* Dirlock.xs - the glue between Perl and the dirlock C library: lock and
 * set objects (a blessed reference to a pointer), the options a Perl
 * caller gives by name, owner records and range lists as hashes, and every
 * failure thrown as a Dirlock::Error (lib/Dirlock.pm makes the classes).
 *
 * Ownership: a Dirlock object owns one dirlock handle until the handle is
 * freed.  The library frees a plain handle in dirlock_release() whatever
 * it returns (a forked child's refused release included), so the object
 * forgets it at once; a reentrant handle lives until dirlock_free(), called
 * when the object is destroyed.  DESTROY frees whatever is left: in the
 * process that took the lock that releases it, in a forked child it only
 * frees the child's copy (the library checks the pid). */
#define PERL_NO_GET_CONTEXT
#include "EXTERN.h"
#include "perl.h"
#include "XSUB.h"

#include <dirlock.h>
#include <dirlock_fence.h>
#include <dirlock_range.h>
#include <dirlock_rw.h>

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct {
        dirlock *h;    /* NULL once freed */
        int reentrant; /* taken with DIRLOCK_REENTRANT: release keeps h */
        char name[DIRLOCK_NAME_MAX + 1];
} dlp_lock;

typedef struct {
        dirlock_set *set; /* NULL once released */
        pid_t pid;        /* the process that took it */
} dlp_set;

/* ---- errors ------------------------------------------------------------ */

/* Dies with a Dirlock::Error of `code` (Dirlock::Error->_throw, in Perl,
 * picks the class and the caller's line). */
static void dlp_throw(pTHX_ int code, int sys_errno, const char *message)
{
        dSP;
        ENTER;
        SAVETMPS;
        PUSHMARK(SP);
        XPUSHs(sv_2mortal(newSVpvs("Dirlock::Error")));
        mXPUSHi(code);
        XPUSHs(sv_2mortal(newSVpv(message, 0)));
        mXPUSHi(sys_errno);
        PUTBACK;
        call_method("_throw", G_DISCARD);
        FREETMPS;
        LEAVE;
        croak("Dirlock::Error->_throw returned"); /* not reached */
}

static void dlp_throw_err(pTHX_ int code, const dirlock_error *err)
{
        dlp_throw(aTHX_ code, err->sys_errno, err->code == code ? err->message : dirlock_strerror(code));
}

static void dlp_invalid(pTHX_ const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void dlp_invalid(pTHX_ const char *fmt, ...)
{
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        dlp_throw(aTHX_ DIRLOCK_EINVAL, 0, msg);
        croak("not reached");
}

/* ---- strings ------------------------------------------------------------ */

/* The C string of a Perl string given as a lock space or a name: a NUL
 * byte in it would cut it short, and the library would then lock another
 * name (or use another directory) than the one given; that, and undef,
 * are errors of `code` instead. */
typedef const char *dlp_space;
typedef const char *dlp_name;

static const char *dlp_cstr(pTHX_ SV *sv, int code, const char *what)
{
        if (!SvOK(sv))
                dlp_throw(aTHX_ code, 0, code == DIRLOCK_ENAME ? "no lock name given (undef)" : "no lock space given (undef)");
        if (SvROK(sv) && !SvAMAGIC(sv)) { /* an object that stringifies (Path::Tiny) is a string */
                char msg[256];
                snprintf(msg, sizeof msg, "the %s must be a string, not a reference (%s)", what,
                         sv_reftype(SvRV(sv), 0));
                dlp_throw(aTHX_ code, 0, msg);
        }
        STRLEN len;
        const char *s = SvPV(sv, len);
        if (strlen(s) != len) {
                char msg[256];
                snprintf(msg, sizeof msg, "invalid %s '%.80s...': it has a NUL byte", what, s);
                dlp_throw(aTHX_ code, 0, msg);
        }
        return s;
}

/* ---- names of modes and policies ---------------------------------------- */

static const char *const mode_names[] = {[DIRLOCK_EXCLUSIVE] = "exclusive",
                                         [DIRLOCK_SHARED] = "shared",
                                         [DIRLOCK_INTENT] = "intent"};
static const char *const policy_names[] = {[DIRLOCK_POLICY_FAIR] = "fair",
                                           [DIRLOCK_POLICY_WRITER] = "writer",
                                           [DIRLOCK_POLICY_READER] = "reader",
                                           [DIRLOCK_POLICY_SIMPLE] = "simple"};
#define COUNT(a) ((int)(sizeof(a) / sizeof(a)[0]))

static int dlp_name_index(pTHX_ SV *sv, const char *const names[], int n, const char *what)
{
        const char *s = SvPV_nolen(sv);
        for (int i = 0; i < n; i++)
                if (strcmp(s, names[i]) == 0)
                        return i;
        char known[128] = "";
        for (int i = 0; i < n; i++)
                snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "", names[i]);
        dlp_invalid(aTHX_ "unknown %s '%s' (%s)", what, s, known);
}

static SV *dlp_mode_sv(pTHX_ int mode)
{
        if (mode >= 0 && mode < COUNT(mode_names))
                return newSVpv(mode_names[mode], 0);
        return newSViv(mode);
}

/* ---- options ------------------------------------------------------------ */

/* Every option a caller may give, by name: one line each. */
enum dlp_opt_kind { OPT_TIMEOUT, OPT_NONBLOCKING, OPT_STALE_AGE, OPT_MODE, OPT_POLICY, OPT_FLAG,
                    OPT_CANCEL_FD, OPT_PARTNER, OPT_RANGE };
static const struct dlp_opt {
        const char *name;
        enum dlp_opt_kind kind;
        unsigned flag;
} dlp_opts[] = {
    {"timeout", OPT_TIMEOUT, 0},
    {"nonblocking", OPT_NONBLOCKING, 0},
    {"stale_age", OPT_STALE_AGE, 0},
    {"mode", OPT_MODE, 0},
    {"policy", OPT_POLICY, 0},
    {"fifo", OPT_FLAG, DIRLOCK_FIFO},
    {"reentrant", OPT_FLAG, DIRLOCK_REENTRANT},
    {"no_mkdir", OPT_FLAG, DIRLOCK_NO_MKDIR},
    {"no_notify", OPT_FLAG, DIRLOCK_NO_NOTIFY},
    {"no_deadlock", OPT_FLAG, DIRLOCK_NO_DEADLOCK},
    {"cancel_fd", OPT_CANCEL_FD, 0},
    {"partner_pid", OPT_PARTNER, 0},
    {"range", OPT_RANGE, 0},
};

typedef struct {
        dirlock_options o;
        int ranged;
        double lo, hi;
} dlp_request;

static double dlp_number(pTHX_ SV *sv, const char *what)
{
        if (!looks_like_number(sv))
                dlp_invalid(aTHX_ "%s must be a number of seconds, not '%s'", what, SvPV_nolen(sv));
        double v = SvNV(sv);
        if (isnan(v))
                dlp_invalid(aTHX_ "%s is not a number", what);
        return v;
}

/* A whole number in [0, INT_MAX] (a descriptor, a process id): no
 * truncation of a larger one into a valid one. */
static int dlp_small_int(pTHX_ SV *sv, const char *what)
{
        if (SvROK(sv) || !looks_like_number(sv))
                dlp_invalid(aTHX_ "%s must be a whole number, not '%s'", what, SvPV_nolen(sv));
        double v = SvNV(sv);
        if (!(v >= 0 && v <= INT_MAX) || v != floor(v))
                dlp_invalid(aTHX_ "%s must be a whole number from 0 to %d, not '%s'", what, INT_MAX,
                            SvPV_nolen(sv));
        return (int)v;
}

static int dlp_fd(pTHX_ SV *sv)
{
        if (isGV_with_GP(sv) || (SvROK(sv) && (SvTYPE(SvRV(sv)) == SVt_PVGV || SvTYPE(SvRV(sv)) == SVt_PVIO))) {
                IO *io = sv_2io(sv);
                PerlIO *f = io ? IoIFP(io) : NULL;
                int fd = f ? PerlIO_fileno(f) : -1;
                if (fd < 0)
                        dlp_invalid(aTHX_ "cancel_fd: the handle is not open");
                return fd;
        }
        if (SvROK(sv) || !looks_like_number(sv))
                dlp_invalid(aTHX_ "cancel_fd must be a descriptor number or a handle, not '%s'", SvPV_nolen(sv));
        return dlp_small_int(aTHX_ sv, "cancel_fd");
}

/* Reads KEY => VALUE pairs from args[0..n-1].  `allowed` lists the kinds
 * this call takes (a range only for acquire, a timeout only for upgrade). */
static void dlp_parse_options(pTHX_ SV **args, I32 n, dlp_request *r, unsigned allowed)
{
        int timeout_given = 0, nonblocking = 0;
        dirlock_options_init(&r->o);
        r->ranged = 0;
        if (n % 2 != 0)
                dlp_invalid(aTHX_ "options come as NAME => VALUE pairs (odd number of arguments)");
        for (I32 i = 0; i < n; i += 2) {
                const char *key = SvPV_nolen(args[i]);
                SV *v = args[i + 1];
                const struct dlp_opt *opt = NULL;
                for (int k = 0; k < COUNT(dlp_opts); k++)
                        if (strcmp(key, dlp_opts[k].name) == 0)
                                opt = &dlp_opts[k];
                if (opt == NULL || !(allowed & (1u << opt->kind))) {
                        char known[256] = "";
                        for (int k = 0; k < COUNT(dlp_opts); k++)
                                if (allowed & (1u << dlp_opts[k].kind))
                                        snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s",
                                                 known[0] ? ", " : "", dlp_opts[k].name);
                        dlp_invalid(aTHX_ "unknown option '%s' (%s)", key, known);
                }
                switch (opt->kind) {
                case OPT_TIMEOUT:
                        timeout_given = 1;
                        r->o.timeout = SvOK(v) ? dlp_number(aTHX_ v, "timeout") : -1.0;
                        if (r->o.timeout < 0)
                                r->o.timeout = -1.0;
                        break;
                case OPT_NONBLOCKING:
                        nonblocking = SvTRUE(v);
                        break;
                case OPT_STALE_AGE:
                        r->o.stale_age = SvOK(v) ? dlp_number(aTHX_ v, "stale_age") : 0.0;
                        break;
                case OPT_MODE:
                        r->o.mode = dlp_name_index(aTHX_ v, mode_names, COUNT(mode_names), "mode");
                        break;
                case OPT_POLICY:
                        r->o.policy = dlp_name_index(aTHX_ v, policy_names, COUNT(policy_names), "policy");
                        break;
                case OPT_FLAG:
                        if (SvTRUE(v))
                                r->o.flags |= opt->flag;
                        else
                                r->o.flags &= ~opt->flag;
                        break;
                case OPT_CANCEL_FD:
                        if (SvOK(v)) {
                                r->o.cancel_fd = dlp_fd(aTHX_ v);
                                r->o.flags |= DIRLOCK_CANCEL_FD;
                        }
                        break;
                case OPT_PARTNER:
                        r->o.partner_pid = SvOK(v) ? (pid_t)dlp_small_int(aTHX_ v, "partner_pid") : 0;
                        break;
                case OPT_RANGE: {
                        AV *av = (SvROK(v) && SvTYPE(SvRV(v)) == SVt_PVAV) ? (AV *)SvRV(v) : NULL;
                        if (av == NULL && SvOK(v) && !SvROK(v)) { /* "LO:HI", the command's grammar */
                                dirlock_error err;
                                int rc = dirlock_range_parse(dlp_cstr(aTHX_ v, DIRLOCK_EINVAL, "range"), &r->lo,
                                                             &r->hi, &err);
                                if (rc != DIRLOCK_OK)
                                        dlp_throw_err(aTHX_ rc, &err);
                                r->ranged = 1;
                                break;
                        }
                        if (av == NULL || av_len(av) != 1)
                                dlp_invalid(aTHX_ "range must be an array reference [LO, HI] or a string LO:HI");
                        SV **lo = av_fetch(av, 0, 0), **hi = av_fetch(av, 1, 0);
                        r->lo = dlp_number(aTHX_ lo ? *lo : &PL_sv_undef, "range LO");
                        r->hi = dlp_number(aTHX_ hi ? *hi : &PL_sv_undef, "range HI");
                        r->ranged = 1;
                        break;
                }
                }
        }
        if (nonblocking) {
                if (timeout_given && r->o.timeout != 0)
                        dlp_invalid(aTHX_ "nonblocking => 1 and timeout => %g contradict each other",
                                    r->o.timeout);
                r->o.timeout = 0;
        }
}

#define ACQUIRE_OPTIONS                                                                                      \
        ((1u << OPT_TIMEOUT) | (1u << OPT_NONBLOCKING) | (1u << OPT_STALE_AGE) | (1u << OPT_MODE) |          \
         (1u << OPT_POLICY) | (1u << OPT_FLAG) | (1u << OPT_CANCEL_FD) | (1u << OPT_PARTNER) |               \
         (1u << OPT_RANGE))
#define UPGRADE_OPTIONS ((1u << OPT_TIMEOUT) | (1u << OPT_NONBLOCKING) | (1u << OPT_CANCEL_FD))
#define JUDGE_OPTIONS (1u << OPT_STALE_AGE)

/* stale_age and force for inspect, list and break. */
static double dlp_judge_options(pTHX_ SV **args, I32 n, int *force)
{
        double stale = 0;
        if (force)
                *force = 0;
        if (n % 2 != 0)
                dlp_invalid(aTHX_ "options come as NAME => VALUE pairs (odd number of arguments)");
        for (I32 i = 0; i < n; i += 2) {
                const char *key = SvPV_nolen(args[i]);
                if (strcmp(key, "stale_age") == 0)
                        stale = SvOK(args[i + 1]) ? dlp_number(aTHX_ args[i + 1], "stale_age") : 0;
                else if (force && strcmp(key, "force") == 0)
                        *force = SvTRUE(args[i + 1]);
                else
                        dlp_invalid(aTHX_ "unknown option '%s' (%s)", key, force ? "stale_age, force" : "stale_age");
        }
        return stale;
}

/* ---- objects ------------------------------------------------------------ */

static SV *dlp_wrap(pTHX_ const char *class, void *p)
{
        SV *rv = newSV(0);
        sv_setref_pv(rv, class, p);
        return rv;
}

static dlp_lock *dlp_lock_of(pTHX_ SV *self)
{
        if (!SvROK(self) || !sv_derived_from(self, "Dirlock"))
                croak("not a Dirlock lock object");
        return INT2PTR(dlp_lock *, SvIV(SvRV(self)));
}

static dlp_set *dlp_set_of(pTHX_ SV *self)
{
        if (!SvROK(self) || !sv_derived_from(self, "Dirlock::Set"))
                croak("not a Dirlock::Set object");
        return INT2PTR(dlp_set *, SvIV(SvRV(self)));
}

/* The handle of a lock object; once released, `code` (EBALANCE for a
 * release, as the library answers a release too many; ELOST for the
 * calls that need the lock held, as it answers them on a handle that
 * holds nothing). */
static dirlock *dlp_handle(pTHX_ SV *self, int code)
{
        dlp_lock *l = dlp_lock_of(aTHX_ self);
        if (l->h == NULL) {
                char msg[160];
                snprintf(msg, sizeof msg, "lock '%s' was released already by this object", l->name);
                dlp_throw(aTHX_ code, 0, msg);
        }
        return l->h;
}

/* The handle, or NULL once released (for the accessors). */
static dirlock *dlp_handle_or_null(pTHX_ SV *self)
{
        return dlp_lock_of(aTHX_ self)->h;
}

static SV *dlp_owner_hash(pTHX_ const dirlock_owner *o)
{
        HV *hv = newHV();
        (void)hv_stores(hv, "name", newSVpv(o->name, 0));
        (void)hv_stores(hv, "pid", newSViv(o->pid));
        (void)hv_stores(hv, "start_time", newSVuv((UV)o->start_time));
        (void)hv_stores(hv, "host", newSVpv(o->host, 0));
        (void)hv_stores(hv, "token", newSVpv(o->token, 0));
        (void)hv_stores(hv, "acquired", newSVnv(o->acquired));
        (void)hv_stores(hv, "age", newSVnv(o->age));
        (void)hv_stores(hv, "same_host", newSViv(o->same_host));
        (void)hv_stores(hv, "owner_alive", o->owner_alive < 0 ? newSV(0) : newSViv(o->owner_alive));
        (void)hv_stores(hv, "stale", newSViv(o->stale));
        (void)hv_stores(hv, "mode", dlp_mode_sv(aTHX_ o->mode));
        (void)hv_stores(hv, "readers", newSVuv(o->readers));
        (void)hv_stores(hv, "partner", newSViv(o->partner));
        (void)hv_stores(hv, "ranges", newSVuv(o->ranges));
        return newRV_noinc((SV *)hv);
}

static SV *dlp_range_hash(pTHX_ const dirlock_range_info *r)
{
        HV *hv = newHV();
        (void)hv_stores(hv, "lo", newSVnv(r->lo));
        (void)hv_stores(hv, "hi", newSVnv(r->hi));
        (void)hv_stores(hv, "mode", dlp_mode_sv(aTHX_ r->mode));
        (void)hv_stores(hv, "waiting", newSViv(r->waiting));
        (void)hv_stores(hv, "upgrading", newSViv(r->upgrading));
        (void)hv_stores(hv, "pid", newSViv(r->pid));
        (void)hv_stores(hv, "host", newSVpv(r->host, 0));
        (void)hv_stores(hv, "age", newSVnv(r->age));
        return newRV_noinc((SV *)hv);
}

MODULE = Dirlock        PACKAGE = Dirlock

PROTOTYPES: DISABLE

void
code_names()
    PPCODE:
        for (int c = 0; dirlock_code_name(c) != NULL; c++)
                XPUSHs(sv_2mortal(newSVpv(dirlock_code_name(c), 0)));

SV *
code_name(number)
        int number
    CODE:
        const char *n = dirlock_code_name(number);
        RETVAL = n ? newSVpv(n, 0) : newSV(0);
    OUTPUT:
        RETVAL

const char *
strerror(number)
        int number
    CODE:
        RETVAL = dirlock_strerror(number);
    OUTPUT:
        RETVAL

const char *
library_version()
    CODE:
        RETVAL = DIRLOCK_VERSION;
    OUTPUT:
        RETVAL

SV *
acquire(class, space, name, ...)
        SV *class
        dlp_space space
        SV *name
    PREINIT:
        dlp_request r;
        dirlock_error err;
        int rc;
    CODE:
        (void)class;
        dlp_parse_options(aTHX_ &ST(3), items - 3, &r, ACQUIRE_OPTIONS);
        if (SvROK(name) && SvTYPE(SvRV(name)) == SVt_PVAV) {
                AV *av = (AV *)SvRV(name);
                SSize_t n = av_len(av) + 1;
                if (r.ranged)
                        dlp_invalid(aTHX_ "range locks are taken one name at a time");
                const char **names;
                Newx(names, n > 0 ? n : 1, const char *);
                SAVEFREEPV(names);
                for (SSize_t i = 0; i < n; i++) {
                        SV **e = av_fetch(av, i, 0);
                        names[i] = dlp_cstr(aTHX_ e ? *e : &PL_sv_undef, DIRLOCK_ENAME, "lock name");
                }
                dirlock_set *set;
                rc = dirlock_acquire_many(space, names, (size_t)n, &r.o, &set, &err);
                if (rc != DIRLOCK_OK)
                        dlp_throw_err(aTHX_ rc, &err);
                dlp_set *s;
                Newxz(s, 1, dlp_set);
                s->set = set;
                s->pid = getpid();
                RETVAL = dlp_wrap(aTHX_ "Dirlock::Set", s);
        } else {
                dirlock *h;
                const char *n = dlp_cstr(aTHX_ name, DIRLOCK_ENAME, "lock name");
                if (r.ranged)
                        rc = dirlock_acquire_range(space, n, r.lo, r.hi, &r.o, &h, &err);
                else
                        rc = dirlock_acquire(space, n, &r.o, &h, &err);
                if (rc != DIRLOCK_OK)
                        dlp_throw_err(aTHX_ rc, &err);
                dlp_lock *l;
                Newxz(l, 1, dlp_lock);
                l->h = h;
                l->reentrant = (r.o.flags & DIRLOCK_REENTRANT) != 0;
                snprintf(l->name, sizeof l->name, "%s", dirlock_name(h));
                RETVAL = dlp_wrap(aTHX_ "Dirlock", l);
        }
    OUTPUT:
        RETVAL

void
release(self)
        SV *self
    PREINIT:
        dirlock_error err;
    CODE:
        dlp_lock *l = dlp_lock_of(aTHX_ self);
        dirlock *h = dlp_handle(aTHX_ self, DIRLOCK_EBALANCE);
        int rc = dirlock_release(h, &err);
        if (!l->reentrant)
                l->h = NULL; /* freed by the library, whatever rc says */
        if (rc != DIRLOCK_OK)
                dlp_throw_err(aTHX_ rc, &err);

void
reacquire(self)
        SV *self
    PREINIT:
        dirlock_error err;
    CODE:
        int rc = dirlock_reacquire(dlp_handle(aTHX_ self, DIRLOCK_ELOST), &err);
        if (rc != DIRLOCK_OK)
                dlp_throw_err(aTHX_ rc, &err);

void
refresh(self)
        SV *self
    PREINIT:
        dirlock_error err;
    CODE:
        int rc = dirlock_refresh(dlp_handle(aTHX_ self, DIRLOCK_ELOST), &err);
        if (rc != DIRLOCK_OK)
                dlp_throw_err(aTHX_ rc, &err);

int
check(self)
        SV *self
    PREINIT:
        dirlock_error err;
    CODE:
        int rc = dirlock_check(dlp_handle(aTHX_ self, DIRLOCK_ELOST), &err);
        if (rc != DIRLOCK_OK)
                dlp_throw_err(aTHX_ rc, &err);
        RETVAL = 1;
    OUTPUT:
        RETVAL

UV
fence(self)
        SV *self
    PREINIT:
        dirlock_error err;
        unsigned long long f;
    CODE:
        int rc = dirlock_fence(dlp_handle(aTHX_ self, DIRLOCK_ELOST), &f, &err);
        if (rc != DIRLOCK_OK)
                dlp_throw_err(aTHX_ rc, &err);
        RETVAL = (UV)f;
    OUTPUT:
        RETVAL

void
upgrade(self, ...)
        SV *self
    PREINIT:
        dlp_request r;
        dirlock_error err;
    CODE:
        dirlock *h = dlp_handle(aTHX_ self, DIRLOCK_ELOST);
        int rc;
        if (items > 1) {
                dlp_parse_options(aTHX_ &ST(1), items - 1, &r, UPGRADE_OPTIONS);
                rc = dirlock_upgrade(h, &r.o, &err);
        } else {
                rc = dirlock_upgrade(h, NULL, &err);
        }
        if (rc != DIRLOCK_OK)
                dlp_throw_err(aTHX_ rc, &err);

void
downgrade(self)
        SV *self
    PREINIT:
        dirlock_error err;
    CODE:
        int rc = dirlock_downgrade(dlp_handle(aTHX_ self, DIRLOCK_ELOST), &err);
        if (rc != DIRLOCK_OK)
                dlp_throw_err(aTHX_ rc, &err);

void
downgrade_intent(self)
        SV *self
    PREINIT:
        dirlock_error err;
    CODE:
        int rc = dirlock_downgrade_intent(dlp_handle(aTHX_ self, DIRLOCK_ELOST), &err);
        if (rc != DIRLOCK_OK)
                dlp_throw_err(aTHX_ rc, &err);

void
shrink(self, lo, hi)
        SV *self
        SV *lo
        SV *hi
    PREINIT:
        dirlock_error err;
    CODE:
        dirlock *h = dlp_handle(aTHX_ self, DIRLOCK_ELOST);
        int rc = dirlock_shrink(h, dlp_number(aTHX_ lo, "LO"), dlp_number(aTHX_ hi, "HI"), &err);
        if (rc != DIRLOCK_OK)
                dlp_throw_err(aTHX_ rc, &err);

const char *
name(self)
        SV *self
    CODE:
        RETVAL = dlp_lock_of(aTHX_ self)->name;
    OUTPUT:
        RETVAL

SV *
token(self)
        SV *self
    CODE:
        dirlock *h = dlp_handle_or_null(aTHX_ self);
        RETVAL = h ? newSVpv(dirlock_token(h), 0) : newSV(0);
    OUTPUT:
        RETVAL

SV *
mode(self)
        SV *self
    CODE:
        dirlock *h = dlp_handle_or_null(aTHX_ self);
        RETVAL = h ? dlp_mode_sv(aTHX_ dirlock_mode_of(h)) : newSV(0);
    OUTPUT:
        RETVAL

void
range(self)
        SV *self
    PREINIT:
        double lo, hi;
    PPCODE:
        dirlock *h = dlp_handle_or_null(aTHX_ self);
        if (h != NULL && dirlock_range_of(h, &lo, &hi)) {
                mXPUSHn(lo);
                mXPUSHn(hi);
        }

void
DESTROY(self)
        SV *self
    PREINIT:
        dirlock_error err;
    CODE:
        dlp_lock *l = dlp_lock_of(aTHX_ self);
        if (l->h != NULL) {
                const char *name = dirlock_name(l->h);
                char kept[DIRLOCK_NAME_MAX + 1];
                snprintf(kept, sizeof kept, "%s", name);
                int rc = dirlock_free(l->h, &err);
                l->h = NULL;
                /* A lock broken while it was held, or that could not be
                 * let go, is worth a word: nobody else will say it. */
                if (rc != DIRLOCK_OK)
                        warn("Dirlock: lock '%s' released at the end of its scope: %s (%s)\n", kept,
                             err.code == rc ? err.message : dirlock_strerror(rc), dirlock_code_name(rc));
        }
        Safefree(l);

SV *
inspect(class, space, name, ...)
        SV *class
        dlp_space space
        dlp_name name
    PREINIT:
        dirlock_error err;
        dirlock_owner o;
    CODE:
        (void)class;
        double stale = dlp_judge_options(aTHX_ &ST(3), items - 3, NULL);
        int rc = dirlock_inspect(space, name, stale, &o, &err);
        if (rc == DIRLOCK_ENOLOCK)
                RETVAL = newSV(0);
        else if (rc != DIRLOCK_OK)
                dlp_throw_err(aTHX_ rc, &err);
        else
                RETVAL = dlp_owner_hash(aTHX_ &o);
    OUTPUT:
        RETVAL

void
list(class, space, ...)
        SV *class
        dlp_space space
    PREINIT:
        dirlock_error err;
        dirlock_owner *owners;
        size_t n;
    PPCODE:
        (void)class;
        double stale = dlp_judge_options(aTHX_ &ST(2), items - 2, NULL);
        int rc = dirlock_list(space, stale, &owners, &n, &err);
        if (rc != DIRLOCK_OK)
                dlp_throw_err(aTHX_ rc, &err);
        EXTEND(SP, (SSize_t)n);
        for (size_t i = 0; i < n; i++)
                PUSHs(sv_2mortal(dlp_owner_hash(aTHX_ &owners[i])));
        free(owners);

int
break(class, space, name, ...)
        SV *class
        dlp_space space
        dlp_name name
    PREINIT:
        dirlock_error err;
        int force;
    CODE:
        (void)class;
        double stale = dlp_judge_options(aTHX_ &ST(3), items - 3, &force);
        int rc = dirlock_break(space, name, stale, force, &err);
        if (rc != DIRLOCK_OK)
                dlp_throw_err(aTHX_ rc, &err);
        RETVAL = 1;
    OUTPUT:
        RETVAL

int
cleanup(class, space)
        SV *class
        dlp_space space
    PREINIT:
        dirlock_error err;
    CODE:
        (void)class;
        int rc = dirlock_cleanup(space, &err);
        if (rc != DIRLOCK_OK)
                dlp_throw_err(aTHX_ rc, &err);
        RETVAL = 1;
    OUTPUT:
        RETVAL

void
ranges(class, space, name)
        SV *class
        dlp_space space
        dlp_name name
    PREINIT:
        dirlock_error err;
        dirlock_range_info *info;
        size_t n;
    PPCODE:
        (void)class;
        int rc = dirlock_ranges(space, name, &info, &n, &err);
        if (rc != DIRLOCK_OK)
                dlp_throw_err(aTHX_ rc, &err);
        EXTEND(SP, (SSize_t)n);
        for (size_t i = 0; i < n; i++)
                PUSHs(sv_2mortal(dlp_range_hash(aTHX_ &info[i])));
        free(info);

SV *
space_info(class, space)
        SV *class
        dlp_space space
    PREINIT:
        dirlock_error err;
        dirlock_space_info info;
    CODE:
        (void)class;
        int rc = dirlock_space_query(space, &info, &err);
        if (rc != DIRLOCK_OK)
                dlp_throw_err(aTHX_ rc, &err);
        HV *hv = newHV();
        (void)hv_stores(hv, "backend", newSVpv(info.backend, 0));
        (void)hv_stores(hv, "dir", info.dir ? newSVpv(info.dir, 0) : newSV(0));
        (void)hv_stores(hv, "ranges", newSViv(info.ranges));
        (void)hv_stores(hv, "fences", newSViv(info.fences));
        (void)hv_stores(hv, "upgrade", newSViv(info.upgrade));
        (void)hv_stores(hv, "owner_records", newSViv(info.owner_records));
        RETVAL = newRV_noinc((SV *)hv);
    OUTPUT:
        RETVAL

void
space_forms()
    PREINIT:
        const char *form;
        int built;
    PPCODE:
        for (size_t i = 0; (form = dirlock_space_form(i, &built)) != NULL; i++) {
                HV *hv = newHV();
                (void)hv_stores(hv, "form", newSVpv(form, 0));
                (void)hv_stores(hv, "built", newSViv(built));
                XPUSHs(sv_2mortal(newRV_noinc((SV *)hv)));
        }

MODULE = Dirlock        PACKAGE = Dirlock::Set

void
release(self)
        SV *self
    PREINIT:
        dirlock_error err;
    CODE:
        dlp_set *s = dlp_set_of(aTHX_ self);
        if (s->set == NULL)
                dlp_throw(aTHX_ DIRLOCK_EBALANCE, 0, "the lock set was released already");
        /* dirlock_release_many() in a forked child frees the child's
         * copies and answers OK; a child is told, as for one lock. */
        if (s->pid != getpid()) {
                char msg[256];
                snprintf(msg, sizeof msg,
                         "lock set of process %ld is not released by process %ld (a child after fork does "
                         "not own its parent's locks)",
                         (long)s->pid, (long)getpid());
                (void)dirlock_release_many(s->set, NULL);
                s->set = NULL;
                dlp_throw(aTHX_ DIRLOCK_ENOTOWNER, 0, msg);
        }
        int rc = dirlock_release_many(s->set, &err);
        s->set = NULL;
        if (rc != DIRLOCK_OK)
                dlp_throw_err(aTHX_ rc, &err);

void
refresh(self)
        SV *self
    PREINIT:
        dirlock_error err;
    CODE:
        dlp_set *s = dlp_set_of(aTHX_ self);
        if (s->set == NULL)
                dlp_throw(aTHX_ DIRLOCK_EBALANCE, 0, "the lock set was released already");
        int rc = dirlock_refresh_many(s->set, &err);
        if (rc != DIRLOCK_OK)
                dlp_throw_err(aTHX_ rc, &err);

int
check(self)
        SV *self
    PREINIT:
        dirlock_error err;
    CODE:
        dlp_set *s = dlp_set_of(aTHX_ self);
        if (s->set == NULL)
                dlp_throw(aTHX_ DIRLOCK_EBALANCE, 0, "the lock set was released already");
        for (size_t i = 0; i < dirlock_set_count(s->set); i++) {
                int rc = dirlock_check(dirlock_set_lock(s->set, i), &err);
                if (rc != DIRLOCK_OK)
                        dlp_throw_err(aTHX_ rc, &err);
        }
        RETVAL = 1;
    OUTPUT:
        RETVAL

void
names(self)
        SV *self
    PPCODE:
        dlp_set *s = dlp_set_of(aTHX_ self);
        if (s->set != NULL)
                for (size_t i = 0; i < dirlock_set_count(s->set); i++)
                        XPUSHs(sv_2mortal(newSVpv(dirlock_name(dirlock_set_lock(s->set, i)), 0)));

UV
count(self)
        SV *self
    CODE:
        dlp_set *s = dlp_set_of(aTHX_ self);
        RETVAL = s->set ? (UV)dirlock_set_count(s->set) : 0;
    OUTPUT:
        RETVAL

void
DESTROY(self)
        SV *self
    PREINIT:
        dirlock_error err;
    CODE:
        dlp_set *s = dlp_set_of(aTHX_ self);
        if (s->set != NULL) {
                int rc = dirlock_release_many(s->set, &err);
                s->set = NULL;
                if (rc != DIRLOCK_OK && rc != DIRLOCK_ENOTOWNER)
                        warn("Dirlock: lock set released at the end of its scope: %s (%s)\n",
                             err.code == rc ? err.message : dirlock_strerror(rc), dirlock_code_name(rc));
        }
        Safefree(s);
