#!/usr/bin/env bash
# The C sources are formatted as .clang-format says (checked, not advisory).
# Formatting differs between clang-format versions: the check runs with 14,
# the one Debian 12 ships (tools/setup.sh installs it), and skips otherwise.
# Fix a failure with: clang-format -i FILE...
# Usage: test_format.sh SOURCE_DIR
set -uo pipefail
src=$1
cd "$src" || exit 1
cf=$(command -v clang-format-14 || command -v clang-format) ||
	{ echo "SKIP: clang-format missing (tools/setup.sh installs clang-format-14)"; exit 77; }
version=$("$cf" --version | sed -n 's/.*version \([0-9]*\)\..*/\1/p')
[ "$version" = 14 ] || { echo "SKIP: clang-format $version, not 14: formats differ between versions"; exit 77; }
if [ -d .git ] || git rev-parse --git-dir >/dev/null 2>&1; then
	mapfile -t files < <(git ls-files '*.c' '*.h')
else
	mapfile -t files < <(find . -path ./build\* -prune -o \( -name '*.c' -o -name '*.h' \) -print)
fi
bad=()
for f in "${files[@]}"; do
	[ -f "$f" ] || continue
	"$cf" --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
	echo "FAIL: ${#bad[@]} of ${#files[@]} files are not formatted as .clang-format says:"
	printf '  %s\n' "${bad[@]}"
	echo "fix with: $cf -i ${bad[*]}"
	exit 1
fi
echo "ok: ${#files[@]} C files formatted as .clang-format says"
