# t/80-threads.t - Perl threads: a new thread gets no copy of the lock
# objects of the thread that made it (so none is freed twice), and
# threads that take locks of their own wait for each other.
use strict;
use warnings;
use Config;
use Test::More;
BEGIN { plan skip_all => 'this perl has no threads' unless $Config{useithreads} }
use threads;
use FindBin;
use lib "$FindBin::Bin/lib";
use DirlockTest qw(tmpdir);
use Dirlock;
use Time::HiRes ();

my $dir  = tmpdir() . '/locks';
my $lock = Dirlock->acquire($dir, 't');
my $seen = threads->create(sub { ref $lock })->join;
is($seen, 'SCALAR', 'a new thread sees no Dirlock object where its parent has one');
ok($lock->check, 'the lock is still held after the thread ended');

# A thread waits for the lock another thread holds.
my $t0 = Time::HiRes::time();
my $t  = threads->create(sub {
        my $l = Dirlock->acquire($dir, 't', timeout => 10);
        return Time::HiRes::time();
});
Time::HiRes::sleep(0.3);
$lock->release;
my $got = $t->join;
ok($got - $t0 >= 0.25, 'the second thread got the lock after the first released it');
is(Dirlock->inspect($dir, 't'), undef, 'and released it when its object went away');

done_testing;
