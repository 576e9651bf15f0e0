#!/usr/bin/perl
# counter.pl - a CGI hit counter in Perl, with the Dirlock module.
#
# Each visit reads the count, adds one and writes it back (a temporary
# file renamed over the count): a read-modify-write, which the lock
# makes one visit at a time.
#
# COUNTER_DIR: where the count and its lock live (default
# /var/lib/counter), writable by the web server's user.
# COUNTER_DELAY_MS: a pause inside the read-modify-write (default none),
# which the tests use to make overlaps certain.
use strict;
use warnings;
use Dirlock;
use Time::HiRes ();

my $dir = $ENV{COUNTER_DIR} // '/var/lib/counter';

my $lock = eval { Dirlock->acquire("$dir/locks", 'counter', timeout => 10) };
if (!$lock) {
        die $@ unless ref $@ && $@->isa('Dirlock::Error::ETIMEDOUT');
        print "Status: 503 Service Unavailable\r\nRetry-After: 1\r\n",
            "Content-Type: text/plain\r\n\r\nBusy, please try again.\n";
        exit;
}

# Under the lock.
my $n = 0;
if (open my $in, '<', "$dir/count") {
        $n = <$in> // 0;
        chomp $n;
        close $in;
}
Time::HiRes::sleep($ENV{COUNTER_DELAY_MS} / 1000) if $ENV{COUNTER_DELAY_MS};
$n++;
open my $out, '>', "$dir/count.tmp" or die "$dir/count.tmp: $!";
print {$out} "$n\n";
close $out or die "$dir/count.tmp: $!";
$lock->check;    # dies (ELOST) if the lock was broken as stale meanwhile
rename "$dir/count.tmp", "$dir/count" or die "rename: $!";
$lock->release;

print "Content-Type: text/plain\r\n\r\nvisit $n\n";
