#!/bin/bash
# man-pages.t - the manual pages in man/: each passes man/lint (mandoc
# -Tlint, every message down to style, and groff's warnings as man(1)
# renders it), which is first shown failing on pages with deliberate
# mistakes; the section-3 pages name exactly the
# functions the public headers declare (lib/core/dirlock.h and each
# module's lib/*/dirlock_*.h), and each synopsis shows its functions as
# they are declared, under the header that declares them (first shown
# failing on a page that names the wrong header and argument); dirlock(1)'s table of what each kind
# of space offers, and its address forms, say what the library says;
# their references to the
# project's pages lead somewhere; dirlock_strerror(3) lists exactly the header's
# error codes and dirlock_acquire(3) exactly its flags; the structures
# in the synopses have the header's fields; every example compiles
# against the header; and make install-man installs every page and a
# link for every other name, which man finds.
. "$(dirname "$0")/tap.sh"
cd "$TOP" || exit 1
if ! command -v mandoc >/dev/null 2>&1; then
	echo "1..0 # SKIP mandoc is not installed (apt-get install mandoc)"
	exit 0
fi
CC=${CC:-cc}
# The core's header (the codes, the flags) and every public header.
HEADER=lib/core/dirlock.h
HEADERS=(lib/*/dirlock*.h)
# The include directories of a program built in the tree: every folder
# of lib/ with a header (lib/lib.mk's LIB_INCLUDES).
mapfile -t INCLUDES < <(for h in lib/*/*.h; do echo "-I${h%/*}"; done | sort -u)
pages=(man/*.[0-9])
pages3=(man/*.3)
mapfile -t with_examples < <(grep -l '^\.Sh EXAMPLES' "${pages3[@]}")
plan $((3 + ${#pages[@]} + 10 + ${#with_examples[@]} + 3))

# ---- the lint can fail ------------------------------------------------

cat >"$T/broken.3" <<'EOF'
.Dd November 26, 2026
.Dt BROKEN 3
.Os
.Sh NAME
.Nm broken
.Nd a page with mistakes
.Sh DESCRIPTION
.Bl -tag
.It Fn broken
See
.Xr flock .
EOF
said=$(man/lint "$T/broken.3")
st=$?
[ "$st" -eq 1 ] && echo "$said" | grep -q 'broken.3:8:2: ERROR: appending missing end of block: Bl' &&
	echo "$said" | grep -q 'missing section argument: Xr flock'
ok $? "man/lint fails a page with an unclosed list and a reference without a section"
[ "$st" -eq 1 ] || diag "status $st: $said"

printf '.Dd November 26, 2026\n.Dt SLIP 3\n.Os\n.Sh NAME\n.Nm slip\n.Nd a style slip\n.Sh DESCRIPTION\nOne.  Two on a line.\n' >"$T/slip.3"
said=$(man/lint "$T/slip.3")
st=$?
[ "$st" -eq 1 ] && echo "$said" | grep -q 'new sentence, new line'
ok $? "man/lint fails a page with two sentences on one line"

# ... and a page groff cannot set on an 80-column terminal (lintian's
# groff-message): one word longer than the line.
if command -v man >/dev/null 2>&1; then
	printf '.Dd November 26, 2026\n.Dt WIDE 3\n.Os\n.Sh NAME\n.Nm wide\n.Nd a long word\n.Sh DESCRIPTION\n%s\n' \
		"$(printf 'x%.0s' $(seq 1 100))" >"$T/wide.3"
	said=$(man/lint "$T/wide.3")
	st=$?
	[ "$st" -eq 1 ] && echo "$said" | grep -q "can't break line"
	ok $? "man/lint fails a page with a word wider than an 80-column terminal (status $st)"
else
	skip "man-db is not installed: man/lint checks with mandoc only"
fi

# ---- every page is clean -------------------------------------------------

for page in "${pages[@]}"; do
	said=$(man/lint "$page")
	ok $? "$page passes mandoc -Tlint"
	[ -n "$said" ] && diag "$said"
done

# ---- the pages and the header agree ----------------------------------

# The functions the header declares (a declaration starts its line with
# its type), and the names the section-3 pages give (NAME sections).
sed -n 's/^[a-z][a-z_ ]*[ *]\(dirlock_[a-z_]*\)(.*/\1/p' "${HEADERS[@]}" | sort >"$T/functions"
{
	for page in "${pages3[@]}"; do basename "$page" .3; done
	man/links "${pages3[@]}" | sed 's/\.3 .*//'
} | grep -vx dirlock | sort >"$T/names"
diff "$T/functions" "$T/names" >"$T/diff"
ok $? "the section-3 pages name every function of the public headers, and no other ($(wc -l <"$T/functions") functions)"
[ -s "$T/diff" ] && diag "<: declared in the header only, >: named by a page only"
sed 's/^/  /' "$T/diff" | while read -r line; do diag "$line"; done

# References to the project's pages lead to a page or a link.
{ echo dirlock; cat "$T/names"; } | sort >"$T/known"
grep -ho '^\.Xr dirlock[a-z_]* 3' "${pages3[@]}" | awk '{print $2}' | sort -u >"$T/referenced"
missing=$(comm -23 "$T/referenced" "$T/known")
[ -z "$missing" ]
ok $? "every .Xr to a dirlock page leads to one ($(wc -l <"$T/referenced") names)${missing:+: missing $missing}"

# Each synopsis shows its functions as the headers declare them -- return
# type and arguments, spaces aside -- and names with .In a header that
# declares each (the public headers each include dirlock.h, so a page of
# a module's calls names the module's header).  synopses PAGE...: one
# line per disagreement, PAGE: what.
cat >"$T/synopses.pl" <<'EOF'
use strict;
use warnings;
my (@headers, @pages);
my $list = \@headers;
for (@ARGV) { if ($_ eq '--') { $list = \@pages } else { push @$list, $_ } }
sub norm { my $s = shift; $s =~ s/\s+/ /g; $s =~ s/\s*([*(),\[\]])\s*/$1/g; $s =~ s/^ | $//g; return $s }
my (%proto, %where);
for my $h (@headers) {
	open my $f, '<', $h or die "$h: $!";
	local $/;
	my $text = <$f>;
	$text =~ s{/\*.*?\*/}{ }gs;
	$text =~ s{^#(?:[^\n]*\\\n)*[^\n]*}{}gm;
	(my $base = $h) =~ s{.*/}{};
	my $args = qr/(?:[^()]|\((?:[^()]|\([^()]*\))*\))*/;
	while ($text =~ /(?:^|[;{}])\s*([A-Za-z_][\w \t\n*]*?)\b(dirlock_\w+)\s*\(($args)\)\s*(?=;)/gs) {
		$proto{$2} = norm($1) . '|' . join(',', map { norm($_) } split_args($3));
		$where{$2} = $base;
	}
}
sub split_args { # the arguments of a prototype, split at top-level commas
	my ($s, $depth, @out, $cur) = (shift, 0);
	$cur = '';
	for my $c (split //, $s) {
		$depth++ if $c eq '(';
		$depth-- if $c eq ')';
		if ($c eq ',' && $depth == 0) { push @out, $cur; $cur = ''; next }
		$cur .= $c;
	}
	push @out, $cur;
	return @out;
}
for my $page (@pages) {
	open my $f, '<', $page or die "$page: $!";
	my ($in, $ret, $name, @args, %inc, @shown) = (0, '');
	while (<$f>) {
		chomp;
		if (/^\.Sh /) { $in = /^\.Sh SYNOPSIS/; next }
		next unless $in;
		if (/^\.In (\S+)/) { $inc{$1} = 1 }
		elsif (/^\.Ft "?(.*?)"?$/) { $ret = $1 }
		elsif (/^\.Fn (\S+)\s*(.*)/) {
			my ($n, $rest) = ($1, $2);
			my @a = $rest =~ /"([^"]*)"|(\S+)/g;
			push @shown, [$n, $ret, grep { defined } @a];
		}
		elsif (/^\.Fo (\S+)/) { ($name, @args) = ($1) }
		elsif (/^\.Fa "([^"]*)"/ && defined $name) { push @args, $1 }
		elsif (/^\.Fc/ && defined $name) { push @shown, [$name, $ret, @args]; undef $name }
	}
	for (@shown) {
		my ($n, $r, @a) = @$_;
		if (!exists $proto{$n}) { print "$page: $n is declared in no public header\n"; next }
		my $got = norm($r) . '|' . join(',', map { norm($_) } @a);
		print "$page: $n is shown as '$got', declared '$proto{$n}'\n" if $got ne $proto{$n};
		print "$page: $n is declared in $where{$n}, which no .In names\n" unless $inc{$where{$n}};
	}
}
EOF
sed -e 's/^\.In dirlock_range\.h$/.In dirlock.h/' -e 's/"const char \*space"/"const char *lockdir"/' \
	man/dirlock_acquire_range.3 >"$T/dirlock_acquire_range.3"
said=$(perl "$T/synopses.pl" "${HEADERS[@]}" -- "$T/dirlock_acquire_range.3")
echo "$said" | grep -q "dirlock_acquire_range is declared in dirlock_range.h, which no .In names" &&
	echo "$said" | grep -q "dirlock_acquire_range is shown as 'int|const char\*lockdir,"
ok $? "a synopsis that names the wrong header, or an argument the header does not, is found"
[ -n "$said" ] || diag "nothing found in the broken page"
said=$(perl "$T/synopses.pl" "${HEADERS[@]}" -- "${pages3[@]}")
[ -z "$said" ]
ok $? "each synopsis shows its functions as the headers declare them, under their header's .In"
echo "$said" | while read -r line; do [ -n "$line" ] && diag "$line"; done

# dirlock_strerror(3) lists exactly the codes of enum dirlock_code, which
# DIRLOCK_CODES(X) makes: one X(NAME, "description") per code.
sed -n '/^#define DIRLOCK_CODES(X)/,/^$/p' "$HEADER" | sed -n 's/^ *X(\(E[A-Z]*\),.*/DIRLOCK_\1/p' | sort -u >"$T/codes"
sed -n '/^\.Sh ERRORS/,/^\.Sh /p' man/dirlock_strerror.3 | sed -n 's/^\.It Er \(DIRLOCK_E[A-Z]*\)$/\1/p' | sort >"$T/listed"
diff "$T/codes" "$T/listed" >"$T/diff"
ok $? "dirlock_strerror(3) lists every error code of the header, and no other ($(wc -l <"$T/codes") codes)"
sed 's/^/  /' "$T/diff" | while read -r line; do diag "$line"; done

# dirlock_acquire(3) lists exactly the header's flags.
sed -n 's/^#define \(DIRLOCK_[A-Z_]*\) *(1u << [0-9]*).*/\1/p' "$HEADER" | sort >"$T/flags"
sed -n '/^\.It Fa flags$/,/^\.It Fa mode$/p' man/dirlock_acquire.3 | sed -n 's/^\.It Dv \(DIRLOCK_[A-Z_]*\)$/\1/p' | sort >"$T/listed"
diff "$T/flags" "$T/listed" >"$T/diff"
ok $? "dirlock_acquire(3) lists every flag of the header, and no other ($(wc -l <"$T/flags") flags)"
sed 's/^/  /' "$T/diff" | while read -r line; do diag "$line"; done

# The structures the synopses show have the header's fields, in its
# order (comments and array sizes aside).
fields() { # fields FILE STRUCT: the names of its fields, one a line
	perl -0ne 'if (/typedef struct \Q'"$2"'\E \{(.*?)\}\s*\Q'"$2"'\E;/s) {
		($b = $1) =~ s{/\*.*?\*/}{}gs;
		for my $d (split /;/, $b) {
			$d =~ s/\[[^]]*\]//g;
			for (split /,/, $d) { print "$1\n" if /(\w+)\s*$/ }
		}
	}' "$1"
}
mapfile -t structs < <(sed -n 's/^typedef struct \(dirlock_[a-z_]*\) {$/\1/p' "${HEADERS[@]}")
bad=
for struct in "${structs[@]}"; do
	for h in "${HEADERS[@]}"; do fields "$h" "$struct"; done >"$T/want"
	shown=0
	for page in "${pages3[@]}"; do
		fields "$page" "$struct" >"$T/got"
		[ -s "$T/got" ] || continue
		shown=$((shown + 1))
		cmp -s "$T/want" "$T/got" || bad="$bad $struct($(basename "$page"))"
	done
	[ -s "$T/want" ] && [ "$shown" -ge 1 ] || bad="$bad $struct(not found)"
done
[ -z "$bad" ]
ok $? "the synopses show the header's structures with their fields${bad:+; differ:$bad}"

# The overview points to every other section-3 page.
for page in "${pages3[@]}"; do basename "$page" .3; done | grep -vx dirlock | sort >"$T/others"
sed -n 's/^\.It Xr \(dirlock_[a-z_]*\) 3$/\1/p' man/dirlock.3 | sort >"$T/listed"
diff "$T/others" "$T/listed" >"$T/diff"
ok $? "dirlock(3) lists every other section-3 page"
sed 's/^/  /' "$T/diff" | while read -r line; do diag "$line"; done

# dirlock(1)'s LOCK SPACES table says what dirlock_space_query says of
# each kind of space this build has: ranges, permits, fences, owner
# records (status, break).
cat >"$T/query.c" <<'EOF'
#include "dirlock.h"
#include <stdio.h>
int main(int argc, char **argv)
{
        const char *form;
        for (size_t i = 0; argc == 1 && (form = dirlock_space_form(i, NULL)) != NULL; i++)
                printf("%s\n", form);
        for (int i = 1; i < argc; i++) {
                dirlock_space_info q;
                if (dirlock_space_query(argv[i], &q, NULL) != DIRLOCK_OK) {
                        printf("absent\n");
                        continue;
                }
                printf("%s %s %s %s\n", q.ranges ? "yes" : "no", q.permits ? "yes" : "no",
                       q.fences ? "yes" : "no", q.owner_records ? "yes" : "no");
        }
        return 0;
}
EOF
# The table's rows, as "KIND yes no ...": the first cell names the kind.
mandoc -Tutf8 man/dirlock.1 | col -b | sed -n '/^LOCK SPACES/,/^SUBCOMMANDS/p' |
	awk '$1 == "directory" || $1 ~ /^(flock|redis|etcd):/ { $1 = $1; print }' >"$T/table"
# A sanitizer build's library needs its runtime linked into the program.
san=
[ "${SANITIZE:-}" = 1 ] && san="-fsanitize=address,undefined"
if "$CC" -std=c11 -D_GNU_SOURCE $san -Ilib/core -o "$T/query" "$T/query.c" -L"$BUILD_DIR" -ldirlock \
	-Wl,-rpath,"$BUILD_DIR" 2>"$T/cc.err" && "$T/query" >/dev/null 2>"$T/run.err"; then
	bad=
	while read -r kind cells; do
		case $kind in
		directory) space=$T/spaces ;;
		flock:*) space=flock:$T/spaces ;;
		redis:*) space=redis://127.0.0.1:1/ ;;
		etcd:*) space=etcd://127.0.0.1:1 ;;
		esac
		said=$("$T/query" "$space")
		[ "$said" = absent ] && continue # not in this build
		[ "$said" = "$cells" ] || bad="$bad $kind(table: $cells; library: $said)"
	done <"$T/table"
	[ "$(wc -l <"$T/table")" = 4 ] && [ -z "$bad" ]
	ok $? "dirlock(1)'s LOCK SPACES table says what dirlock_space_query says ($(wc -l <"$T/table") rows)${bad:+; differ:$bad}"
	# Every server's address form the library lists (dirlock --help
	# shows them) is the one dirlock(1) gives under -d, case aside.
	mandoc -Tutf8 man/dirlock.1 | col -b | sed -n '/^ *-d, --dir/,/^ *-w, --timeout/p' | tr -d ' \t\n' |
		tr 'A-Z' 'a-z' >"$T/dir-text"
	bad=
	while read -r form; do
		case $form in *://*) ;; *) continue ;; esac
		grep -qF "$(echo "$form" | tr 'A-Z' 'a-z')" "$T/dir-text" || bad="$bad $form"
	done < <("$T/query")
	[ -z "$bad" ]
	ok $? "dirlock(1) gives every server address form the library lists, as it lists it${bad:+; not:$bad}"
else
	ok 1 "dirlock(1)'s LOCK SPACES table: the query program did not build or run: $(cat "$T/cc.err" "$T/run.err" 2>/dev/null | head -3)"
	ok 1 "dirlock(1)'s address forms: the query program did not build"
fi

# ---- the examples compile ----------------------------------------------

# Each literal block of a page's EXAMPLES, as mandoc renders it (markdown
# output: code lines start with a tab), compiled on its own.
for page in "${with_examples[@]}"; do
	base=$(basename "$page")
	mandoc -Tmarkdown "$page" | awk -v out="$T/ex.$base" '
		/^# / { in_examples = ($0 == "# EXAMPLES"); next }
		!in_examples { next }
		/^\t/ { if (!in_block) { n++; in_block = 1 } sub(/^\t/, ""); print > (out "." n ".c"); next }
		/^$/ { if (in_block) print "" > (out "." n ".c"); next }
		{ in_block = 0 }
	'
	blocks=("$T/ex.$base".*.c)
	good=0
	for c in "${blocks[@]}"; do
		if ! "$CC" -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -fsyntax-only "${INCLUDES[@]}" "$c" 2>"$T/cc.err"; then
			good=1
			diag "$c:"
			sed 's/^/  /' "$T/cc.err" | while read -r line; do diag "$line"; done
		fi
	done
	[ -f "${blocks[0]}" ] || good=1
	ok $good "the examples of $base compile (${#blocks[@]} blocks)"
done

# ---- installed -----------------------------------------------------------

root="$T/root"
make -s -C "$TOP" install-man DESTDIR="$root" PREFIX=/usr >"$T/install.out" 2>&1
st=$?
mandir="$root/usr/share/man"
missing=
for page in "${pages[@]}"; do
	sec=${page##*.}
	cmp -s "$page" "$mandir/man$sec/$(basename "$page")" || missing="$missing $(basename "$page")"
done
[ "$st" -eq 0 ] && [ -z "$missing" ]
ok $? "make install-man installs every page${missing:+; missing:$missing}"
[ "$st" -eq 0 ] || diag "$(cat "$T/install.out")"

bad=
while read -r name page; do
	[ -L "$mandir/man3/$name" ] && [ "$(readlink "$mandir/man3/$name")" = "$page" ] &&
		[ -f "$mandir/man3/$name" ] || bad="$bad $name"
done < <(man/links "${pages3[@]}")
[ -z "$bad" ]
ok $? "and a link for every other name ($(man/links "${pages3[@]}" | wc -l) links)${bad:+; wrong:$bad}"

if command -v man >/dev/null 2>&1; then
	found=$(MANPATH="$mandir" man -w dirlock_free 2>&1)
	[ "$found" = "$mandir/man3/dirlock_release.3" ]
	ok $? "man dirlock_free finds dirlock_release(3)"
	[ "$found" = "$mandir/man3/dirlock_release.3" ] || diag "man -w said: $found"
else
	skip "man is not installed (man-db)"
fi
