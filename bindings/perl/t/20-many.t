# t/20-many.t - several names at once: all or none, in name order,
# released together (explicitly or at scope exit), refreshed and checked.
use strict;
use warnings;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use DirlockTest qw(spaces);
use Dirlock;

sub held { my ($space, $name) = @_; return defined Dirlock->inspect($space, $name) }

for my $s (spaces()) {
        my ($label, $space) = @$s;
        {
                my $set = Dirlock->acquire($space, [qw(log index log count)], timeout => 5);
                isa_ok($set, 'Dirlock::Set', "$label: a list of names");
                is_deeply([ $set->names ], [qw(count index log)], "$label: every name once, in name order");
                is($set->count, 3, "$label: count");
                ok(held($space, $_), "$label: $_ held") for qw(count index log);
                is($set->check, 1, "$label: check");
                ok(eval { $set->refresh; 1 }, "$label: refresh");
        }
        ok(!held($space, $_), "$label: $_ released at scope exit") for qw(count index log);

        # All or none: one name held elsewhere, none of the others taken.
        my $one = Dirlock->acquire($space, 'index', no_deadlock => 1);    # another process's hold
        my $e   = eval { Dirlock->acquire($space, [qw(log index count)], nonblocking => 1); 1 } ? undef : $@;
        is($e && $e->code, 'EBUSY', "$label: a set with a held name is busy");
        ok(!held($space, 'log') && !held($space, 'count'), "$label: ... and holds none of the others");
        $e = eval { Dirlock->acquire($space, [qw(log index)], timeout => 0.2); 1 } ? undef : $@;
        is($e && $e->code, 'ETIMEDOUT', "$label: the timeout covers the set");
        $one->release;

        my $set = Dirlock->acquire($space, [qw(a b)]);
        $set->release;
        ok(!held($space, 'a') && !held($space, 'b'), "$label: release");
        $e = eval { $set->release; 1 } ? undef : $@;
        is($e && $e->code, 'EBALANCE', "$label: a second release");
        is(Dirlock->with($space, [qw(a b)], sub { held($space, 'a') && held($space, 'b') ? 'both' : 'not' }),
                'both', "$label: with takes a set too");
        ok(!held($space, 'a'), "$label: ... and releases it");
        $e = eval { Dirlock->acquire($space, [ 'ok', '../bad' ]); 1 } ? undef : $@;
        is($e && $e->code, 'ENAME', "$label: a bad name in the set");
        ok(!held($space, 'ok'), "$label: ... nothing taken");
        $e = eval { Dirlock->acquire($space, [qw(a b)], range => [ 0, 1 ]); 1 } ? undef : $@;
        is($e && $e->code, 'EINVAL', "$label: no ranges for sets");
}

done_testing;
