# t/50-fork.t - a lock belongs to the process that took it: a child after
# fork cannot release, refresh or check its parent's lock (ENOTOWNER),
# and its copy going out of scope leaves the parent's lock held.
use strict;
use warnings;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use DirlockTest qw(spaces);
use Dirlock;
use POSIX ();

# in_child CODE: runs CODE in a child (exiting normally, destructors and
# all); returns the lines it printed.
sub in_child {
        my ($code) = @_;
        pipe(my $r, my $w) or die "pipe: $!";
        my $pid = fork;
        die "fork: $!" unless defined $pid;
        if ($pid == 0) {
                close $r;
                select((select($w), $| = 1)[0]);
                $code->($w);
                exit 0;
        }
        close $w;
        my @lines = <$r>;
        waitpid $pid, 0;
        chomp @lines;
        return (@lines, "exit $?");
}

sub code_of { my ($code) = @_; return eval { $code->(); 1 } ? 'OK' : ref $@ ? $@->code : "$@" }

for my $s (spaces()) {
        my ($label, $space) = @$s;
        for my $kind ('plain', 'reentrant') {
                my $lock  = Dirlock->acquire($space, 'f', $kind eq 'reentrant' ? (reentrant => 1) : ());
                my $token = $lock->token;
                my @got   = in_child(sub {
                        my ($out) = @_;
                        print {$out} 'check ',   code_of(sub { $lock->check }),   "\n";
                        print {$out} 'refresh ', code_of(sub { $lock->refresh }), "\n";
                        print {$out} 'release ', code_of(sub { $lock->release }), "\n";
                        print {$out} 'taker ', code_of(sub { Dirlock->acquire($space, 'f', nonblocking => 1) }), "\n";
                });
                is_deeply(\@got, [ 'check ENOTOWNER', 'refresh ENOTOWNER', 'release ENOTOWNER', 'taker EBUSY', 'exit 0' ],
                        "$label, $kind: the child is refused, and sees the lock held");
                is($lock->check, 1, "$label, $kind: the parent still holds it");
                is(Dirlock->inspect($space, 'f')->{token}, $token, "$label, $kind: ... under the same token");

                # A child that only lets its copy go out of scope.
                @got = in_child(sub { undef $lock; print {$_[0]} "dropped\n" });
                is_deeply(\@got, [ 'dropped', 'exit 0' ], "$label, $kind: a child drops its copy quietly");
                is($lock->check, 1, "$label, $kind: the parent still holds it");
                is(code_of(sub { Dirlock->acquire($space, 'f', nonblocking => 1) }), 'EBUSY',
                        "$label, $kind: others still find it busy");
                $lock->release;
                is(Dirlock->inspect($space, 'f'), undef, "$label, $kind: the parent releases it");
        }

        # A set after fork.
        my $set = Dirlock->acquire($space, [qw(s1 s2)]);
        my @got = in_child(sub { print {$_[0]} code_of(sub { $set->release }), "\n" });
        is_deeply(\@got, [ 'ENOTOWNER', 'exit 0' ], "$label: a child cannot release a set");
        is($set->check, 1, "$label: the parent's set is intact");
}

done_testing;
