#!/usr/bin/env bash
# t0002-lint: source rules that the compiler does not enforce: banned functions (git's banned.h
# list) and the layering of style.md (lower layers never include upper ones).
. "$HM_SRC/tests/integration/lib.sh"
cd "$HM_SRC" || exit 1

banned='\b(strcpy|strcat|strncpy|strncat|sprintf|vsprintf|strtok|gets)\s*\('
hits=$(grep -rnE "$banned" --include='*.c' --include='*.h' --include='*.cpp' base catalog hub mirror p2p | grep -v '^\s*//' || true)
if [ -z "$hits" ]; then ok "no banned functions"; else fail "banned functions used"; echo "$hits" | sed 's/^/#   /'; fi

layer_check() { # layer_check DIR FORBIDDEN-INCLUDE-PREFIX...
	local dir=$1 p out=""; shift
	for p in "$@"; do
		out+=$(grep -rnE "#include \"$p/" "$dir" --include='*.c' --include='*.h' --include='*.cpp' || true)
	done
	if [ -z "$out" ]; then ok "$dir does not reach up into $*"; else fail "$dir reaches up"; echo "$out" | sed 's/^/#   /'; fi
}
layer_check base catalog hub mirror p2p
layer_check catalog hub mirror p2p
layer_check hub catalog mirror p2p
layer_check p2p mirror catalog hub
# mirror's library (not its cli/) must not depend on the CLI.
out=$(grep -rn '#include "cli.h"\|mirror/cli/' mirror --include='*.c' --include='*.h' | grep -v '^mirror/cli/' || true)
if [ -z "$out" ]; then ok "mirror library does not include the CLI"; else fail "mirror includes the CLI"; fi
# Private headers stay in their folder.
out=$(grep -rnE '#include "[a-z]+/[a-z]+-int\.h"' base catalog hub mirror p2p || true)
if [ -z "$out" ]; then ok "no private header included across folders"; else fail "private header crossing"; echo "$out" | sed 's/^/#   /'; fi
finish
