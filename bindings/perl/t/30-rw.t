# t/30-rw.t - reader-writer modes, upgrade and downgrade, policies,
# reentrant holds, and range locks.
use strict;
use warnings;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use DirlockTest qw(spaces);
use Dirlock;

sub code_of { my ($code) = @_; return eval { $code->(); 1 } ? 'OK' : ref $@ ? $@->code : "$@" }

for my $s (spaces()) {
        my ($label, $space) = @$s;

        # Readers share; a writer waits for them.
        my $r1 = Dirlock->acquire($space, 'rw', mode => 'shared');
        my $r2 = Dirlock->acquire($space, 'rw', mode => 'shared', nonblocking => 1);
        is($r2->mode, 'shared', "$label: two readers at once");
        is(Dirlock->inspect($space, 'rw')->{readers}, 2, "$label: inspect counts the readers");
        is(code_of(sub { Dirlock->acquire($space, 'rw', nonblocking => 1) }), 'EBUSY', "$label: a writer is kept out");
        is(code_of(sub { $r1->upgrade(nonblocking => 1) }), 'EUPGRADE', "$label: a reader cannot upgrade");
        undef $r1;
        undef $r2;

        # Intent: with readers, alone among intent holders, upgrades.
        my $i = Dirlock->acquire($space, 'rw', mode => 'intent');
        my $r = Dirlock->acquire($space, 'rw', mode => 'shared', nonblocking => 1, no_deadlock => 1);
        ok($r, "$label: a reader beside an intent holder");
        is(code_of(sub { Dirlock->acquire($space, 'rw', mode => 'intent', nonblocking => 1) }),
                'EBUSY', "$label: a second intent holder is kept out");
        is(code_of(sub { $i->upgrade(timeout => 0.2) }), 'ETIMEDOUT', "$label: upgrade waits for the reader");
        is($i->mode, 'intent', "$label: ... and stays intent on timeout");
        undef $r;
        $i->upgrade(timeout => 5);
        is($i->mode, 'exclusive', "$label: upgrade once the reader left");
        is(code_of(sub { Dirlock->acquire($space, 'rw', mode => 'shared', nonblocking => 1) }),
                'EBUSY', "$label: readers wait for the upgraded holder");
        $i->downgrade_intent;
        is($i->mode, 'intent', "$label: downgrade_intent");
        ok(Dirlock->acquire($space, 'rw', mode => 'shared', nonblocking => 1), "$label: ... lets readers in");
        undef $i;

        my $w = Dirlock->acquire($space, 'rw');
        $w->downgrade;
        is($w->mode, 'shared', "$label: downgrade to shared");
        ok(Dirlock->acquire($space, 'rw', mode => 'shared', nonblocking => 1), "$label: ... readers come in");
        undef $w;

        for my $p (qw(fair writer reader simple)) {
                my $l = Dirlock->acquire($space, "p-$p", mode => 'shared', policy => $p);
                is($l->mode, 'shared', "$label: policy $p");
        }
        ok(Dirlock->acquire($space, 'f', fifo => 1, timeout => 1), "$label: fifo");

        # Reentrant: holds are counted.
        my $re = Dirlock->acquire($space, 're', reentrant => 1);
        $re->reacquire;
        $re->release;
        ok(Dirlock->inspect($space, 're'), "$label: reentrant: held after one of two releases");
        $re->release;
        ok(!Dirlock->inspect($space, 're'), "$label: ... free after the second");
        is(code_of(sub { $re->release }), 'EBALANCE', "$label: ... a third is EBALANCE");
        $re->reacquire;
        ok(Dirlock->inspect($space, 're'), "$label: reacquire takes it again");
        undef $re;
        ok(!Dirlock->inspect($space, 're'), "$label: freed at scope exit");
        my $plain = Dirlock->acquire($space, 'plain');
        is(code_of(sub { $plain->reacquire }), 'EINVAL', "$label: no reacquire without reentrant");
        undef $plain;

        # Ranges.
        my $a = Dirlock->acquire($space, 'tree', range => [ 0, 0.5 ]);
        is_deeply([ $a->range ], [ 0, 0.5 ], "$label: range");
        my $b = Dirlock->acquire($space, 'tree', range => [ 0.5, 1 ], nonblocking => 1);
        ok($b, "$label: a range beside it");
        is(code_of(sub { Dirlock->acquire($space, 'tree', range => [ 0.25, 0.75 ], nonblocking => 1) }),
                'EBUSY', "$label: an overlapping range is busy");
        is(code_of(sub { Dirlock->acquire($space, 'tree', nonblocking => 1) }), 'EBUSY',
                "$label: the whole lock conflicts with every range");
        $a->shrink(0, 0.25);
        is_deeply([ $a->range ], [ 0, 0.25 ], "$label: shrink");
        ok(Dirlock->acquire($space, 'tree', range => [ 0.3, 0.4 ], nonblocking => 1),
                "$label: ... lets in what no longer overlaps");
        is(code_of(sub { $a->shrink(0, 0.5) }), 'EINVAL', "$label: a range cannot grow");
        my @ranges = Dirlock->ranges($space, 'tree');
        is(scalar @ranges, 2, "$label: ranges lists the holders");
        is_deeply([ map { [ $_->{lo}, $_->{hi}, $_->{mode}, $_->{waiting}, $_->{pid} ] } @ranges ],
                [ [ 0, 0.25, 'exclusive', 0, $$ ], [ 0.5, 1, 'exclusive', 0, $$ ] ], "$label: ... in order");
        is(code_of(sub { Dirlock->acquire($space, 'tree', range => [ 0, 1 ], reentrant => 1) }),
                'EINVAL', "$label: ranges are not reentrant");
        undef $a;
        undef $b;
        my $t = Dirlock->acquire($space, 'tree', range => '0.25:5e-1');
        is_deeply([ $t->range ], [ 0.25, 0.5 ], "$label: a range as text, as dirlock --range takes it");
        for my $bad ('0.5:0.25', '1:', 'inf:2', ' 0:1') {
                is(code_of(sub { Dirlock->acquire($space, 'tree', range => $bad) }), 'EINVAL',
                        "$label: range '$bad': EINVAL");
        }
}

done_testing;
