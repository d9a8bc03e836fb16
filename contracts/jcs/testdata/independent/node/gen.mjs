// gen.mjs writes RFC 8785 vectors computed by Node.js (V8), independently of
// the Go canonicalizer:
//
//   numbers.csv   lines "hex-ieee,literal,expected": the IEEE-754 bits of a
//                 double, a JSON literal that denotes it, and V8's
//                 JSON.stringify of it (ECMAScript Number::toString, which
//                 RFC 8785 §3.2.2.3 mandates).
//   objects.jsonl one JSON object per line {"name","input","expected"}: a
//                 random document with random Unicode member names, random
//                 member order, whitespace and escapes, and its canonical
//                 form computed the RFC 8785 Appendix A way
//                 (JSON.parse, then Object.keys().sort() — UTF-16 code unit
//                 order — and JSON.stringify of every primitive).
//
// Deterministic (seeded PRNG). Regenerate with:
//   node contracts/jcs/testdata/independent/node/gen.mjs
// The Go tests read the committed files and never need node.

import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));

// ---- deterministic PRNG (splitmix64) ----
let state = 0x0cea9a7c0de5eedn;
const MASK = (1n << 64n) - 1n;
function next64() {
  state = (state + 0x9e3779b97f4a7c15n) & MASK;
  let z = state;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK;
  return z ^ (z >> 31n);
}
const rand = () => Number(next64() >> 11n) / 2 ** 53; // [0,1)
const randInt = (n) => Math.floor(rand() * n); // [0,n)
const pick = (a) => a[randInt(a.length)];

// ---- IEEE-754 helpers ----
const dv = new DataView(new ArrayBuffer(8));
function fromBits(bits) {
  dv.setBigUint64(0, bits);
  return dv.getFloat64(0);
}
function toBits(x) {
  dv.setFloat64(0, x);
  return dv.getBigUint64(0);
}
const hex = (x) => toBits(x).toString(16); // 1-16 digits, like cyberphone's es6testfile
function nextUp(x) {
  if (x === 0) return fromBits(1n);
  const b = toBits(x);
  return x > 0 ? fromBits(b + 1n) : fromBits(b - 1n);
}
function nextDown(x) {
  return -nextUp(-x);
}

// A JSON literal that denotes x, spelled in one of several ways so the Go
// side exercises decimal-to-binary conversion as well as formatting.
function literal(x) {
  if (Object.is(x, -0)) return pick(["-0", "-0.0", "-0e5", "-0.000E-3"]);
  switch (randInt(6)) {
    case 0:
      return String(x);
    case 1:
      return x.toPrecision(17);
    case 2:
      return x.toExponential();
    case 3:
      return x.toExponential(20).toUpperCase();
    case 4:
      return x.toPrecision(17).replace("e+", "E");
    default: {
      // shortest digits with the exponent moved: d.ddd → ddd0e(x-k)
      const [m, e] = x.toExponential().split("e");
      const digits = m.replace(".", "").replace("-", "");
      const exp = Number(e) - (digits.length - 1) - 2;
      return (x < 0 ? "-" : "") + digits + "00e" + exp;
    }
  }
}

// ---- numbers ----
const numbers = [];
const seen = new Set();
function addNumber(x, lit) {
  if (!Number.isFinite(x)) return;
  const key = hex(x);
  if (seen.has(key) && lit === undefined) return;
  seen.add(key);
  numbers.push(`${key},${lit ?? literal(x)},${JSON.stringify(x)}`);
}

// RFC 8785 Appendix B values (the table, as bit patterns).
for (const h of [
  "0", "8000000000000000", "1", "8000000000000001", "7fefffffffffffff", "ffefffffffffffff",
  "4340000000000000", "c340000000000000", "4430000000000000", "44b52d02c7e14af5",
  "44b52d02c7e14af6", "44b52d02c7e14af7", "444b1ae4d6e2ef4e", "444b1ae4d6e2ef4f",
  "444b1ae4d6e2ef50", "3eb0c6f7a0b5ed8c", "3eb0c6f7a0b5ed8d", "41b3de4355555553",
  "41b3de4355555554", "41b3de4355555555", "41b3de4355555556", "41b3de4355555557",
  "becbf647612f3696", "43143ff3c1cb0959",
]) addNumber(fromBits(BigInt("0x" + h)));

// Hand-picked edges: the fixed/exponent switch points, subnormal/normal
// boundary, safe-integer boundary, classic decimal surprises.
const edges = [
  1e21, 1e-7, 1e-6, 1e20, 5e-324, 2.2250738585072014e-308, 2.225073858507201e-308,
  1.7976931348623157e308, 9007199254740991, 9007199254740992, 9007199254740993,
  2 ** 63, 2 ** 64, 2 ** 70, 0.1 + 0.2, 0.1, 0.2, 0.3, 1 / 3, 2 / 3, 100, 123456789,
  1.5, 0.5, 0.25, 4.35, 0.000001, 0.0000001, 1e-5, 123e-20, 4.94e-324, 1e23, 1e22,
  8.41e21, 5e-7, 0.1 * 3, 1.1 * 1.1, 299792458, 6.02214076e23, 1.602176634e-19,
];
for (const x of edges) {
  for (const y of [x, -x, nextUp(x), nextDown(x), -nextUp(x), -nextDown(x)]) addNumber(y);
}
for (let i = 1; i <= 8; i++) {
  addNumber(1e21 + i * 131072);
  addNumber(fromBits(toBits(1e21) - BigInt(i)));
  addNumber(fromBits(toBits(1e21) + BigInt(i)));
  addNumber(fromBits(toBits(1e-7) - BigInt(i)));
  addNumber(fromBits(toBits(1e-7) + BigInt(i)));
  addNumber(fromBits(toBits(1e-6) - BigInt(i)));
  addNumber(fromBits(toBits(1e-6) + BigInt(i)));
}

// Every power of ten in range, with its neighbours, both signs.
for (let e = -323; e <= 308; e++) {
  const x = Number(`1e${e}`);
  addNumber(x);
  addNumber(nextUp(x));
  addNumber(nextDown(x));
  if (e % 3 === 0) addNumber(-x);
}

// Powers of two, and integers around 2^53.
for (let e = -1074; e <= 1023; e += 7) addNumber(2 ** e);
for (let i = -40; i <= 40; i++) addNumber(2 ** 53 + i * 2);

// Subnormals: small mantissas and random ones.
for (let m = 1n; m <= 40n; m++) addNumber(fromBits(m));
for (let i = 0; i < 400; i++) {
  const m = next64() & 0xfffffffffffffn;
  if (m === 0n) continue;
  addNumber(fromBits(m | (BigInt(randInt(2)) << 63n)));
}
addNumber(fromBits(0xfffffffffffffn));

// Short decimals m×10^e: values whose shortest form the formatter must find.
for (let i = 0; i < 1500; i++) {
  const digits = 1 + randInt(17);
  let m = "";
  for (let d = 0; d < digits; d++) m += d === 0 ? 1 + randInt(9) : randInt(10);
  const e = randInt(60) - 30 + pick([0, 0, 0, -300, 280]);
  const lit = (rand() < 0.3 ? "-" : "") + m + "e" + e;
  const x = Number(lit);
  if (!Number.isFinite(x) || x === 0) continue;
  const key = hex(x);
  if (seen.has(key)) continue;
  addNumber(x, lit);
}

// Integers: below and above 2^53 (rounded to the nearest double).
for (let i = 0; i < 600; i++) {
  const bits = 1 + randInt(72);
  let n = 0n;
  for (let b = 0; b < bits; b++) n = (n << 1n) | BigInt(randInt(2));
  if (n === 0n) continue;
  const lit = (randInt(4) === 0 ? "-" : "") + n.toString();
  const x = Number(lit);
  if (seen.has(hex(x))) continue;
  addNumber(x, lit);
}

// Random bit patterns of finite doubles fill up to 10,000 vectors.
while (numbers.length < 10000) {
  const bits = next64();
  if (((bits >> 52n) & 0x7ffn) === 0x7ffn) continue; // NaN / Infinity
  addNumber(fromBits(bits));
}

writeFileSync(join(here, "numbers.csv"), numbers.join("\n") + "\n");

// ---- objects with random Unicode member names ----
function isNoncharacter(cp) {
  return (cp >= 0xfdd0 && cp <= 0xfdef) || (cp & 0xfffe) === 0xfffe;
}
function randomCodePoint() {
  for (;;) {
    let cp;
    switch (randInt(8)) {
      case 0: cp = 0x20 + randInt(0x5f); break; // printable ASCII
      case 1: cp = randInt(0x20); break; // C0 controls
      case 2: cp = 0x7f + randInt(0x81); break; // DEL, C1, Latin-1
      case 3: cp = 0x100 + randInt(0xd800 - 0x100); break; // BMP below surrogates
      case 4: cp = 0xe000 + randInt(0x2000); break; // private use (sorts after astral in UTF-16)
      case 5: cp = 0xf900 + randInt(0x0700); break; // FB33 and friends, up to FFFF
      case 6: cp = 0x10000 + randInt(0x1000); break; // astral, plane 1 low
      default: cp = 0x10000 + randInt(0x100000); break; // any astral
    }
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    if (isNoncharacter(cp)) continue;
    return cp;
  }
}
function randomString(maxLen) {
  let s = "";
  const n = randInt(maxLen + 1);
  for (let i = 0; i < n; i++) s += String.fromCodePoint(randomCodePoint());
  return s;
}

// Serialize a JS string as JSON text with random (valid) escaping.
function encodeString(s) {
  let out = '"';
  for (const ch of s) {
    const cp = ch.codePointAt(0);
    const short = { 0x22: '\\"', 0x5c: "\\\\", 0x08: "\\b", 0x0c: "\\f", 0x0a: "\\n", 0x0d: "\\r", 0x09: "\\t" }[cp];
    const u = (unit) => {
      const h = unit.toString(16).padStart(4, "0");
      return "\\u" + (randInt(2) ? h.toUpperCase() : h);
    };
    if (cp < 0x20 || cp === 0x22 || cp === 0x5c) {
      out += short && randInt(3) ? short : u(cp);
    } else if (cp === 0x2f && randInt(3) === 0) {
      out += "\\/";
    } else if (randInt(5) === 0) {
      if (cp > 0xffff) {
        const v = cp - 0x10000;
        out += u(0xd800 + (v >> 10)) + u(0xdc00 + (v & 0x3ff));
      } else {
        out += u(cp);
      }
    } else {
      out += ch;
    }
  }
  return out + '"';
}
const ws = () => pick(["", "", "", " ", "\n", "\t", "\r\n  ", "  "]);

// A random value, returned as JSON text with random layout.
function randomValue(depth) {
  const r = randInt(depth > 3 ? 6 : 9);
  switch (r) {
    case 0: return "null";
    case 1: return pick(["true", "false"]);
    case 2:
    case 3: {
      const kind = randInt(4);
      let x;
      if (kind === 0) x = fromBits(next64() & ~(0x7ffn << 52n) | (BigInt(randInt(0x7ff)) << 52n));
      else if (kind === 1) x = randInt(2000000) - 1000000;
      else if (kind === 2) x = Number(`${1 + randInt(99999)}e${randInt(50) - 25}`);
      else x = pick([1e21, 1e-7, 5e-324, 1.7976931348623157e308, -0, 0.1 + 0.2, 2 ** 53 + 2]);
      if (kind === 3 && randInt(3) === 0) return pick(["9007199254740993", "-9007199254740993", "18446744073709551615", "1e300"]);
      return literal(x);
    }
    case 4:
    case 5: return encodeString(randomString(12));
    case 6:
    case 7: return randomObject(depth + 1);
    default: {
      const n = randInt(5);
      const items = [];
      for (let i = 0; i < n; i++) items.push(ws() + randomValue(depth + 1) + ws());
      return "[" + items.join(",") + "]";
    }
  }
}

function randomObject(depth) {
  const n = randInt(depth === 0 ? 14 : 7);
  const keys = new Set();
  // Shared prefixes make the prefix and astral-vs-BMP orderings matter.
  const prefix = randInt(2) ? randomString(2) : "";
  while (keys.size < n) {
    keys.add(randInt(3) ? prefix + randomString(4) : randomString(3));
  }
  const members = [...keys].map((k) => ws() + encodeString(k) + ws() + ":" + ws() + randomValue(depth) + ws());
  return "{" + members.join(",") + "}";
}

// The RFC 8785 Appendix A canonicalizer, verbatim in behaviour.
function canonicalize(value) {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) return "[" + value.map(canonicalize).join(",") + "]";
  return "{" + Object.keys(value).sort().map((k) => JSON.stringify(k) + ":" + canonicalize(value[k])).join(",") + "}";
}

const lines = [];
// Fixed cases first: the astral-versus-BMP ordering RFC 8785 §3.2.3 warns about.
const fixed = [
  ['{"\\ufb33":1,"\\ud83d\\ude00":2}', "astral-vs-fb33"],
  ['{"\\uffef":1,"\\ud800\\udc00":2,"\\ue000":3,"\\ud7ff":4}', "surrogate-range-order"],
  ['{"a":1,"a\\u0000":2,"aa":3,"":4}', "prefix-order"],
];
for (const [input, name] of fixed) lines.push(JSON.stringify({ name, input, expected: canonicalize(JSON.parse(input)) }));
for (let i = 0; i < 250; i++) {
  const input = ws() + randomObject(0) + ws();
  lines.push(JSON.stringify({ name: `random-${i}`, input, expected: canonicalize(JSON.parse(input)) }));
}
writeFileSync(join(here, "objects.jsonl"), lines.join("\n") + "\n");
console.log(`wrote ${numbers.length} numbers and ${lines.length} objects`);
