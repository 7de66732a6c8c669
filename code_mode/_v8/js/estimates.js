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

// `JSON.stringify`: the text is built in one call. A top-level array's length bounds
// it from below (4 bytes an element: "null," for a hole); a top-level string with no
// replacer is measured as it is escaped. Anything else is serialized with a replacer
// of the runtime's (rtJsonReplacer, calling the program's own first), which V8 calls
// with each value it is about to write, after `toJSON`: the value measured is the
// value written, whatever a getter, a Proxy or `toJSON` answers another time. It costs
// V8's fast path: 5 to 7 times slower for objects (docs/security.md).
function rtStringifyTrap(target, thisArg, args) {
  const value = args[0];
  const replacer = args.length > 1 ? args[1] : undefined;
  const space = args.length > 2 ? args[2] : undefined;
  const list = rtArrayIsArray(replacer);
  if (typeof replacer !== "function" && !list && !rtIsObject(value)) {
    if (typeof value === "string") rtCheckEscaped(value, 6, rtJsonEscapedLength);
    return rtReflectApply(target, thisArg, [value, replacer, space]);
  }
  if (rtArrayIsArray(value)) rtCheckSource(rtLength(value.length), 4);
  const given = rtJsonReplacer(list ? null : replacer, list ? rtJsonPropertyList(replacer) : null);
  return rtReflectApply(target, thisArg, [value, given, space]);
}

// The replacer: each value (and key) is measured as V8 will write it, their sum and
// each string's escaped length checked (rtCheckEscaped). A `String` object is
// converted here, once (V8 would call its `toString` itself); a replacer list (an
// array of keys) is applied here, as V8 would apply it, by handing V8 an object of
// those keys only (read once each, in the list's order; an index-like key comes
// first there, as in any object).
function rtJsonReplacer(replacer, list) {
  let total = 0;
  return function rtJsonReplace(key, value) {
    if (typeof replacer === "function") value = rtReflectApply(replacer, this, [key, value]);
    if (rtIsObject(value) && typeof value !== "function" && !rtArrayIsArray(value)) {
      if (rtJsonStringObject(value)) value = rtToString(value);
      else if (list !== null) value = rtJsonPick(value, list);
    }
    total += rtArrayIsArray(this) ? 1 : rtJsonLength(key) + 3;
    total += typeof value === "string" ? rtJsonLength(value) : 4;
    if (total > rtMemoryLimitBytes) rtHeapBreach();
    return value;
  };
}

// A string's length as JSON: measured exactly when its worst case could matter.
function rtJsonLength(text) {
  if (text.length * 12 <= rtMemoryLimitBytes) return text.length + 2;
  const escaped = rtJsonEscapedLength(text, rtMemoryLimitBytes / 2);
  rtCheckChars(escaped, 2);
  return escaped;
}

// Whether `value` is a `String` object (V8 converts those): each has an own, fixed
// `length`, which is checked first (a failed `valueOf` costs 10 microseconds).
function rtJsonStringObject(value) {
  return rtObjectHasOwn(value, "length") && rtBranded(rtStringValueOf, value);
}

// The keys of a replacer list, as V8 reads them: strings and numbers (and their
// objects), each once.
function rtJsonPropertyList(replacer) {
  const keys = [];
  const seen = new rtMap();
  const length = rtLength(replacer.length);
  for (let i = 0; i < length; i++) {
    const item = replacer[i];
    let key;
    if (typeof item === "string") key = item;
    else if (typeof item === "number") key = rtToString(item);
    else if (rtIsObject(item) && (rtJsonStringObject(item) || rtBranded(rtNumberValueOf, item))) {
      key = rtToString(item);
    } else continue;
    if (rtReflectApply(rtMapHas, seen, [key])) continue;
    rtReflectApply(rtMapSet, seen, [key, true]);
    keys[keys.length] = key;
  }
  return keys;
}

function rtJsonPick(value, list) {
  const picked = rtObjectCreate(null);
  for (let i = 0; i < list.length; i++) {
    const item = value[list[i]];
    if (item !== undefined) {
      rtObjectDefineProperty(picked, list[i], {
        __proto__: null,
        value: item,
        writable: true,
        enumerable: true,
        configurable: true,
      });
    }
  }
  return picked;
}

function rtParseTrap(target, thisArg, args) {
  const text = rtToString(args.length > 0 ? args[0] : undefined);
  rtCheckSource(text.length, 4);
  return rtReflectApply(target, thisArg, [text, args[1]]);
}
