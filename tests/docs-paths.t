#!/bin/bash
# docs-paths.t - the documents lead to what is there: every path of lib/
# that README.md, docs/, tests/README.md, bench/README.md and the manual
# pages cite is a file or folder of the tree, and every relative link
# of the Markdown documents leads to one (its #anchor aside), so that a
# file that moves (the split of lib/, issue 40) cannot leave a document
# pointing at its old place; README.md stays under 200 lines.  The
# check is first shown finding a moved path and a broken link.
. "$(dirname "$0")/tap.sh"
cd "$TOP" || exit 1
plan 4

# stale DOC...: "DOC:LINE: what" for each path of lib/ cited in DOC that
# is not in the tree (a template such as lib/NAME/NAME.mk, or lib/*/...,
# aside), and each relative Markdown link whose target is not there.
stale() {
	local doc line path target
	for doc in "$@"; do
		# Paths of lib/: not inside another path (/var/lib/..., P/lib/...).
		grep -noP '(?<![A-Za-z0-9_./-])lib/[A-Za-z0-9_./-]*[A-Za-z0-9_/]' "$doc" |
			while IFS=: read -r line path; do
				case $path in *NAME* | *\** | *.N/*) continue ;; esac
				[ -e "$path" ] || echo "$doc:$line: no $path"
			done
		case $doc in *.md) ;; *) continue ;; esac
		# Relative links, [text](target), from the document's folder.
		grep -noP '\]\(\K[^)#[:space:]]+(?=[)#])' "$doc" | while IFS=: read -r line target; do
			case $target in *://* | mailto:*) continue ;; esac
			[ -e "$(dirname "$doc")/$target" ] || echo "$doc:$line: link to $target, which is not there"
		done
	done
}

# ---- the check can fail ----------------------------------------------------

cat >"$T/moved.md" <<'EOF'
The protocol is at the top of `lib/dir/exclusive.c`; see /var/lib/app/locks,
[this page](moved.md) and [a page gone](gone.md), `lib/core/dirlock.h`,
and lib/NAME/NAME.mk.
EOF
said=$(stale "$T/moved.md")
echo "$said" | grep -q ':1: no lib/dir/exclusive.c$' && echo "$said" | grep -q ':2: link to gone.md, which is not there$' &&
	[ "$(echo "$said" | wc -l)" = 2 ]
ok $? "a moved path and a broken link are found, and nothing else"
[ "$(echo "$said" | wc -l)" = 2 ] || diag "said: $said"

# ---- the documents ---------------------------------------------------------

docs=(README.md docs/*.md tests/README.md bench/README.md man/*.[0-9])
said=$(stale "${docs[@]}")
[ -z "$said" ]
ok $? "every path of lib/ the documents cite is in the tree (${#docs[@]} documents)"
echo "$said" | grep ': no ' | while read -r l; do diag "$l"; done
[ -z "$(echo "$said" | grep ': link to ')" ]
ok $? "every relative link of the Markdown documents leads somewhere"
echo "$said" | grep ': link to ' | while read -r l; do diag "$l"; done

lines=$(wc -l <README.md)
[ "$lines" -lt 200 ]
ok $? "README.md is under 200 lines ($lines)"
