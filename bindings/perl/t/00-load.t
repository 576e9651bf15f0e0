# t/00-load.t - the module loads, states its version, loads the glue only
# at its first call, and makes one Dirlock::Error class per code the
# library names.
use strict;
use warnings;
use Test::More;
use FindBin;

# Loading the module loads neither the glue nor XSLoader (a fresh perl:
# this one's Test::More may have loaded XSLoader already); the version is
# there before the glue, and the first call or `can` loads it.
{
        my $probe = 'print join(" ", exists $INC{"XSLoader.pm"} ? "xsloader" : "light", $Dirlock::VERSION,'
            . ' defined &Dirlock::acquire ? "glue" : "noglue", Dirlock->can("acquire") ? "can" : "cannot",'
            . ' defined &Dirlock::acquire ? "glue" : "noglue")';
        open my $perl, '-|', $^X, (map { "-I$_" } grep { !ref } @INC), '-MDirlock', '-e', $probe
            or die "cannot run $^X: $!";
        my $out = do { local $/; <$perl> };
        close $perl;
        like($out, qr/\Alight \d+\.\d+\.\d+ noglue can glue\z/,
                'use Dirlock loads no glue; $VERSION is there; can() loads it') or diag $out;
}

use_ok('Dirlock');

my @names = Dirlock::code_names();
is($names[0], 'OK', 'code 0 is OK');
ok(scalar(@names) >= 18, 'the library names its codes (' . scalar(@names) . ')');
for my $i (1 .. $#names) {
        my $class = "Dirlock::Error::$names[$i]";
        ok($class->isa('Dirlock::Error'), "$class is a Dirlock::Error");
        is(Dirlock::code_name($i), $names[$i], "code_name($i)");
        isnt(Dirlock::strerror($i), 'unknown dirlock error', "strerror($i) has a text");
}
ok(!Dirlock::Error::EBUSY->isa('Dirlock::Error::ETIMEDOUT'), 'the classes are distinct');
is(Dirlock::code_name(scalar @names), undef, 'no name past the last code');
like(Dirlock::library_version(), qr/\A\d+\.\d+\.\d+\z/, 'library_version');
is($Dirlock::VERSION, Dirlock::library_version(), '$Dirlock::VERSION is the library\'s');
SKIP: {
        # In the source tree: the version lib/core/dirlock.h states.
        open my $h, '<', "$FindBin::Bin/../../../lib/core/dirlock.h" or skip 'not in the source tree', 1;
        my ($header) = map { /^#define DIRLOCK_VERSION "(.*)"$/ ? $1 : () } <$h>;
        is($Dirlock::VERSION, $header, '... which lib/core/dirlock.h states');
}

done_testing;
