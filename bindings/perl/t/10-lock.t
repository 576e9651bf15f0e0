# t/10-lock.t - one lock in one process: taken, held while its object
# lives, released at scope exit or by release; refresh, check, fence,
# accessors; every option by name; errors as Dirlock::Error objects
# carrying the library's code and message; with.
use strict;
use warnings;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use DirlockTest qw(tmpdir spaces redis_why);
use Dirlock;
use POSIX ();
use Time::HiRes ();

diag('Redis half skipped: ' . redis_why()) if !grep { $_->[0] eq 'redis' } spaces();

sub held { my ($space, $name) = @_; return defined Dirlock->inspect($space, $name) }

for my $s (spaces()) {
        my ($label, $space) = @$s;

        # Scope and explicit release.
        {
                my $lock = Dirlock->acquire($space, 'a');
                isa_ok($lock, 'Dirlock', "$label: acquire");
                ok(held($space, 'a'), "$label: held while the object lives");
                is($lock->name, 'a', "$label: name");
                like($lock->token, qr/\A[0-9a-f]{32}\z/, "$label: token");
                is($lock->mode, 'exclusive', "$label: mode");
                is_deeply([ $lock->range ], [], "$label: no range");
                is($lock->check, 1, "$label: check");
                ok(eval { $lock->refresh; 1 }, "$label: refresh");
                my $f = $lock->fence;
                ok($f > 0, "$label: fence $f");
                is($lock->fence, $f, "$label: the same fence for the same acquisition");
                my $owner = Dirlock->inspect($space, 'a');
                is($owner->{pid},   $$,           "$label: inspect names this process");
                is($owner->{token}, $lock->token, "$label: inspect shows the token");
        }
        ok(!held($space, 'a'), "$label: released at the end of the scope");

        my $lock = Dirlock->acquire($space, 'a');
        my $f1   = $lock->fence;
        $lock->release;
        ok(!held($space, 'a'), "$label: release");
        my $e = eval { $lock->release; 1 } ? undef : $@;
        isa_ok($e, 'Dirlock::Error::EBALANCE', "$label: a second release");
        $e = eval { $lock->check; 1 } ? undef : $@;
        isa_ok($e, 'Dirlock::Error::ELOST', "$label: check after the release");
        is($lock->name, 'a', "$label: the name stays");
        ok(!defined $lock->token && !defined $lock->mode, "$label: no token or mode once released");
        undef $lock;
        # Stands for another process's hold below: no_deadlock.
        $lock = Dirlock->acquire($space, 'a', no_deadlock => 1);
        ok($lock->fence > $f1, "$label: a later acquisition has a greater fence");

        # Busy, timeout, and the error objects.
        $e = eval { Dirlock->acquire($space, 'a', nonblocking => 1); 1 } ? undef : $@;
        isa_ok($e, 'Dirlock::Error::EBUSY', "$label: nonblocking on a held lock");
        isa_ok($e, 'Dirlock::Error',        "$label: ... a Dirlock::Error");
        is($e->code, 'EBUSY', "$label: ->code");
        like($e->message, qr/'a'.*$$/, "$label: ->message names the lock and the holder");
        is($e->number,      1,              "$label: ->number");
        is($e->errno,       0,              "$label: ->errno");
        is($e->description, 'lock is busy', "$label: ->description");
        like("$e", qr/\Q${\ $e->message }\E at \S*10-lock\.t line \d+\.\n\z/, "$label: stringifies with the caller's line");
        $e = eval { Dirlock->acquire($space, 'a', timeout => 0); 1 } ? undef : $@;
        is($e && $e->code, 'EBUSY', "$label: timeout 0 is one try");
        my $t0 = time;
        $e = eval { Dirlock->acquire($space, 'a', timeout => 0.3); 1 } ? undef : $@;
        is($e && $e->code, 'ETIMEDOUT', "$label: timeout on a held lock");
        $lock->release;

        # with
        is(Dirlock->with($space, 'w', sub { ok(held($space, 'w'), "$label: held in the block"); 'r' }),
                'r', "$label: with returns the block's value");
        is_deeply([ Dirlock->with($space, 'w', sub { (1, 2, 3) }) ], [ 1, 2, 3 ], "$label: ... in list context");
        ok(!held($space, 'w'), "$label: with released");
        $e = eval { Dirlock->with($space, 'w', timeout => 1, sub { die "boom\n" }); 1 } ? undef : $@;
        is($e, "boom\n", "$label: the block's error goes on");
        ok(!held($space, 'w'), "$label: ... and the lock was released");
        $e = eval {
                Dirlock->with($space, 'w', sub { Dirlock->break($space, 'w', force => 1); 'done' });
                1;
        } ? undef : $@;
        is($e && $e->code, 'ELOST', "$label: with dies ELOST when the lock was broken meanwhile");
        Dirlock->with($space, 'w', sub { is($_[0]->name, 'w', "$label: the block gets the lock") });
}

my $dir = tmpdir() . '/locks';

# Names and options.
for my $bad ('', '.x', '../x', 'a/b', 'a b', 'x' x 65) {
        my $e = eval { Dirlock->acquire($dir, $bad); 1 } ? undef : $@;
        is($e && $e->code, 'ENAME', "bad name '$bad': ENAME");
}
# A NUL byte would cut a string short in C: another name, another place.
for my $case ([ "a\0b", 'ENAME', 'a name with a NUL byte' ], [ undef, 'ENAME', 'an undef name' ],
        [ [ 'x', "a\0" ], 'ENAME', 'a set with a NUL byte in a name' ]) {
        my ($name, $code, $what) = @$case;
        my $e = eval { Dirlock->acquire($dir, $name); 1 } ? undef : $@;
        is($e && $e->code, $code, "$what: $code");
}
ok(!Dirlock->inspect($dir, 'a') && !Dirlock->inspect($dir, 'x'), '... and nothing was taken under a shorter name');
for my $space ("$dir\0/elsewhere", undef) {
        my $e = eval { Dirlock->acquire($space, 'a'); 1 } ? undef : $@;
        is($e && $e->code, 'EINVAL', 'a lock space ' . (defined $space ? 'with a NUL byte' : 'undef') . ': EINVAL');
}
# A reference is no path: as a string it would be a directory ARRAY(0x...).
my $e_ref = eval { Dirlock->acquire([], 'a'); 1 } ? undef : $@;
is($e_ref && $e_ref->code, 'EINVAL', 'a lock space that is a reference: EINVAL');
$e_ref = eval { Dirlock->acquire($dir, {}); 1 } ? undef : $@;
is($e_ref && $e_ref->code, 'ENAME', 'a lock name that is a hash reference: ENAME');
my $e0 = eval { Dirlock->inspect($dir, "a\0b"); 1 } ? undef : $@;
is($e0 && $e0->code, 'ENAME', 'inspect of a name with a NUL byte: ENAME');

my %invalid = (
        'an unknown option'        => [ bogus       => 1 ],
        'an unknown mode'          => [ mode        => 'exclusively' ],
        'an unknown policy'        => [ policy      => 'unfair' ],
        'a stale age below 0.1 s'  => [ stale_age   => 0.05 ],
        'a timeout not a number'   => [ timeout     => 'soon' ],
        'a closed cancel handle'   => [ cancel_fd   => do { open my $fh, '<', '/dev/null'; close $fh; $fh } ],
        'a partner that is absent' => [ partner_pid => 2**22 + 1 ],
        # Past an int, truncated, 2**32 + 1 would be pid 1 and 2**32 fd 0.
        'a partner past a pid'     => [ partner_pid => 2**32 + 1 ],
        'a partner not a number'   => [ partner_pid => 'abc' ],
        'a partner a reference'    => [ partner_pid => [] ],
        'a cancel fd past an fd'   => [ cancel_fd   => 2**32 ],
        'a cancel fd a hash'       => [ cancel_fd   => {} ],
        'a range upside down'      => [ range       => [ 2, 1 ] ],
        'a range not a pair'       => [ range       => [1] ],
        'nonblocking with a timeout' => [ nonblocking => 1, timeout => 5 ],
        'an odd list of options'   => ['timeout'],
);
for my $what (sort keys %invalid) {
        my $e = eval { Dirlock->acquire($dir, 'o', @{ $invalid{$what} }); 1 } ? undef : $@;
        isa_ok($e, 'Dirlock::Error::EINVAL', $what);
        diag("$what: " . $e->message) if $e && $ENV{TEST_VERBOSE};
}
my $e = eval { Dirlock->with($dir, 'o', timeout => 1); 1 } ? undef : $@;
isa_ok($e, 'Dirlock::Error::EINVAL', 'with without a block');
is(Dirlock->inspect($dir, 'o'), undef, '... takes nothing');
$e = eval { Dirlock->acquire("$dir/absent", 'o', no_mkdir => 1); 1 } ? undef : $@;
is($e && $e->code, 'EIO', 'no_mkdir: EIO');
is($e && $e->errno, POSIX::ENOENT(), '... with errno ENOENT');
like($e && $e->message, qr{\Q$dir\E/absent}, '... naming the directory');
{
        my $l = Dirlock->acquire($dir, 'o', timeout => undef, stale_age => 30, policy => 'writer', fifo => 1,
                no_notify => 1, partner_pid => $$, mode => 'exclusive');
        my $o = Dirlock->inspect($dir, 'o');
        is($o->{partner}, $$, 'partner_pid is in the owner record');
        ok(!$o->{stale}, 'a fresh lock is not stale');
        ok(Dirlock->inspect($dir, 'o', stale_age => 0.1) && 1, 'inspect with a stale age');
}

# flock: spaces behind the same objects.
{
        my $l = Dirlock->acquire("flock:$dir", 'k');
        my $e = eval { Dirlock->acquire("flock:$dir", 'k', nonblocking => 1); 1 } ? undef : $@;
        is($e && $e->code, 'EBUSY', 'flock: busy');
        $e = eval { $l->fence; 1 } ? undef : $@;
        is($e && $e->code, 'EINVAL', 'flock: no fences');
}
ok(eval { Dirlock->acquire("flock:$dir", 'k', nonblocking => 1)->release; 1 }, 'flock: released at scope exit');

# The cancel descriptor ends a wait.
{
        my $l = Dirlock->acquire($dir, 'c', no_deadlock => 1);    # another process's hold
        pipe(my $r, my $w) or die "pipe: $!";
        my $pid = fork;
        if ($pid == 0) {
                select(undef, undef, undef, 0.3);
                syswrite $w, "x";
                POSIX::_exit(0);
        }
        my $t0 = Time::HiRes::time();
        my $e  = eval { Dirlock->acquire($dir, 'c', timeout => 10, cancel_fd => $r); 1 } ? undef : $@;
        is($e && $e->code, 'ECANCELED', 'cancel_fd (a handle) ends the wait');
        ok(Time::HiRes::time() - $t0 < 5, '... at once');
        waitpid $pid, 0;
        $e = eval { Dirlock->acquire($dir, 'c', timeout => 10, cancel_fd => fileno($r)); 1 } ? undef : $@;
        is($e && $e->code, 'ECANCELED', 'cancel_fd (a number) on a readable pipe');
}

done_testing;
