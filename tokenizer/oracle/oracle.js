#!/usr/bin/env node
// Oracle and trainer for package tokenizer, built on the real Hugging Face
// tokenizers library (npm tokenizers@0.23.2). Run `npm install` in this
// directory first.
//
//   node oracle.js encode TOKENIZER_JSON INPUTS_JSON OUT_JSON
//       INPUTS_JSON is a JSON array of strings; OUT_JSON receives
//       {"ids": [[...], ...], "decoded": ["...", ...]} computed with
//       encode(s, add_special_tokens=false) and decode(ids, skip_special=false).
//   node oracle.js train --vocab-size N [--special "<|a|>,<|b|>"]
//       [--pattern gpt2|llama3] --out TOKENIZER_JSON FILE...
//       Trains a byte-level BPE on the text files (see README.md).
//   node oracle.js cwm LLAMA3_JSON OUT_JSON
//       Writes the Llama-3 tokenizer with CWM's trace tokens in the reserved
//       slots 128100-128107.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { Tokenizer, byteLevelAlphabet } = require('tokenizers');

const GPT2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
const LLAMA3 = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

const CWM_TOKENS = [
  ['<|frame_sep|>', 128100], ['<|action_sep|>', 128101], ['<|return_sep|>', 128102],
  ['<|call_sep|>', 128103], ['<|line_sep|>', 128104], ['<|exception_sep|>', 128105],
  ['<|arg_sep|>', 128106], ['<|trace_context_start|>', 128107],
];

async function encode(tokPath, inPath, outPath) {
  const tk = Tokenizer.fromFile(tokPath);
  const inputs = JSON.parse(fs.readFileSync(inPath, 'utf8'));
  const ids = [];
  const decoded = [];
  for (const s of inputs) {
    const e = await tk.encode(s, null, { addSpecialTokens: false });
    const x = e.getIds();
    ids.push(x);
    decoded.push(await tk.decode(x, false));
  }
  fs.writeFileSync(outPath, JSON.stringify({ ids, decoded }));
}

// byteLevelChars returns GPT-2's bytes_to_unicode table: the character
// standing for each byte value 0..255.
function byteLevelChars() {
  const chars = [];
  let n = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    chars.push(String.fromCodePoint(printable ? b : 256 + n++));
  }
  return chars;
}

function preTokenizer(pattern) {
  if (pattern === 'gpt2') {
    return { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true };
  }
  if (pattern === 'llama3') {
    return {
      type: 'Sequence', pretokenizers: [
        { type: 'Split', pattern: { Regex: LLAMA3 }, behavior: 'Isolated', invert: false },
        { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false },
      ],
    };
  }
  throw new Error(`--pattern: ${pattern} unknown (gpt2 or llama3)`);
}

function skeleton(pattern, special, vocab, merges) {
  return {
    version: '1.0', truncation: null, padding: null,
    added_tokens: special.map((content, id) => ({
      id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true,
    })),
    normalizer: null,
    pre_tokenizer: preTokenizer(pattern),
    post_processor: null,
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: {
      type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null,
      end_of_word_suffix: null, fuse_unk: false, byte_fallback: false,
      ignore_merges: pattern === 'llama3', vocab, merges,
    },
  };
}

// train runs the library's BPE trainer (its npm binding exposes only the
// default trainer: 30000 tokens, no initial alphabet) and then rebuilds the
// vocabulary: special tokens first, the 256 byte-level symbols, then the
// merge results in merge order, truncated to vocabSize. Stopping the greedy
// merge sequence early is what training with the smaller size does.
async function train(args) {
  const opts = { vocabSize: 0, special: [], pattern: 'gpt2', out: '', files: [] };
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === '--vocab-size') opts.vocabSize = parseInt(args[++i], 10);
    else if (a === '--special') opts.special = args[++i].split(',').filter((s) => s !== '');
    else if (a === '--pattern') opts.pattern = args[++i];
    else if (a === '--out') opts.out = args[++i];
    else opts.files.push(a);
  }
  const base = opts.special.length + 256;
  if (!(opts.vocabSize > base) || !opts.out || opts.files.length === 0) {
    throw new Error(`usage: train --vocab-size N (> ${base}) [--special a,b] [--pattern gpt2|llama3] --out FILE files...`);
  }
  // The library's trainer does not set added tokens apart: it would learn
  // merges such as "_sep|>". Replace them with a line break first (each
  // special token splits the text at encode time anyway).
  const tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bpe-'));
  const files = opts.files.map((f, i) => {
    if (opts.special.length === 0) return path.resolve(f);
    let text = fs.readFileSync(f, 'utf8');
    for (const sp of opts.special) text = text.split(sp).join('\n');
    const out = path.join(tmpDir, `${i}.txt`);
    fs.writeFileSync(out, text);
    return out;
  });
  const tk = Tokenizer.fromString(JSON.stringify(skeleton(opts.pattern, [], {}, [])));
  tk.train(files);
  const tmp = path.join(tmpDir, 'trained.json');
  tk.save(tmp);
  const trained = JSON.parse(fs.readFileSync(tmp, 'utf8'));
  fs.rmSync(tmpDir, { recursive: true });

  const vocab = {};
  let next = 0;
  for (const s of opts.special) vocab[s] = next++;
  // Bytes in byte order, so that byte b has id k + b.
  const alphabet = byteLevelChars();
  if (alphabet.slice().sort().join('') !== byteLevelAlphabet().slice().sort().join('')) {
    throw new Error('byte-level alphabet differs from the library');
  }
  for (const c of alphabet) vocab[c] = next++;
  const merges = [];
  for (const m of trained.model.merges) {
    if (next >= opts.vocabSize) break;
    const [a, b] = Array.isArray(m) ? m : m.split(' ');
    const c = a + b;
    if (!(a in vocab) || !(b in vocab)) throw new Error(`merge ${a} ${b}: part missing`);
    merges.push([a, b]);
    if (!(c in vocab)) vocab[c] = next++;
  }
  if (next < opts.vocabSize) {
    console.error(`warning: the corpus gave only ${next} tokens (asked ${opts.vocabSize}); the trainer stops at 30000`);
  }
  const final = Tokenizer.fromString(JSON.stringify(skeleton(opts.pattern, opts.special, vocab, merges)));
  final.save(opts.out, false);
  console.error(`wrote ${opts.out}: ${next} tokens, ${merges.length} merges, ${opts.special.length} special`);
}

function cwm(inPath, outPath) {
  const j = JSON.parse(fs.readFileSync(inPath, 'utf8'));
  for (const [content, id] of CWM_TOKENS) {
    const t = j.added_tokens.find((x) => x.id === id);
    if (!t) throw new Error(`no added token with id ${id}`);
    t.content = content;
  }
  const tk = Tokenizer.fromString(JSON.stringify(j));
  tk.save(outPath, false);
}

async function main() {
  const [cmd, ...rest] = process.argv.slice(2);
  if (cmd === 'encode') await encode(rest[0], rest[1], rest[2]);
  else if (cmd === 'train') await train(rest);
  else if (cmd === 'cwm') cwm(rest[0], rest[1]);
  else throw new Error('usage: oracle.js encode|train|cwm ...');
}

main().catch((e) => { console.error(e.message || e); process.exit(1); });
