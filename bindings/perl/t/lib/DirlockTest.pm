# t/lib/DirlockTest.pm - what the module's tests share: a private
# temporary directory, the lock spaces to run against (a directory, and a
# private redis-server on a unix socket when one can be started), and a
# counter file worked on by several processes.
package DirlockTest;

use strict;
use warnings;
use Exporter 'import';
use File::Temp ();
use POSIX ();
use Time::HiRes ();

our @EXPORT_OK = qw(tmpdir spaces redis_space redis_why bump_counter read_counter);

# Removed at the end by the process that made it (File::Temp keys it by
# pid), never by a forked child or a thread (threads share the pid: an
# object's destructor would run in each).
my $tmp = File::Temp::tempdir('dirlock-perl.XXXXXX', TMPDIR => 1, CLEANUP => 1);
my ($redis_pid, $redis_space, $redis_why);
my $test_pid = $$; # children forked by a test leave the server alone

sub tmpdir { return $tmp }

# The private Redis server, started on first use; undef (and a reason in
# redis_why) where there is none.  It has no persistence and is killed at
# the end of the test (and by the kernel if the test dies: PDEATHSIG).
sub redis_space {
        return $redis_space if $redis_space || $redis_why;
        my $server = (grep { -x } map { "$_/redis-server" } split /:/, $ENV{PATH} || '')[0];
        if (!$server) {
                $redis_why = 'redis-server is not installed';
                return;
        }
        my $probe = eval { require Dirlock; Dirlock->list('redis+unix:///nonexistent'); 1 } ? '' : "$@";
        if ($probe =~ /no Redis support/) {
                $redis_why = 'the library was built without Redis support';
                return;
        }
        my $sock = tmpdir() . '/redis.sock';
        my $pid  = fork;
        die "fork: $!" unless defined $pid;
        if ($pid == 0) {
                open STDOUT, '>', tmpdir() . '/redis.log';
                open STDERR, '>&', \*STDOUT;
                my @setpriv = -x '/usr/bin/setpriv' ? ('/usr/bin/setpriv', '--pdeathsig', 'KILL') : ();
                { exec @setpriv, $server, '--port', '0', '--unixsocket', $sock, '--unixsocketperm', '700',
                    '--save', '', '--appendonly', 'no', '--dir', tmpdir(), '--daemonize', 'no' }
                POSIX::_exit(127);
        }
        $redis_pid = $pid;
        for (1 .. 500) {
                if (-S $sock && eval { Dirlock->list("redis+unix://$sock"); 1 }) {
                        $redis_space = "redis+unix://$sock";
                        return $redis_space;
                }
                Time::HiRes::sleep(0.01);
        }
        $redis_why = "redis-server did not start (see its log)";
        return;
}

sub redis_why { return $redis_why }

# The spaces a test runs against: [label, space] pairs.
sub spaces {
        mkdir tmpdir() . '/locks';
        my @s = ([directory => tmpdir() . '/locks']);
        push @s, [redis => redis_space()] if redis_space();
        return @s;
}

# One read-modify-write of a counter file, with a pause between the read
# and the write where another process can slip in.
sub bump_counter {
        my ($file) = @_;
        my $n = read_counter($file);
        Time::HiRes::sleep(0.001);
        open my $fh, '>', "$file.tmp$$" or die "$file.tmp$$: $!";
        print {$fh} $n + 1, "\n";
        close $fh or die "close: $!";
        rename "$file.tmp$$", $file or die "rename: $!";
}

sub read_counter {
        my ($file) = @_;
        open my $fh, '<', $file or return 0;
        my $n = <$fh>;
        return defined $n ? $n + 0 : 0;
}

END {
        local $?; # the test's exit status, not the server's
        if ($redis_pid && $$ == $test_pid) {
                kill 'KILL', $redis_pid;
                waitpid $redis_pid, 0;
        }
}

1;
