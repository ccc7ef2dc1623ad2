#!/usr/bin/env node
// Regenerates the conformance fixtures of package tokenizer with the real
// Hugging Face tokenizers library:
//
//   node gen-fixtures.js OUT_DIR [LLAMA3_JSON]
//
// writes OUT_DIR/corpus.json (the input texts), OUT_DIR/code-options.tokenizer.json
// (derived from ../testdata/code-gpt2.tokenizer.json) and OUT_DIR/expected/<variant>.json
// ({"ids": [...], "decoded": [...]}, decoded null where it equals the input) for each tokenizer variant. The llama3-cwm
// variant (the Llama-3 tokenizer with CWM's trace tokens) is produced only when
// LLAMA3_JSON is given. The corpus starts from CRUXEval's dev.jsonl
// (data/cruxeval/dev.jsonl in the repository).
'use strict';
const fs = require('fs');
const path = require('path');
const { Tokenizer } = require('tokenizers');

const testdata = path.join(__dirname, '..', 'testdata');

const CWM_TOKENS = [
  ['<|frame_sep|>', 128100], ['<|action_sep|>', 128101], ['<|return_sep|>', 128102],
  ['<|call_sep|>', 128103], ['<|line_sep|>', 128104], ['<|exception_sep|>', 128105],
  ['<|arg_sep|>', 128106], ['<|trace_context_start|>', 128107],
];

// mulberry32: a small seeded PRNG so the corpus is reproducible.
function rng(seed) {
  return function () {
    seed |= 0; seed = (seed + 0x6D2B79F5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PIECES = [
  'a', 'Z', 'foo', 'Bar', 'x1', '_', '0', '7', '123', '45678', ' ', ' ', '  ', '    ', '\t', '\n', '\r\n',
  '\r', '\n\n', ' \n', '.', ',', '(', ')', '[]', '{}', ':', '==', '->', '#', '"', "'", "'s", "'S", "'ll",
  "'LL", "'re", "'Ve", "'d", "'m", "'t", "'x", 'ſ', "'ſ", 'é', 'e\u0301', 'ñ', 'ß', 'Ω', 'Ж', 'жук',
  '世界', '日本語', '한국어', '🙂', '👍🏽', '👨‍👩‍👧', '🇫🇷', 'مرحبا', 'שלום', 'नमस्ते', 'ก', '\u00a0',
  '\u0085', '\u2028', '\u2029', '\u3000', '\u000b', '\u000c', '\u001c', '\u001f', '\u180e', '\u200b',
  '\u200d', '\ufeff', '１２', '²', '½', 'Ⅻ', '٣', '<|frame_sep|>', '<|call_sep|>', '<|begin_of_text|>',
  '<|', '|>', '<|frame_sep', 'word', 'words', '<|lstrip|>', '<|rstrip|>', '<|both|>', 'TODO', '\u0000',
  '\\', '\\n', 'def', ' self', 'return', '=', '+=', '**', '%', '@', '$', '~', '`', '^', '…', '—', '€', '\u{10FFFF}',
];

function randomStrings(n, seed) {
  const r = rng(seed);
  const out = [];
  for (let i = 0; i < n; i++) {
    const k = 1 + Math.floor(r() * 30);
    let s = '';
    for (let j = 0; j < k; j++) s += PIECES[Math.floor(r() * PIECES.length)];
    out.push(s);
  }
  return out;
}

// traceOf builds a CWM-style trace text for a program: the layout is real,
// the values are made up.
function traceOf(code, input, output) {
  const lines = code.split('\n');
  const src = lines.map((l, i) => (i === 0 ? l + '  # << START_OF_TRACE' : l)).join('\n');
  let s = '<|begin_of_text|><|trace_context_start|>' + src + '\n<|frame_sep|>';
  s += '<|call_sep|>' + JSON.stringify({ args: input }) + '<|action_sep|>' + lines[0] + '\n<|frame_sep|>';
  for (let i = 1; i < lines.length; i++) {
    s += '<|line_sep|>' + JSON.stringify({ i: String(i), acc: i % 2 ? '..' : "'ab'" }) + '<|action_sep|>' + lines[i] + '\n<|frame_sep|>';
  }
  s += '<|return_sep|><|action_sep|>' + lines[lines.length - 1] + '\n<|arg_sep|>' + JSON.stringify(output) + '<|frame_sep|><|end_of_text|>';
  return s;
}

function corpus() {
  const texts = [];
  const crux = fs.readFileSync(path.join(__dirname, '..', '..', 'data', 'cruxeval', 'dev.jsonl'), 'utf8').split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l));
  for (const c of crux) texts.push(c.code);
  for (const c of crux.slice(0, 40)) texts.push(traceOf(c.code, c.input, c.output));
  for (const c of crux.slice(0, 20)) texts.push(c.input + '\n' + c.output);
  texts.push(
    '', ' ', '  ', '\n', 'a', ' a', '  a', '\t\ta', 'a  ', 'a \n b', 'x\r\n\r\ny', '   \n   \n   x',
    "I'm sure you'll see it's what they've done, isn't it? We'd", "DON'T SHOUT I'LL", "it's 'quoted' ''",
    '1234567890 12 123 1234 3.14159 -42 0x1F 1e-9 1_000_000', '１２３４５ ²³ ½ Ⅻ ٣٤٥',
    'naïve café résumé e\u0301 a\u0300\u0301\u0302', '世界你好，这是中文。日本語のテキスト', '🙂🙂 👍🏽 👨‍👩‍👧 🇫🇷🇩🇪',
    'مرحبا بالعالم שלום עולם', 'tab\there\vvtab\fform', 'nbsp\u00a0x nel\u0085x ls\u2028x ideo\u3000x',
    '<|frame_sep|>', '<|frame_sep|><|frame_sep|>', 'a<|frame_sep|>b', ' <|frame_sep|> ', '<|frame_sep', '<|frame_sep|>|>',
    '<<|frame_sep|>>', '<|begin_of_text|>def f():\n    pass<|end_of_text|>', 'x <|lstrip|> y', 'x<|rstrip|>   y',
    'x   <|both|>   y', 'a word here', 'password', 'words word_ word1 _word', 'TODO: fix TODOs',
    ' '.repeat(100) + 'x', '\n'.repeat(50), 'a' + '\t'.repeat(33), 'x'.repeat(300), '9'.repeat(40),
    '\u0000\u0001\u0002 control \u007f', 'https://example.com/path?q=1&r=2#frag', '    return {"k": [1, 2, (3, 4)]}\n',
  );
  return texts.concat(randomStrings(300, 20261122));
}

// optionsVariant derives a tokenizer exercising add_prefix_space and the
// lstrip, rstrip, single_word and normalized options of added tokens.
function optionsVariant() {
  const j = JSON.parse(fs.readFileSync(path.join(testdata, 'code-gpt2.tokenizer.json'), 'utf8'));
  j.pre_tokenizer.add_prefix_space = true;
  const base = Object.keys(j.model.vocab).length;
  const extra = [
    { content: '<|lstrip|>', lstrip: true, special: true, normalized: false },
    { content: '<|rstrip|>', rstrip: true, special: true, normalized: false },
    { content: '<|both|>', lstrip: true, rstrip: true, special: true, normalized: false },
    { content: 'word', single_word: true, special: false, normalized: true },
    { content: 'TODO', special: false, normalized: true },
  ];
  extra.forEach((e, i) => j.added_tokens.push(Object.assign({ id: base + i, single_word: false, lstrip: false, rstrip: false }, e)));
  return JSON.stringify(j);
}

function cwmVariant(llama3Path) {
  const j = JSON.parse(fs.readFileSync(llama3Path, 'utf8'));
  for (const [content, id] of CWM_TOKENS) {
    j.added_tokens.find((x) => x.id === id).content = content;
  }
  return JSON.stringify(j);
}

async function run(tk, texts) {
  const ids = [];
  const decoded = [];
  for (const s of texts) {
    const e = await tk.encode(s, null, { addSpecialTokens: false });
    const x = e.getIds();
    ids.push(x);
    const d = await tk.decode(x, false);
    decoded.push(d === s ? null : d); // null: decodes back to the input
  }
  return { ids, decoded };
}

async function main() {
  const [outDir, llama3Path] = process.argv.slice(2);
  if (!outDir) throw new Error('usage: gen-fixtures.js OUT_DIR [LLAMA3_JSON]');
  fs.mkdirSync(path.join(outDir, 'expected'), { recursive: true });
  const texts = corpus();
  fs.writeFileSync(path.join(outDir, 'corpus.json'), JSON.stringify(texts, null, 0));
  const opts = optionsVariant();
  fs.writeFileSync(path.join(outDir, 'code-options.tokenizer.json'), opts);
  const variants = {
    'code-gpt2': Tokenizer.fromFile(path.join(testdata, 'code-gpt2.tokenizer.json')),
    'code-llama3': Tokenizer.fromFile(path.join(testdata, 'code-llama3.tokenizer.json')),
    'code-options': Tokenizer.fromString(opts),
  };
  if (llama3Path) variants['llama3-cwm'] = Tokenizer.fromString(cwmVariant(llama3Path));
  for (const [name, tk] of Object.entries(variants)) {
    const res = await run(tk, texts);
    fs.writeFileSync(path.join(outDir, 'expected', name + '.json'), JSON.stringify(res));
  }
}

main().catch((e) => { console.error(e.message || e); process.exit(1); });
