// Arbiter's bridge for JavaScript (Node): the wire format of arbiter.graders.languages.wire.
//
// Both sides of a JavaScript `test_program` task load this module:
//  * the harness (the task's tests, the prompt's helpers, no candidate code) replaces the
//    candidate's function with a stub, `(...args) => bridge.call(name, args)`, which sends the
//    call on descriptor 3 and returns the decoded reply. Its console.assert (installAssert)
//    counts failures and makes the exit status nonzero; any failed call (end of stream, a
//    malformed reply, an exception reply) stops the harness at once with status 3, which no
//    `catch` in the tests can turn into a pass;
//  * the candidate's dispatcher, appended to the candidate's script, calls serve(lookup): it
//    answers each request with the candidate's function, found by its declared name (a
//    function the prompt declares async is awaited before its reply).
// All I/O is synchronous (fs.readSync / fs.writeSync, retried on EAGAIN), so a stub returns
// its value like the function it stands in for.
//
// How JavaScript values map to the wire (each decodes back to what it was, JS to JS):
//  * a number that is a safe integer (|n| <= 2^53 - 1) and not -0 is `i`; every other number
//    (fractions, -0, NaN, +-Infinity, integers beyond 2^53 that a double only approximates) is
//    `f`, its exact binary64 bits. An `i` decodes to a number when it is a safe integer, and to
//    a BigInt otherwise (exact, never silently rounded); a BigInt encodes as `i`;
//  * undefined is `u` (an array's hole too), null is `n`;
//  * a string is `s` in UTF-8, a lone surrogate as its own 3-byte sequence (Python's
//    "surrogatepass"); a `c` decodes to a one-character string;
//  * an array or typed array is `l`; a `t` decodes to an array; a Set encodes as `l`;
//  * a plain object (or any other object: its own enumerable string keys, as JSON sees it) and
//    a Map are `m`; an `m` whose keys are all strings decodes to a plain object (keys defined
//    as own data properties, so "__proto__" is just a key), any other to a Map;
//  * Number/String/Boolean wrapper objects encode as their primitive; functions and symbols
//    cannot be encoded (a candidate's reply then is an exception reply).
"use strict";

const fs = require("fs");

const FD = 3;
const MAX_FRAME = 16 << 20;
const MAX_DEPTH = 200;
const FAILED_CALL = 3;

class WireError extends Error {}

// ------------------------------------------------------------------ descriptor 3

let pending = Buffer.alloc(0);
const sleeper = new Int32Array(new SharedArrayBuffer(4));

function pause() {
  Atomics.wait(sleeper, 0, 0, 1);
}

function retry(e) {
  return e && (e.code === "EAGAIN" || e.code === "EWOULDBLOCK" || e.code === "EINTR");
}

function readChunk() {
  const buf = Buffer.allocUnsafe(1 << 16);
  for (;;) {
    try {
      const n = fs.readSync(FD, buf, 0, buf.length, null);
      return n === 0 ? null : buf.subarray(0, n);
    } catch (e) {
      if (retry(e)) { pause(); continue; }
      throw e;
    }
  }
}

/** At least `n` bytes in `pending`, or false at the end of the stream. */
function fill(n) {
  if (pending.length >= n) return true;
  const chunks = [pending];
  let have = pending.length;
  while (have < n) {
    const chunk = readChunk();
    if (chunk === null) { pending = Buffer.concat(chunks); return false; }
    chunks.push(chunk);
    have += chunk.length;
  }
  pending = Buffer.concat(chunks);
  return true;
}

/** One frame's payload, or null at a clean end of stream. */
function readFrame() {
  let head = 0;
  for (;;) {
    if (!fill(head + 1)) {
      if (head > 0 || pending.length > 0) throw new WireError("the stream ended inside a frame's length");
      return null;
    }
    const b = pending[head];
    if (b === 0x3a) break;
    if (b < 0x30 || b > 0x39 || head > 12) throw new WireError("a frame's length must be decimal digits");
    head += 1;
  }
  if (head === 0) throw new WireError("a frame's length is empty");
  const size = Number(pending.subarray(0, head).toString("latin1"));
  if (size > MAX_FRAME) throw new WireError(`a frame of ${size} bytes is over the limit of ${MAX_FRAME}`);
  if (!fill(head + 1 + size)) throw new WireError("the stream ended inside a frame");
  const payload = Buffer.from(pending.subarray(head + 1, head + 1 + size));
  pending = pending.subarray(head + 1 + size);
  return payload;
}

function writeAll(buf) {
  let off = 0;
  while (off < buf.length) {
    try {
      off += fs.writeSync(FD, buf, off, buf.length - off);
    } catch (e) {
      if (retry(e)) { pause(); continue; }
      throw e;
    }
  }
}

function writeFrame(payload) {
  writeAll(Buffer.concat([Buffer.from(`${payload.length}:`, "latin1"), payload]));
}

// ------------------------------------------------------------------ strings

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function utf8Encode(text) {
  if (!LONE_SURROGATE.test(text)) return Buffer.from(text, "utf8");
  const bytes = [];
  for (let k = 0; k < text.length; k++) {
    let cp = text.charCodeAt(k);
    if (cp >= 0xd800 && cp <= 0xdbff && k + 1 < text.length) {
      const low = text.charCodeAt(k + 1);
      if (low >= 0xdc00 && low <= 0xdfff) { cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00); k++; }
    }
    if (cp < 0x80) bytes.push(cp);
    else if (cp < 0x800) bytes.push(0xc0 | (cp >> 6), 0x80 | (cp & 0x3f));
    else if (cp < 0x10000) bytes.push(0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f));
    else bytes.push(0xf0 | (cp >> 18), 0x80 | ((cp >> 12) & 0x3f), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f));
  }
  return Buffer.from(bytes);
}

/** Strict UTF-8 that lets surrogates through (Python's "surrogatepass"). */
function utf8Decode(data, start, end) {
  const units = [];
  let text = "";
  let p = start;
  while (p < end) {
    const c = data[p];
    let cp, need, min;
    if (c < 0x80) { units.push(c); p++; }
    else {
      if (c >= 0xc2 && c <= 0xdf) { cp = c & 0x1f; need = 1; min = 0x80; }
      else if (c >= 0xe0 && c <= 0xef) { cp = c & 0x0f; need = 2; min = 0x800; }
      else if (c >= 0xf0 && c <= 0xf4) { cp = c & 0x07; need = 3; min = 0x10000; }
      else throw new WireError("a string is not UTF-8");
      if (p + need >= end) throw new WireError("a string is not UTF-8");
      for (let k = 1; k <= need; k++) {
        const d = data[p + k];
        if ((d & 0xc0) !== 0x80) throw new WireError("a string is not UTF-8");
        cp = (cp << 6) | (d & 0x3f);
      }
      if (cp < min || cp > 0x10ffff) throw new WireError("a string is not UTF-8");
      if (cp >= 0x10000) { cp -= 0x10000; units.push(0xd800 + (cp >> 10), 0xdc00 + (cp & 0x3ff)); }
      else units.push(cp);
      p += need + 1;
    }
    if (units.length >= 8192) { text += String.fromCharCode.apply(null, units); units.length = 0; }
  }
  return text + String.fromCharCode.apply(null, units);
}

// ------------------------------------------------------------------ encoding

class Out {
  constructor() { this.chunks = []; this.size = 0; }
  put(buf) {
    this.size += buf.length;
    if (this.size > MAX_FRAME) throw new WireError(`the value is over the frame limit of ${MAX_FRAME} bytes`);
    this.chunks.push(buf);
  }
  ascii(text) { this.put(Buffer.from(text, "latin1")); }
  bytes() { return Buffer.concat(this.chunks, this.size); }
}

const floatBits = Buffer.alloc(8);

function encodeNumber(v, out) {
  if (Number.isSafeInteger(v) && !Object.is(v, -0)) { out.ascii(`i${v};`); return; }
  floatBits.writeDoubleBE(v, 0);
  out.ascii("f" + floatBits.toString("hex"));
}

function encodeValue(v, out, depth) {
  if (depth > MAX_DEPTH) throw new WireError("the value is nested too deep");
  if (v === null) { out.ascii("n"); return; }
  switch (typeof v) {
    case "undefined": out.ascii("u"); return;
    case "boolean": out.ascii(v ? "b1" : "b0"); return;
    case "number": encodeNumber(v, out); return;
    case "bigint": out.ascii(`i${v.toString()};`); return;
    case "string": {
      const raw = utf8Encode(v);
      out.ascii(`s${raw.length}:`);
      out.put(raw);
      return;
    }
    case "symbol":
    case "function":
      throw new WireError(`cannot encode a ${typeof v}`);
    default:
      break;
  }
  if (v instanceof Number || v instanceof String || v instanceof Boolean || v instanceof BigInt) {
    encodeValue(v.valueOf(), out, depth);
    return;
  }
  if (Array.isArray(v) || (ArrayBuffer.isView(v) && !(v instanceof DataView))) {
    const n = v.length;
    out.ascii(`l${n}:`);
    for (let k = 0; k < n; k++) encodeValue(v[k], out, depth + 1);
    return;
  }
  if (v instanceof Set) {
    out.ascii(`l${v.size}:`);
    for (const item of v) encodeValue(item, out, depth + 1);
    return;
  }
  if (v instanceof Map) {
    out.ascii(`m${v.size}:`);
    for (const [key, item] of v) { encodeValue(key, out, depth + 1); encodeValue(item, out, depth + 1); }
    return;
  }
  const keys = Object.keys(v);
  out.ascii(`m${keys.length}:`);
  for (const key of keys) { encodeValue(key, out, depth + 1); encodeValue(v[key], out, depth + 1); }
}

function encode(value) {
  const out = new Out();
  encodeValue(value, out, 0);
  return out.bytes();
}

// ------------------------------------------------------------------ decoding

const SAFE_MIN = BigInt(Number.MIN_SAFE_INTEGER);
const SAFE_MAX = BigInt(Number.MAX_SAFE_INTEGER);

function decode(data) {
  const state = { pos: 0 };
  const value = decodeValue(data, state, 0);
  if (state.pos !== data.length) throw new WireError(`${data.length - state.pos} bytes after the value`);
  return value;
}

function number(data, state, stop) {
  const start = state.pos;
  let end = start;
  while (end < data.length && data[end] !== stop && end - start <= 100000) end++;
  if (end >= data.length || data[end] !== stop) throw new WireError(`unterminated number at byte ${start}`);
  const text = data.subarray(start, end).toString("latin1");
  if (!/^-?[0-9]+$/.test(text)) throw new WireError(`not a decimal number at byte ${start}`);
  state.pos = end + 1;
  return BigInt(text);
}

function count(data, state) {
  const n = number(data, state, 0x3a);
  if (n < 0n || n > BigInt(data.length)) throw new WireError(`a count of ${n} cannot fit the frame`);
  return Number(n);
}

function decodeValue(data, state, depth) {
  if (depth > MAX_DEPTH) throw new WireError("values nested too deep");
  if (state.pos >= data.length) throw new WireError("the value ends early");
  const tag = String.fromCharCode(data[state.pos]);
  state.pos += 1;
  switch (tag) {
    case "n": return null;
    case "u": return undefined;
    case "b": {
      const flag = data[state.pos];
      if (flag !== 0x30 && flag !== 0x31) throw new WireError(`a bool must be b0 or b1, at byte ${state.pos}`);
      state.pos += 1;
      return flag === 0x31;
    }
    case "i": {
      const n = number(data, state, 0x3b);
      return n >= SAFE_MIN && n <= SAFE_MAX ? Number(n) : n;
    }
    case "f": {
      const hex = data.subarray(state.pos, state.pos + 16).toString("latin1");
      if (hex.length !== 16 || !/^[0-9a-fA-F]{16}$/.test(hex)) throw new WireError(`bad float bits at byte ${state.pos}`);
      state.pos += 16;
      return Buffer.from(hex, "hex").readDoubleBE(0);
    }
    case "c": {
      const code = number(data, state, 0x3b);
      if (code < 0n || code > 0x10ffffn) throw new WireError(`no character has code ${code}`);
      return String.fromCodePoint(Number(code));
    }
    case "s": {
      const size = count(data, state);
      if (state.pos + size > data.length) throw new WireError("a string runs past the frame");
      const text = utf8Decode(data, state.pos, state.pos + size);
      state.pos += size;
      return text;
    }
    case "l":
    case "t": {
      const n = count(data, state);
      const items = [];
      for (let k = 0; k < n; k++) items.push(decodeValue(data, state, depth + 1));
      return items;
    }
    case "m": {
      const n = count(data, state);
      const keys = [], values = [];
      for (let k = 0; k < n; k++) {
        keys.push(decodeValue(data, state, depth + 1));
        values.push(decodeValue(data, state, depth + 1));
      }
      if (keys.every((key) => typeof key === "string")) {
        const object = {};
        keys.forEach((key, k) => {
          Object.defineProperty(object, key, { value: values[k], writable: true, enumerable: true, configurable: true });
        });
        return object;
      }
      return new Map(keys.map((key, k) => [key, values[k]]));
    }
    default:
      throw new WireError(`unknown tag ${JSON.stringify(tag)} at byte ${state.pos - 1}`);
  }
}

// ------------------------------------------------------------------ the harness's side

function say(text) {
  try { fs.writeSync(2, text + "\n"); } catch (e) { /* stderr is gone: the status still tells */ }
}

/** Stop the harness: the call failed, so the test fails, whatever the tests would catch. */
function fail(why) {
  say("arbiter bridge: " + (why.length > 2000 ? why.slice(0, 2000) + "..." : why));
  process.exit(FAILED_CALL);
}

/** A stub's call: send [name, args], return the reply's value (never returns on a failure). */
function call(name, args) {
  let reply;
  try {
    writeFrame(encode([name, Array.from(args)]));
    reply = readFrame();
  } catch (e) {
    fail(`the call of ${name} failed: ${e && e.message}`);
  }
  if (reply === null) fail(`the candidate's program ended before it replied to ${name}`);
  let value;
  try {
    if (reply.length > 0 && reply[0] === 0x78) {
      value = decode(reply.subarray(1));
      fail(`${name} raised: ${value}`);
    }
    if (reply.length === 0 || reply[0] !== 0x72) throw new WireError("a reply must start with r or x");
    value = decode(reply.subarray(1));
  } catch (e) {
    fail(`the reply of ${name} cannot be read: ${e && e.message}`);
  }
  return value;
}

/** console.assert that counts: a failed assertion makes the exit status nonzero. */
function installAssert() {
  let failed = 0;
  const assert = function assert(condition, ...data) {
    if (condition) return;
    failed += 1;
    let text = "";
    try { text = data.map((d) => String(d)).join(" "); } catch (e) { text = ""; }
    say("Assertion failed" + (text ? ": " + text : ""));
  };
  Object.defineProperty(console, "assert", { value: assert, writable: false, configurable: false });
  process.on("exit", (code) => {
    if (failed > 0) {
      say(`arbiter harness: ${failed} assertion(s) failed`);
      if (!code) process.exitCode = 1;
    }
  });
}

// ------------------------------------------------------------------ the candidate's side

function failure(message) {
  let text;
  try { text = String(message); } catch (e) { text = "an exception that cannot be shown"; }
  if (text.length > 4000) text = text.slice(0, 4000);
  return Buffer.concat([Buffer.from("x", "latin1"), encode(text)]);
}

function describe(e) {
  try {
    if (e instanceof Error) return `${e.name}: ${e.message}`;
    return `a thrown ${typeof e}: ${String(e)}`;
  } catch (err) {
    return "an exception that cannot be shown";
  }
}

function reply(name, result) {
  try {
    return Buffer.concat([Buffer.from("r", "latin1"), encode(result)]);
  } catch (e) {
    return failure(`the result of ${name} cannot be sent: ${describe(e)}`);
  }
}

function thrown(e) {
  try { say(e && e.stack ? String(e.stack) : describe(e)); } catch (err) { /* nothing to show */ }
  return failure(describe(e));
}

/** A reply frame's payload, or a promise of one for a declared-async function's promise. */
function answer(lookup, request, awaited) {
  let name, args;
  try {
    const raw = decode(request);
    if (!Array.isArray(raw) || raw.length !== 2 || typeof raw[0] !== "string" || !Array.isArray(raw[1])) {
      throw new WireError("a request must be [name, args]");
    }
    [name, args] = raw;
  } catch (e) {
    return failure(`a bad request: ${e.message}`);
  }
  let fn;
  try {
    fn = lookup(name);
  } catch (e) {
    return failure(describe(e));
  }
  if (typeof fn !== "function") return failure(`${name} is not defined as a function`);
  let result;
  try {
    result = fn(...args);
  } catch (e) {
    return thrown(e);
  }
  if (awaited.has(name)) {
    // The prompt declares it async: its value is what the promise resolves to (the harness's
    // stub gives the tests a promise of it again).
    try {
      return Promise.resolve(result).then((value) => reply(name, value), thrown);
    } catch (e) {
      return thrown(e);
    }
  }
  return reply(name, result);
}

/**
 * Answer calls on descriptor 3 with `lookup(name)`, until the stream ends. The functions
 * named in `awaitedNames` are declared async: their promises are awaited before the reply.
 */
function serve(lookup, awaitedNames) {
  const awaited = new Set(awaitedNames || []);
  const loop = () => {
    for (;;) {
      let request;
      try {
        request = readFrame();
      } catch (e) {
        say(`arbiter dispatcher: a bad request: ${e && e.message}`);
        process.exit(2);
      }
      if (request === null) process.exit(0);
      const step = answer(lookup, request, awaited);
      if (step instanceof Promise) {
        step.then((payload) => { writeFrame(payload); loop(); });
        return;
      }
      writeFrame(step);
    }
  };
  loop();
}

module.exports = { WireError, encode, decode, readFrame, writeFrame, call, installAssert, serve, MAX_FRAME };
