# Dirlock.pm - the Perl side of the Dirlock module: loads the XS glue
# (Dirlock.xs) on first use, makes one exception class per error code of
# the library, runs a block under a lock (with), and documents it all
# (perldoc Dirlock).
package Dirlock;

# No `use strict` nor `use warnings`: strict.pm and warnings.pm (and
# overload.pm, below) would cost a CGI program more at start-up than the
# rest of the module.  The code is held to both all the same: t/00-load.t
# compiles this file under `use strict; use warnings`, and the test suite
# runs the module with warnings on everywhere (prove -w).  Its one
# symbolic reference is _error_classes's, on purpose.

# The module's version is the library's (lib/core/dirlock.h, its one
# home), as the glue was built with it: Makefile.PL gives it to MakeMaker
# from pkg-config and writes it here as it copies this file to blib.
our $VERSION = '@DIRLOCK_VERSION@';

# Dirlock::Error::EBUSY and the others: one class per code the library
# names, each a Dirlock::Error -- the names of the header the module was
# built against (DIRLOCK_CODES in lib/core/dirlock.h, written here by
# Makefile.PL), and, once the glue is loaded, any more the library it
# loaded names (dirlock_code_name).
sub _error_classes {
        for my $name (@_) {
                @{"Dirlock::Error::${name}::ISA"} = ('Dirlock::Error') if $name ne 'OK';
        }
}
_error_classes(split /,/, '@DIRLOCK_CODE_NAMES@');

# The glue (and the library under it) is loaded on the first call of one
# of its functions, not at `use Dirlock`: a CGI program that loads the
# module on every request and takes a lock on some pays the loading only
# on those.  AUTOLOAD meets the first call, whatever class it is made on
# (a subclass's too); `can` answers for the glue's functions before it is
# loaded.  A load that fails says why at every call, not only the first.
my $glue_loaded;

sub _load_glue {
        return if $glue_loaded;
        require XSLoader;
        XSLoader::load('Dirlock');
        $glue_loaded = 1;
        _error_classes(code_names());
}

our $AUTOLOAD;

sub AUTOLOAD {
        my $name = $AUTOLOAD;
        $name =~ s/\A.*:://;
        return if $name eq 'DESTROY' && !$glue_loaded;
        _load_glue();
        my $code = Dirlock->can($name);
        goto &$code if $code && $name ne 'AUTOLOAD';
        return if $name eq 'DESTROY';
        my (undef, $file, $line) = caller;
        my $on = @_ && defined $_[0] && UNIVERSAL::isa($_[0], 'Dirlock') ? (ref $_[0] || $_[0]) : undef;
        die defined $on
            ? qq{Can't locate object method "$name" via package "$on" at $file line $line.\n}
            : "Undefined subroutine &$AUTOLOAD called at $file line $line.\n";
}

sub can {
        _load_glue();
        my $class = shift;
        return $class->SUPER::can(@_);
}

# Threads: a lock belongs to the thread (and process) that took it; a new
# thread gets undef instead of a copy that would free it twice.
sub CLONE_SKIP { 1 }

sub with {
        my $class = shift;
        my $code  = pop;
        if (ref $code ne 'CODE') {
                Dirlock::Error->_throw(_code_number('EINVAL'), 'Dirlock->with: the last argument must be a code block',
                        0);
        }
        my $lock = $class->acquire(@_);
        my $want = wantarray;
        my @result;
        my $ok = eval {
                if    ($want)         { @result    = $code->($lock) }
                elsif (defined $want) { $result[0] = $code->($lock) }
                else                  { $code->($lock) }
                1;
        };
        my $error    = $@;
        my $released = eval { $lock->release; 1 };
        die $error unless $ok;
        die $@     unless $released;
        return $want ? @result : $result[0];
}

sub _code_number {
        my ($name) = @_;
        my @names = code_names();
        for my $i (0 .. $#names) {
                return $i if $names[$i] eq $name;
        }
        return -1;
}

package Dirlock::Set;

sub CLONE_SKIP { 1 }

package Dirlock::Error;

# Stringifying an error shows its message and where it was thrown.
# overload.pm is loaded with the first error, not at start-up.
my $overloaded;

sub _overload {
        require overload;
        overload->import(
                '""'     => sub { $_[0]->{message} . " at $_[0]->{file} line $_[0]->{line}.\n" },
                'bool'   => sub { 1 },
                fallback => 1
        );
        $overloaded = 1;
}

sub _throw {
        my (undef, $number, $message, $errno) = @_;
        _overload() unless $overloaded;
        my $name = Dirlock::code_name($number);
        my ($file, $line) = ('?', 0);
        for (my $i = 0; my @frame = caller($i); $i++) {
                next if $frame[0] =~ /\ADirlock(?:::|\z)/;
                ($file, $line) = @frame[1, 2];
                last;
        }
        $message = Dirlock::strerror($number) if !defined $message || $message eq '';
        my $class = defined $name ? "Dirlock::Error::$name" : 'Dirlock::Error';
        die bless {
                code    => defined $name ? $name : "E$number",
                number  => $number,
                message => $message,
                errno   => $errno || 0,
                file    => $file,
                line    => $line,
        }, $class;
}

sub code        { $_[0]->{code} }
sub number      { $_[0]->{number} }
sub message     { $_[0]->{message} }
sub errno       { $_[0]->{errno} }
sub description { Dirlock::strerror($_[0]->{number}) }
sub throw       { my $class = shift; $class->_throw(@_) }

1;

__END__

=head1 NAME

Dirlock - cross-process locks for CGI programs, over the dirlock C library

=head1 SYNOPSIS

    use Dirlock;

    # Taken here, released when $lock goes out of scope (or ->release).
    {
        my $lock = Dirlock->acquire('/var/lib/board/locks', 'messages', timeout => 10);
        # ... read the log, add the message, write it ...
        $lock->check;            # dies with Dirlock::Error::ELOST if it was broken
    }

    # A block under a lock; always released, whatever the block does.
    my $n = Dirlock->with($dir, 'counter', timeout => 5, sub {
        my ($lock) = @_;
        return update_counter();
    });

    # Errors are exceptions that carry the library's code and message.
    my $lock = eval { Dirlock->acquire($dir, 'messages', nonblocking => 1) };
    if (!$lock) {
        die $@ unless ref $@ && $@->code eq 'EBUSY';
        print "Status: 503 Service Unavailable\r\n...";
    }

    # Several names, all or none, in any order, without deadlock.
    my $set = Dirlock->acquire($dir, [qw(log index)], timeout => 5);

    # Readers and writers; ranges.
    my $r = Dirlock->acquire($dir, 'log', mode => 'shared');
    my $w = Dirlock->acquire($dir, 'log', mode => 'intent');
    $w->upgrade(timeout => 5);       # now exclusive
    my $part = Dirlock->acquire($dir, 'tree', range => [0.25, 0.5], mode => 'exclusive');

    # What is held, by whom; breaking and tidying.
    my $owner = Dirlock->inspect($dir, 'messages');   # undef when free
    my @locks = Dirlock->list($dir);
    Dirlock->break($dir, 'messages');                  # only if stale
    Dirlock->cleanup($dir);

=head1 DESCRIPTION

Dirlock binds libdirlock, the C library of the dirlock toolkit: locks made of directories, taken with an atomic
C<rename> (so they work on NFS), with timeouts, prompt wake-up, owner
records, race-free breaking of stale locks, many names at once,
reader-writer modes with policies, range locks, FIFO and reentrant
options, fencing tokens, and the same locks kept on a Redis server or an
etcd cluster shared by several hosts.  The library documents every
guarantee in its headers, F<lib/core/dirlock.h> and those of its modules,
and F<docs/library.md>; this page says how they look from Perl.

A I<lock space> is the first argument of every call: a directory (the
locks are directories in it; made if missing), C<flock:DIR> (the
kernel's C<flock(2)> on files in DIR), a Redis server,
C<redis://[[USER]:PASSWORD@]HOST[:PORT][/DB][?prefix=P]> (C<rediss://>
over TLS) or C<redis+unix:///SOCKET[?db=N&prefix=P]>, or an etcd
cluster, C<etcd://HOST[:PORT][,HOST[:PORT]...][/PREFIX]> (C<etcds://>
over TLS); C<man dirlock> gives every option of each.  Lock names are 1 to 64
characters of C<[A-Za-z0-9._-]>, not starting with a dot.

=head1 TAKING A LOCK

=head2 Dirlock->acquire($space, $name, %options)

Takes lock C<$name> and returns a C<Dirlock> object that holds it.  The
lock is released when the object goes out of scope (the last reference
goes), or at once by C<< $lock->release >>.  It dies with a
L</Dirlock::Error> when the lock cannot be had: C<EBUSY> (one try, held
by someone else), C<ETIMEDOUT>, C<ENAME>, C<EINVAL>, C<EIO>, ...

With C<range =E<gt> [$lo, $hi]> it locks the half-open range
C<[$lo, $hi)> of the name instead (ranges that do not overlap never wait
for each other).

=head2 Dirlock->acquire($space, [$name, ...], %options)

Takes every name of the list, or none: returns a C<Dirlock::Set>.
Duplicates collapse; the order does not matter and no two callers can
deadlock.  The timeout covers the whole set.

=head2 Dirlock->with($space, $name_or_names, %options, sub { ... })

Takes the lock, runs the block with the lock object as its argument, and
always releases, in the block's context: it returns what the block
returns.  If the block dies, the lock is released and its error goes on;
if the block returns but the lock was broken meanwhile, C<with> dies
with C<ELOST>.

=head2 Options

Every option of the library, by name:

=over

=item timeout => SECONDS

How long to wait: C<0> is one try (C<EBUSY> when held), a negative
number or C<undef> waits forever (the default); otherwise C<ETIMEDOUT>
when the time runs out.

=item nonblocking => 1

One try: the same as C<< timeout => 0 >>.

=item stale_age => SECONDS

A holder that neither releases nor refreshes for this long (180 s by
default, at least 0.1 s) may be broken by the next taker.  A holder on
this host that died is broken at once, whatever its age.

=item mode => 'exclusive' | 'shared' | 'intent'

Exclusive (the default, a writer), shared (a reader), or intent (an
upgradable read: compatible with readers, exclusive with other intent
holders and writers).

=item policy => 'fair' | 'writer' | 'reader' | 'simple'

How readers and writers share: no lockout either way (the default),
waiting writers first, readers first, or one holder at a time.

=item fifo => 1

Serve waiters strictly in arrival order.

=item reentrant => 1

The object counts holds: C<< $lock->reacquire >> adds one, each
C<release> drops one, the last releases the lock; the object can take it
again with C<reacquire>, and frees it when it goes out of scope.

=item no_mkdir => 1

Do not make a missing lock directory (C<EIO>, errno C<ENOENT>).

=item no_notify => 1

Never use inotify; back off and poll.

=item no_deadlock => 1

A hold that another thread or process may let go: it is left out of
deadlock detection (C<EDEADLK>), so a wait behind it is never reported
as a cycle.

=item cancel_fd => FD or HANDLE

Give up waiting (C<ECANCELED>) as soon as this descriptor (a number or a
Perl handle: a pipe, a socket) polls readable.  Only this call watches
it; it is never read or closed.

=item partner_pid => PID

A process of this host (normally our child) that holds the lock with us,
as a command under C<dirlock(1)> does: the lock counts as held while
either lives.

=item range => [LO, HI] or "LO:HI"

A range lock, above; as text, in the grammar of C<dirlock --range>
(F<lib/range/dirlock_range.h>, C<dirlock_range_parse>).

=back

=head1 LOCK OBJECTS

=over

=item $lock->release

Releases now (the object then holds nothing, and going out of scope does
nothing more).  Dies with C<ELOST> if the lock had been broken meanwhile
(another holder's lock is left alone), with C<ENOTOWNER> in a child
process after C<fork> (the parent keeps its lock), with C<EBALANCE> when
a reentrant lock has no hold left.

=item $lock->refresh

Renews the lock's age; a holder that refreshes at least every third of
the stale age is never judged stale.

=item $lock->check

Returns 1 while we hold the lock; dies with C<ELOST> when it was broken
(C<ENOTOWNER> in a child after C<fork>).

=item $lock->fence

A number for this acquisition, greater than that of every earlier
acquisition of the same lock in the same space: pass it with each write
to a store that refuses lower numbers (see F<docs/fencing.md>).  Not in
C<flock:> spaces (C<EINVAL>).

=item $lock->upgrade(%options)

Intent to exclusive, waiting only for the readers present (C<timeout>
as for C<acquire>; by default the acquire's).  A shared lock answers
C<EUPGRADE>.  On timeout the lock stays an intent lock.

=item $lock->downgrade

Exclusive to shared, with no writer let in between.

=item $lock->downgrade_intent

An upgraded intent lock back to intent: readers may enter again.

=item $lock->reacquire

Reentrant locks: one more hold (or the lock taken again after its last
release).

=item $lock->shrink($lo, $hi)

Narrows a range lock to a part of its range at once.

=item $lock->name, $lock->token, $lock->mode, $lock->range

The lock's name, the 128-bit random token of this acquisition (hex),
its mode (C<exclusive>, C<shared> or C<intent>) and, for a range lock,
C<($lo, $hi)> (an empty list otherwise).  Once the object has released
its lock, token and mode are C<undef> and range is empty; the calls that
need the lock held die with C<ELOST>.

=back

A C<Dirlock::Set> has C<release>, C<refresh>, C<check>, C<names> (in
name order) and C<count>, and releases when it goes out of scope.

=head2 Processes and threads

A lock belongs to the process that took it.  After C<fork>, the child's
copy refuses to release, refresh or check (C<ENOTOWNER>), and when it goes
out of scope in the child it lets go of the child's copy only: the
parent's lock stays held.  A new Perl thread gets C<undef> in place of
the lock objects of the thread that made it (C<CLONE_SKIP>).

A wait blocks inside the library: Perl's deferred ("safe") signals run
their handlers only after it returns, so C<alarm> with a C<die> in
C<$SIG{ALRM}> cannot end it.  Give a C<timeout>, or a C<cancel_fd> that
something else makes readable.  A signal without a Perl handler (C<TERM>,
C<INT>) still ends the process at once, and its locks with it: a lock of
a process that died is broken by the next taker on the host at once.

=head1 INSPECTING AND BREAKING

=over

=item Dirlock->inspect($space, $name, stale_age => SECONDS)

The owner record of lock C<$name> as a hash reference, or C<undef> when
the lock is free: C<name>, C<pid>, C<start_time>, C<host>, C<token>,
C<acquired> (seconds since the epoch), C<age> (seconds since acquire or
last refresh), C<same_host>, C<owner_alive> (1, 0, or C<undef> when it
cannot be told: another host), C<stale> (whether it would be broken now
with the given stale age), C<mode>, C<readers>, C<partner>, C<ranges>.

=item Dirlock->list($space, stale_age => SECONDS)

Every lock of the space that exists (held, or with readers or waiters),
as C<inspect> describes it, in name order.

=item Dirlock->break($space, $name, force => 1, stale_age => SECONDS)

Breaks the exclusive hold of lock C<$name> if it is stale (C<ELIVE>
otherwise), or whatever its state with C<force>.  Never removes a lock
taken after the judgement it acted on.  C<ENOLOCK> when there is no such
lock; C<ELIVE> too when no exclusive holder but readers, ranges or
permits hold it (the next process that waits for one of them breaks it
once it is dead or stale).

=item Dirlock->cleanup($space)

Removes what crashed processes left behind.  Safe at any time.

=item Dirlock->ranges($space, $name)

Every range holder and waiter of lock C<$name>, ordered by C<lo>: hash
references with C<lo>, C<hi>, C<mode>, C<waiting>, C<upgrading>, C<pid>,
C<host>, C<age>.

=item Dirlock->space_info($space)

What the space string names, without touching the space: a hash
reference with C<backend> (C<directory>, C<flock>, C<Redis>, ...),
C<dir> (the directory of a space on this host, else C<undef>), and
whether the kind of space offers C<ranges>, C<fences>, C<upgrade> and
C<owner_records>.  C<EINVAL> for a kind this build does not have.

=item Dirlock::space_forms()

The forms a space string may take, for usage texts: hash references
with C<form> (C<DIR>, C<flock:DIR>, C<redis://...>) and C<built> (0 for
a kind this build of the library does not have).

=back

=head1 Dirlock::Error

Every failure dies with an object of class C<Dirlock::Error::CODE>, a
subclass of C<Dirlock::Error>, where CODE is the library's name of the
code without its C<DIRLOCK_> prefix (C<EBUSY>, C<ETIMEDOUT>, C<ELOST>,
...).  The classes are made when the module loads, one per code the
library names, so a library with new codes brings new classes.

    eval { ... };
    if (ref $@ && $@->isa('Dirlock::Error')) {
        warn $@->code, ': ', $@->message, "\n";      # EBUSY: lock 'x' is held by ...
    }
    if (ref $@ && $@->isa('Dirlock::Error::ETIMEDOUT')) { ... }

=over

=item $err->code

The code's name: C<'EBUSY'>.

=item $err->message

The library's message, naming the lock, the path and the holder.

=item $err->errno

The system's C<errno> for C<EIO>, else 0.

=item $err->number

The code's number in this library (prefer C<code>).

=item $err->description

The code's short fixed text (C<lock is busy>).

=back

The object stringifies as the message and the caller's file and line.
Wrong arguments (an unknown option, a mode that does not exist) are
C<EINVAL> errors too.

=head1 FUNCTIONS

C<Dirlock::code_names()> lists the library's code names by number;
C<Dirlock::code_name($n)> and C<Dirlock::strerror($n)> give one;
C<Dirlock::library_version()> is the version of the library built in.

=head1 SEE ALSO

F<docs/bindings.md> (install, a CGI example, how errors map),
F<docs/library.md>, L<dirlock(1)>.

=cut
