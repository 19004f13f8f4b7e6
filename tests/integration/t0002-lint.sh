#!/usr/bin/env bash
# t0002-lint: source rules that the compiler does not enforce: banned functions (git's banned.h list:
# the C files meet base/banned.h at compile time, the shim's C++ is checked here), the layering of
# docs/ARCHITECTURE.md (lower layers never include upper ones), headers that compile alone (each
# includes what it uses, and twice is harmless), private headers kept in their folders, and no
# comment that points at a document, or a section of one, the repository does not have; and no front of
# mirror/serve/ calling another front, nor its floor calling up into one; names that carry their
# room's prefix; ARCHITECTURE.md's depends-on column as the includes are.
. "$HM_SRC/tests/integration/lib.sh"
cd "$HM_SRC" || exit 1

# lint CHECK NAME: one of helpers/lint.py's checks.
lint() {
	local out
	if out=$("$PY" "$HM_SRC/tests/integration/helpers/lint.py" "$HM_SRC" "$1"); then ok "$2"; else fail "$2"; echo "$out" | sed 's/^/#   /'; fi
}
lint banned-cpp "the shim's C++ calls no banned function"
# base/banned.h works: a call to a banned function does not compile
if printf 'void f(char *b);\nvoid f(char *b) { strcpy(b, "x"); }\n' |
	cc -std=c11 -D_GNU_SOURCE -include base/banned.h -fsyntax-only -x c - 2>"$T/banned.err"; then
	fail "base/banned.h refuses strcpy"
else
	check "base/banned.h refuses strcpy" grep -q sorry_strcpy_is_a_banned_function "$T/banned.err"
fi

layer_check() { # layer_check DIR FORBIDDEN-INCLUDE-PREFIX... (DIR's agent/ room is checked on its own)
	local dir=$1 p out=""; shift
	for p in "$@"; do
		out+=$(grep -rnE "#include \"$p/" "$dir" --include='*.c' --include='*.h' --include='*.cpp' \
			--exclude-dir=agent || true)
	done
	if [ -z "$out" ]; then ok "$dir does not reach up into $*"; else fail "$dir reaches up"; echo "$out" | sed 's/^/#   /'; fi
}
layer_check base catalog hub mirror p2p
layer_check catalog hub mirror p2p
layer_check hub catalog mirror p2p
# the store's room stands on base/ and hub/xet/ (a content's Xet identity is the store's, as its sha256),
# never on the mirror's engine, the catalog or the hubs (the mirror's engine stands on it, not the other way)
layer_check store catalog mirror p2p
out=$(grep -rnE '#include "hub/' store --include='*.c' --include='*.h' | grep -v '#include "hub/xet/' || true)
if [ -z "$out" ]; then ok "store reaches into hub/ only for hub/xet"; else fail "store reaches into hub/"; echo "$out" | sed 's/^/#   /'; fi
# hub/http is HTTP and nothing of a hub: it stands on base/ alone
out=$(grep -rnE '#include "(hub|catalog|mirror|p2p)/' hub/http --include='*.c' --include='*.h' | grep -v '#include "hub/http/' || true)
out+=$(grep -rnE '#include "\.\./' hub/http --include='*.c' --include='*.h' || true)
if [ -z "$out" ]; then ok "hub/http includes only base/ and itself"; else fail "hub/http reaches out of HTTP"; echo "$out" | sed 's/^/#   /'; fi
# hub/xet is Xet's computations and nothing of a hub or of HTTP: base/, BLAKE3 and itself
out=$(grep -rnE '#include "(hub|catalog|mirror|p2p)/' hub/xet --include='*.c' --include='*.h' | grep -v '#include "hub/xet/' || true)
out+=$(grep -rnE '#include "\.\./' hub/xet --include='*.c' --include='*.h' || true)
if [ -z "$out" ]; then ok "hub/xet includes only base/ and itself"; else fail "hub/xet reaches out"; echo "$out" | sed 's/^/#   /'; fi
# and every name its library exports is xet_ (or xet__ between its files)
if [ -f "$HM_BUILD/hub/xet/libxet.a" ]; then
	out=$(nm -g --defined-only "$HM_BUILD/hub/xet/libxet.a" | awk 'NF == 3 {print $3}' | grep -v '^xet_' || true)
	if [ -z "$out" ]; then ok "hub/xet exports only xet_ names"; else fail "hub/xet exports other names"; echo "$out" | sed 's/^/#   /'; fi
fi
layer_check p2p mirror catalog hub
# the instance agent stands on p2p and hub, never on a mirror's store or catalog
layer_check p2p/agent mirror catalog
# mirror's library (not its cli/) must not depend on the CLI.
out=$(grep -rn '#include "cli.h"\|mirror/cli/' mirror --include='*.c' --include='*.h' | grep -v '^mirror/cli/' || true)
if [ -z "$out" ]; then ok "mirror library does not include the CLI"; else fail "mirror includes the CLI"; fi
# mirror's data side does not know the server on top of it.
out=$(grep -rn '#include "mirror/serve/\|#include "serve/' mirror --include='*.c' --include='*.h' | grep -v '^mirror/serve/\|^mirror/cli/' || true)
if [ -z "$out" ]; then ok "mirror's data side does not include mirror/serve"; else fail "mirror's data side includes the server"; echo "$out" | sed 's/^/#   /'; fi
# Every header compiles on its own, and included twice (its guard works).
cflags=$(pkg-config --cflags libuv jansson fuse3 2>/dev/null)
bad=""
for h in $(find base catalog hub mirror p2p -name '*.h' | sort); do
	# shellcheck disable=SC2086
	printf '#include "%s"\n#include "%s"\n' "$h" "$h" |
		cc -std=c11 -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -Wall -Werror -fsyntax-only -I. -I"$HM_BUILD" \
			-I"$HM_BUILD/mirror/serve" $cflags -x c - 2>"$T/hdr.err" || { bad+="$h "; sed 's/^/#   /' "$T/hdr.err" | head -5; }
done
if [ -z "$bad" ]; then ok "every header compiles alone"; else fail "headers that do not compile alone: $bad"; fi
# Comments and docs point only at what the repository has.
out=$(grep -rnE '(hf-api|modelscope-api|libtorrent-notes|design|style)\.md' base catalog hub mirror p2p tests docs README.md \
	--include='*.c' --include='*.h' --include='*.cpp' --include='*.py' --include='*.sh' --include='*.md' 2>/dev/null |
	grep -v '^tests/integration/t0002-lint.sh' || true)
if [ -z "$out" ]; then ok "no reference to a document outside the repository"; else fail "references to documents the repository does not have"; echo "$out" | sed 's/^/#   /'; fi
lint docs "every docs/*.md named exists, and every section quoted is a heading there"
lint private "no private header included across folders"
lint long-functions "no function over 100 lines without a comment that says why"
lint columns "no line of C or C++ wider than the 120 columns .clang-format declares"
lint flags "every option a command declares has its help in its table and is on its page under docs/commands/"
lint fronts "in mirror/serve/, no front calls another front, and the floor calls no front (by the objects' symbols)"
lint depends-on "docs/ARCHITECTURE.md says what each folder depends on, as its includes do"
lint prefixes "every name a library gives the link, and every type a public header declares, carries its room's prefix (docs/CODING.md)"
finish
