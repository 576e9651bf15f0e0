# t/60-counter.t - several processes add one to a counter file, each a
# read, a pause and a write: under the lock none of the additions is lost;
# the same without a lock (the twin) loses some, which shows the test can
# fail.
use strict;
use warnings;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use DirlockTest qw(tmpdir spaces bump_counter read_counter);
use Dirlock;
use POSIX ();

my $PROCS = 6;
my $EACH  = 30;

# run_workers FILE CODE: PROCS processes each call CODE EACH times;
# returns the number of workers that failed.
sub run_workers {
        my ($file, $code) = @_;
        unlink $file;
        my @pids;
        for (1 .. $PROCS) {
                my $pid = fork;
                die "fork: $!" unless defined $pid;
                if ($pid == 0) {
                        my $ok = eval { $code->() for 1 .. $EACH; 1 };
                        print STDERR "# worker $$: $@" unless $ok;
                        POSIX::_exit($ok ? 0 : 1);
                }
                push @pids, $pid;
        }
        my $failed = 0;
        for (@pids) { waitpid $_, 0; $failed++ if $? != 0 }
        return $failed;
}

my $want = $PROCS * $EACH;
for my $s (spaces()) {
        my ($label, $space) = @$s;
        my $file = tmpdir() . "/counter-$label";

        is(run_workers($file, sub { Dirlock->with($space, 'counter', timeout => 60, sub { bump_counter($file) }) }),
                0, "$label: every locked worker finished");
        is(read_counter($file), $want, "$label: with: $PROCS processes x $EACH, none lost");

        is(run_workers($file, sub {
                my $lock = Dirlock->acquire($space, 'counter', timeout => 60);
                bump_counter($file);
        }), 0, "$label: every scoped worker finished");
        is(read_counter($file), $want, "$label: a lock per scope: none lost");
}

my $file = tmpdir() . '/counter-none';
is(run_workers($file, sub { bump_counter($file) }), 0, 'every unlocked worker finished');
my $got = read_counter($file);
cmp_ok($got, '<', $want, "no lock: additions are lost ($got of $want kept)");

done_testing;
