# t/40-admin.t - inspect, list, break and cleanup: a lock left by a
# process that died is seen dead and broken; a live one is refused
# unless forced.
use strict;
use warnings;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use DirlockTest qw(spaces);
use Dirlock;
use POSIX ();
use Time::HiRes ();

sub code_of { my ($code) = @_; return eval { $code->(); 1 } ? 'OK' : ref $@ ? $@->code : "$@" }

# left_by_dead_child SPACE NAME: a child takes the lock and dies without
# releasing it (no destructors run: _exit).
sub left_by_dead_child {
        my ($space, $name) = @_;
        my $pid = fork;
        die "fork: $!" unless defined $pid;
        if ($pid == 0) {
                my $l = Dirlock->acquire($space, $name, stale_age => 60);
                POSIX::_exit(0);
        }
        waitpid $pid, 0;
        return $pid;
}

for my $s (spaces()) {
        my ($label, $space) = @$s;
        is(Dirlock->inspect($space, 'none'), undef, "$label: inspect of a free lock is undef");
        is(code_of(sub { Dirlock->break($space, 'none') }), 'ENOLOCK', "$label: break of a free lock");

        my $lock = Dirlock->acquire($space, 'live', stale_age => 60);
        my $o    = Dirlock->inspect($space, 'live');
        is($o->{name}, 'live', "$label: name");
        is($o->{pid}, $$, "$label: pid");
        ok($o->{start_time} > 0, "$label: start_time");
        ok(length $o->{host}, "$label: host $o->{host}");
        is($o->{token}, $lock->token, "$label: token");
        ok(abs($o->{acquired} - time) < 60, "$label: acquired is now");
        ok($o->{age} >= 0 && $o->{age} < 60, "$label: age");
        is($o->{same_host},   1, "$label: same_host");
        is($o->{owner_alive}, 1, "$label: owner_alive");
        is($o->{stale},       0, "$label: not stale");
        is($o->{mode}, 'exclusive', "$label: mode");
        is(code_of(sub { Dirlock->break($space, 'live') }), 'ELIVE', "$label: a live lock is not broken");
        ok($lock->check, "$label: ... and still ours");

        my @list = Dirlock->list($space);
        ok((grep { $_->{name} eq 'live' && $_->{pid} == $$ } @list), "$label: list shows it");
        is_deeply([ map { $_->{name} } @list ], [ sort map { $_->{name} } @list ], "$label: list is in name order");

        Dirlock->break($space, 'live', force => 1);
        is(code_of(sub { $lock->check }), 'ELOST', "$label: forced break: the holder learns it lost the lock");
        is(code_of(sub { $lock->release }), 'ELOST', "$label: ... and its release says so");

        my $dead = left_by_dead_child($space, 'dead');
        $o = Dirlock->inspect($space, 'dead');
        is($o->{pid}, $dead, "$label: a dead child's lock is left");
        is($o->{owner_alive}, 0, "$label: ... its owner seen dead");
        is($o->{stale},       1, "$label: ... so it is stale");
        ok(eval { Dirlock->break($space, 'dead'); 1 }, "$label: break of a dead owner's lock");
        is(Dirlock->inspect($space, 'dead'), undef, "$label: ... gone");
        left_by_dead_child($space, 'dead');
        my $t0 = Time::HiRes::time();
        ok(Dirlock->acquire($space, 'dead', timeout => 30), "$label: the next taker breaks it");
        ok(Time::HiRes::time() - $t0 < 5, "$label: ... at once, not after the stale age");
        ok(eval { Dirlock->cleanup($space); 1 }, "$label: cleanup");
}

my $info = Dirlock->space_info('flock:/some/where');
is_deeply([ @$info{qw(backend dir fences)} ], [ 'flock', '/some/where', 0 ], 'space_info of a flock: space');
$info = Dirlock->space_info('/some/where');
is_deeply([ @$info{qw(backend dir ranges fences upgrade owner_records)} ], [ 'directory', '/some/where', 1, 1, 1, 1 ],
        'space_info of a directory');
ok(!-e '/some/where', '... which it does not touch');
my @forms = Dirlock::space_forms();
like($forms[0]{form}, qr/^DIR\b/, 'space_forms: a directory first');
ok((grep { $_->{form} =~ /^flock:/ && $_->{built} } @forms), 'space_forms: flock:DIR, built');
my $e = eval { Dirlock->space_info(''); 1 } ? undef : $@;
is($e && $e->code, 'EINVAL', 'space_info of an empty string');

done_testing;
