# t/00-load.t - the module loads, states its version, loads the glue only
# at its first call (and neither strict.pm nor warnings.pm, though its
# code is held to both), and makes one Dirlock::Error class per code the
# library names.
use strict;
use warnings;
use Test::More;
use FindBin;
use File::Copy ();
use File::Spec ();
use File::Temp ();

# Loading the module loads neither the glue nor XSLoader, strict.pm or
# warnings.pm (a fresh perl: this one's Test::More has loaded them); the
# version is there before the glue, and the first call or `can` loads it.
{
        my $probe = 'print join(" ", grep({ exists $INC{$_} } qw(XSLoader.pm strict.pm warnings.pm)) ? "heavy" : "light", $Dirlock::VERSION,'
            . ' defined &Dirlock::acquire ? "glue" : "noglue", Dirlock->can("acquire") ? "can" : "cannot",'
            . ' defined &Dirlock::acquire ? "glue" : "noglue")';
        open my $perl, '-|', $^X, (map { "-I$_" } grep { !ref } @INC), '-MDirlock', '-e', $probe
            or die "cannot run $^X: $!";
        my $out = do { local $/; <$perl> };
        close $perl;
        like($out, qr/\Alight \d+\.\d+\.\d+ noglue can glue\z/,
                'use Dirlock loads no glue; $VERSION is there; can() loads it') or diag $out;
}

# The glue loaded at the first call on a subclass; the error classes
# there before it (the codes' names are written in at build time); a
# glue that cannot be loaded says so at every call, not at the first
# alone (a persistent process asks again).
{
        my @inc = map { "-I$_" } grep { !ref } @INC;
        my $run = sub {
                open my $perl, '-|', $^X, @_ or die "cannot run $^X: $!";
                my $out = do { local $/; <$perl> };
                close $perl;
                return $out;
        };
        my $dir = File::Temp::tempdir(CLEANUP => 1);
        is($run->(@inc, '-MDirlock', '-e',
                        'package My; our @ISA = ("Dirlock"); package main; my $l = My->acquire($ARGV[0], "sub"); '
                            . 'print ref $l, " ", $l->name',
                        $dir),
                'Dirlock sub', "a subclass's first call loads the glue and runs");
        is($run->(@inc, '-MDirlock', '-e',
                        'print exists $INC{"XSLoader.pm"} ? "loaded " : "", Dirlock::Error::EBUSY->isa("Dirlock::Error") ? "isa" : "not"'),
                'isa', 'the error classes are there before the glue');
        my $alone = File::Temp::tempdir(CLEANUP => 1);
        my ($pm) = grep { -f "$_/Dirlock.pm" } grep { !ref } @INC;
        File::Copy::copy("$pm/Dirlock.pm", "$alone/Dirlock.pm") or die "copy: $!";
        local $ENV{PERL5LIB}; # the glue only where the test puts it: nowhere
        is($run->("-I$alone", '-e',
                        'require Dirlock; for (1, 2) { eval { Dirlock::library_version() }; '
                            . 'print $@ =~ /locate loadable object|Can.t load/ ? "load error;" : "other: $@;" }'),
                'load error;load error;', 'a glue that cannot be loaded is said at every call');
}

# The module loads neither strict.pm nor warnings.pm (start-up), and is
# held to both: its file compiles under them with no error or warning.
{
        my $pm = File::Spec->catfile((grep { !ref && -f "$_/Dirlock.pm" } @INC)[0], 'Dirlock.pm');
        open my $in, '<', $pm or die "cannot read $pm: $!";
        my $src = do { local $/; <$in> };
        my $dir = File::Temp::tempdir(CLEANUP => 1);
        open my $out, '>', "$dir/Strict.pm" or die "cannot write: $!";
        print {$out} "use strict; use warnings;\n", $src;
        close $out;
        my $said = `$^X -c "$dir/Strict.pm" 2>&1`;
        like($said, qr/\A\S+ syntax OK\n\z/, 'Dirlock.pm compiles under use strict and use warnings') or diag $said;
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
