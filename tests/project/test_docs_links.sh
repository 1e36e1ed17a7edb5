#!/usr/bin/env bash
# Every relative link in README.md and docs/*.md resolves to a file or
# folder inside the repository (a link to ../shared/ or a renamed doc
# fails), and every "#anchor" into a Markdown file names one of its headings.
# Usage: test_docs_links.sh SOURCE_DIR
set -uo pipefail
src=$(cd "$1" && pwd)
fails=0 links=0
# anchor TEXT: GitHub's slug of a heading
slug() { tr '[:upper:]' '[:lower:]' <<<"$1" | sed 's/[^a-z0-9 _-]//g; s/ /-/g'; }
# headings FILE: the anchors of its headings, one per line
headings() { grep -E '^#+ ' "$1" | sed -E 's/^#+ +//' | while IFS= read -r h; do slug "$h"; done; }
for md in "$src/README.md" "$src"/docs/*.md; do
	dir=$(dirname "$md")
	# [text](target) outside code spans; not http(s), mailto or a bare #anchor
	while IFS= read -r target; do
		links=$((links + 1))
		path=${target%%#*}
		anchor=
		[[ $target == *#* ]] && anchor=${target#*#}
		file=$dir/$path
		[ -z "$path" ] && file=$md
		real=$(realpath -m "$file")
		if [[ $real != "$src"/* && $real != "$src" ]]; then
			echo "FAIL: ${md#"$src"/}: '$target' points outside the repository"
			fails=$((fails + 1))
		elif [ ! -e "$file" ]; then
			echo "FAIL: ${md#"$src"/}: '$target' does not exist"
			fails=$((fails + 1))
		elif [ -n "$anchor" ] && [[ $file == *.md ]] && ! headings "$file" | grep -xF "$anchor" >/dev/null; then
			echo "FAIL: ${md#"$src"/}: '$target': no heading for #$anchor"
			fails=$((fails + 1))
		fi
	done < <(sed 's/`[^`]*`//g' "$md" | grep -oE '\]\([^) ]+\)' | sed -E 's/^\]\((.*)\)$/\1/' |
		grep -vE '^(https?:|mailto:|#)')
done
# paths outside the repository, written as code rather than as links
while IFS= read -r hit; do
	echo "FAIL: ${hit#"$src"/}: names a path outside the repository"
	fails=$((fails + 1))
done < <(grep -nE '\.\./shared|\.\./\.\./' "$src/README.md" "$src"/docs/*.md)
echo "$links relative links checked, $fails broken"
exit $((fails > 0))
