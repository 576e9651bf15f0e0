# t/70-die.t - a lock held across die: it is still held while the error
# is thrown, released as the stack unwinds (in eval, in with, in a process
# that dies of it), and left to the next taker at once by a process killed
# outright.
use strict;
use warnings;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use DirlockTest qw(spaces);
use Dirlock;
use Time::HiRes ();

sub held { my ($space, $name) = @_; return defined Dirlock->inspect($space, $name) }

for my $s (spaces()) {
        my ($label, $space) = @$s;

        my $held_at_die;
        my $ok = eval {
                local $SIG{__DIE__} = sub { $held_at_die = held($space, 'd') };
                my $lock = Dirlock->acquire($space, 'd');
                die "boom\n";
        };
        is($@, "boom\n", "$label: the error comes through");
        ok($held_at_die, "$label: the lock is held when die is called");
        ok(!held($space, 'd'), "$label: ... and released by the unwinding");

        my $err = bless { why => 'mine' }, 'My::Error';
        eval { Dirlock->with($space, 'd', sub { die $err }) };
        is($@, $err, "$label: with passes the block's error object through unchanged");
        ok(!held($space, 'd'), "$label: ... after releasing");

        eval {
                my $set = Dirlock->acquire($space, [qw(d e)]);
                die "set\n";
        };
        ok(!held($space, 'd') && !held($space, 'e'), "$label: a set is released by die too");

        # A process that dies of an uncaught error while holding the lock.
        pipe(my $r, my $w) or die;
        my $pid = fork;
        if ($pid == 0) {
                close $r;
                open STDERR, '>&', $w;
                my $lock = Dirlock->acquire($space, 'd');
                die "uncaught\n";
        }
        close $w;
        my $stderr = join '', <$r>;
        waitpid $pid, 0;
        isnt($? >> 8, 0, "$label: the child died");
        is($stderr, "uncaught\n", "$label: ... saying only why (no word from Dirlock)");
        ok(!held($space, 'd'), "$label: ... and its lock was released");

        # A process killed outright cannot unwind: its lock stays, and the
        # next taker on this host breaks it at once (its owner is dead).
        pipe($r, $w) or die;
        $pid = fork;
        if ($pid == 0) {
                close $r;
                my $lock = Dirlock->acquire($space, 'd', stale_age => 60);
                syswrite $w, "held\n";
                sleep 60;
                exit 0;
        }
        close $w;
        my $line = <$r>;
        kill 'KILL', $pid;
        waitpid $pid, 0;
        ok(held($space, 'd'), "$label: a killed holder leaves its lock");
        my $t0   = Time::HiRes::time();
        my $lock = Dirlock->acquire($space, 'd', timeout => 30);
        ok(Time::HiRes::time() - $t0 < 5, "$label: the next taker gets it at once, not after the stale age");
}

done_testing;
