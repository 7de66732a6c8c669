// Memory V8 does not count, estimated before the call (see allocations.js, whose
// installation wraps these traps): escaped text, a BigInt's digits, and the ICU
// formatters the `toLocale...String` methods make and drop.
//
// Issue 26 measured each under a 64 MiB limit growing the process by 0.3 to 1.3 GiB:
// V8 builds the result of `encodeURIComponent`, `escape` and `JSON.stringify` of a
// string in one call, and a formatter's ICU memory is invisible to its collector. The
// census of each is tests/hostile/test_root_census.py.

// Escaping: V8 builds the escaped text in one call, outside the heap limit's reach.
// Its worst case (`most` characters for each) is checked first; only a string whose
// worst case would go over is measured exactly (`measure`, one JavaScript loop over
// it, which the running-time limit can stop, and which ends once past half the limit).
function rtCheckEscaped(text, most, measure) {
  if (text.length * most * 2 <= rtMemoryLimitBytes) return;
  rtCheckChars(measure(text, rtMemoryLimitBytes / 2), 2);
}

function rtJsonEscapedLength(text, cap) {
  let count = 2;
  for (let i = 0; i < text.length && count <= cap; i++) {
    const c = rtReflectApply(rtStringCharCodeAt, text, [i]);
    if (c < 32) count += c === 8 || c === 9 || c === 10 || c === 12 || c === 13 ? 2 : 6;
    else if (c === 34 || c === 92) count += 2;
    else if (c >= 0xd800 && c <= 0xdfff) count += 6; // lone at worst
    else count += 1;
  }
  return count;
}

// encodeURI and encodeURIComponent: 3 characters a UTF-8 byte outside the unreserved.
function rtUriEncodedLength(text, cap) {
  let count = 0;
  for (let i = 0; i < text.length && count <= cap; i++) {
    const c = rtReflectApply(rtStringCharCodeAt, text, [i]);
    count += c < 128 ? 3 : c < 2048 ? 6 : c >= 0xd800 && c <= 0xdbff ? 6 : 9;
  }
  return count;
}

// `escape`: `%XX` below 256, `%uXXXX` above.
function rtEscapedLength(text, cap) {
  let count = 0;
  for (let i = 0; i < text.length && count <= cap; i++) {
    count += rtReflectApply(rtStringCharCodeAt, text, [i]) < 256 ? 3 : 6;
  }
  return count;
}

function rtEncodeUriTrap(target, thisArg, args) {
  const text = rtToString(args.length > 0 ? args[0] : undefined);
  rtCheckEscaped(text, 9, rtUriEncodedLength);
  return rtReflectApply(target, thisArg, [text]);
}

function rtEscapeTrap(target, thisArg, args) {
  const text = rtToString(args.length > 0 ? args[0] : undefined);
  rtCheckEscaped(text, 6, rtEscapedLength);
  return rtReflectApply(target, thisArg, [text]);
}

// `BigInt.prototype.toString(radix)`: bits / log2(radix) characters. A BigInt's bits
// are bounded by comparisons with powers of two (each allocates at most its size):
// doubling from 2 ** 16, then halving the gap four times (within 1/16 below).
function rtBigIntToStringTrap(target, thisArg, args) {
  const radix = args.length > 0 && args[0] !== undefined ? rtToNumber(args[0]) : 10;
  let value = thisArg;
  if (typeof value !== "bigint") {
    try {
      value = rtReflectApply(rtBigIntValueOf, thisArg, []); // a BigInt object's own value
    } catch {
      return rtReflectApply(target, thisArg, [radix]); // no BigInt: V8's TypeError
    }
  }
  const n = value < 0n ? -value : value;
  if (n >= 1n << 65536n) {
    let low = 65536; // probes stay under V8's largest BigInt (2 ** 30 bits)
    while (low < 268435456 && n >= 1n << rtBigInt(low * 2)) low *= 2;
    let step = low;
    for (let i = 0; i < 4; i++) {
      step /= 2;
      if (n >= 1n << rtBigInt(low + step)) low += step;
    }
    const r = radix >= 2 && radix <= 36 ? radix : 10;
    rtCheckChars(rtMathCeil(low / rtMathLog2(r)), 1);
  }
  return rtReflectApply(target, value, [radix]);
}

// The `toLocale...String` methods with a locale or options make (and drop) an ICU
// formatter per call, tens of KiB that V8 does not see: it collects them too rarely.
// Their estimate is added up, and a full collection runs each time the sum reaches a
// quarter of the limit (at most RT_FORMATTER_CHURN).
const RT_FORMATTER_CHURN = 16777216;
let rtFormatterChurn = 0;

// (`localeCompare` takes the other string first; without a locale or options V8 uses
// a formatter it caches, and nothing is added.)
function rtLocaleTrap(target, thisArg, args) {
  const given = args.length > (this.kind === "localeCompare" ? 1 : 0);
  if (given && rtCollectGarbage !== null) {
    rtFormatterChurn += RT_INTL_BYTES.DateTimeFormat;
    const most = rtMemoryLimitBytes / 4;
    if (rtFormatterChurn >= (most < RT_FORMATTER_CHURN ? most : RT_FORMATTER_CHURN)) {
      rtFormatterChurn = 0;
      rtReflectApply(rtCollectGarbage, undefined, []);
    }
  }
  return rtReflectApply(target, thisArg, args);
}

function rtParseTrap(target, thisArg, args) {
  const text = rtToString(args.length > 0 ? args[0] : undefined);
  rtCheckSource(text.length, 4);
  return rtReflectApply(target, thisArg, [text, args[1]]);
}
