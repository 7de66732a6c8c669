// Size checks before V8 allocates: `memory_limit_bytes` for what one built-in call does.
//
// The heap limit stops a program at the next point where V8 checks for termination, and
// V8 also caps the heap itself near the limit (_engine/_heap_cap.py). Neither reaches
// inside one built-in call: a call that allocates in proportion to an argument, a length
// or a pattern runs to its end whatever the limit says, and some abort the whole process
// on the way (`'ab'.repeat(2 ** 27).split('')`: "invalid size error"; `fill` of a sparse
// array of 2 ** 28: "invalid table size"), others take gigabytes V8 does not count (the
// parser's memory for `new Function`, the regexp compiler's, ICU objects behind `Intl`).
// The census in tests/hostile/test_memory_census.py tries every such built-in.
//
// So the runtime wraps those built-ins (proxies of the originals, as buffers.js does:
// same name, length and `toString`) and checks, from the arguments alone, what the call
// would at least allocate, before calling the original:
// * elements: one call may make at most rtElementBudget() elements (2 ** 24, fewer
//   under a small limit: 16 bytes each), since V8 cannot hold many more in a sparse
//   array and aborts rather than throw;
// * characters: a string result longer than the limit in bytes (one byte a character
//   at least), unless V8 would refuse it itself (longer than its largest string);
// * source text: `Function` and its async and generator kinds, `eval` and `RegExp`
//   cost the parser or the regexp compiler about RT_PARSE_COST or RT_REGEXP_COST bytes
//   a character of source;
// * `Intl` objects are counted, at an estimate of their ICU memory, with the
//   ArrayBuffers (buffers_impl.js countObject) until V8 collects them.
// A call that would go over fails the cell with the memory limit's message, the same as
// the heap limit's: the host hears `{"t":"heap"}`, and the program gets a RangeError it
// cannot recover from (every later effect of the cell is dropped).
//
// A global `eval` wrapped this way is an indirect eval: the code it runs sees the
// global scope, never the calling function's variables.

const RT_HEAP_MESSAGE = '{"t":"heap"}';
const RT_MAX_STRING = 536870888; // V8's largest string (2 ** 29 - 24 characters)
const RT_PARSE_COST = 32; // bytes of parser memory a character of source, at least
const RT_REGEXP_COST = 128; // bytes of regexp compiler memory a character of pattern
const rtSymbolSplit = Symbol.split;
const rtSymbolMatch = Symbol.match;
const rtSymbolReplace = Symbol.replace;
const rtSymbolIterator = Symbol.iterator;
const rtStringIndexOf = String.prototype.indexOf;
const rtRegExpFlags = rtGetter(RegExp.prototype, "flags");
const rtEval = rtGlobal.eval;
const rtRegExp = RegExp;
const rtRegExpSource = rtGetter(RegExp.prototype, "source");
const rtRegExpPrototype = RegExp.prototype;

// Over the limit: as rtBufferBreach (buffers.js), with the heap limit's message.
function rtHeapBreach() {
  if (!rtFinished) {
    rtEnqueue(RT_HEAP_MESSAGE, true);
    rtFinished = true;
    try {
      rtFlush();
    } catch {
      // Out of stack: the message stays queued for the next flush (the host's probe).
    }
  }
  throw new rtRangeError("Out of memory: the cell's memory limit");
}

const rtElementBudget = (function rtElementBudget() {
  const budget = rtMathFloor(rtBufferLimit / 16);
  return budget < 16777216 ? budget : 16777216;
});

function rtLength(value) {
  const n = rtMathTrunc(+value);
  return n > 0 ? n : 0;
}

// A relative index (start or end) clamped to [0, length], as the array methods take it.
function rtRelative(value, length, fallback) {
  if (value === undefined) return fallback;
  let n = rtMathTrunc(+value);
  if (n !== n) n = 0;
  if (n < 0) n += length;
  return n < 0 ? 0 : n > length ? length : n;
}

function rtCheckElements(count) {
  if (count > rtElementBudget()) rtHeapBreach();
}

function rtCheckChars(count, bytesPerChar) {
  if (count <= RT_MAX_STRING && count * bytesPerChar > rtBufferLimit) rtHeapBreach();
}

// The receiver of a String.prototype method as a string, without running program code
// twice: only primitives are checked (an object's `toString` is the original's job).
function rtThisLength(thisArg) {
  return typeof thisArg === "string" ? thisArg.length : -1;
}

// ---------------------------------------------------------------------------
// Arrays: the methods that write `count` elements in one call.

function rtArrayLength(thisArg) {
  return thisArg !== null && typeof thisArg === "object" ? rtLength(thisArg.length) : 0;
}

const RT_ARRAY_TRAPS = {
  __proto__: null,
  fill(target, thisArg, args) {
    const length = rtArrayLength(thisArg);
    if (length > 65536) {
      const start = rtRelative(args[1], length, 0);
      rtCheckElements(rtRelative(args[2], length, length) - start);
    }
    return rtReflectApply(target, thisArg, args);
  },
  // The result is allocated at once, in a space V8 lets a first object of any size
  // into: a doubling `a = a.concat(a)` would outrun the heap limit.
  concat(target, thisArg, args) {
    let count = rtArrayLength(thisArg);
    for (let i = 0; i < args.length; i++) {
      if (rtArrayIsArray(args[i])) count += rtLength(args[i].length);
    }
    if (count > 65536) rtCheckElements(count);
    return rtReflectApply(target, thisArg, args);
  },
  toSorted: rtWholeArrayTrap,
  toReversed: rtWholeArrayTrap,
  with: rtWholeArrayTrap,
  toSpliced(target, thisArg, args) {
    const length = rtArrayLength(thisArg);
    if (length > 65536) rtCheckElements(length + (args.length > 2 ? args.length - 2 : 0));
    return rtReflectApply(target, thisArg, args);
  },
};

function rtWholeArrayTrap(target, thisArg, args) {
  if (rtArrayLength(thisArg) > 65536) rtCheckElements(rtArrayLength(thisArg));
  return rtReflectApply(target, thisArg, args);
}

// `Array.from` of an array-like (no iterator): V8 defines every index in one call.
function rtArrayFromTrap(target, thisArg, args) {
  const items = args[0];
  if (items !== null && typeof items === "object" && items[rtSymbolIterator] == null) {
    rtCheckElements(rtLength(items.length));
  }
  return rtReflectApply(target, thisArg, args);
}

// ---------------------------------------------------------------------------
// Strings.

// `split`: V8 stops at `limit` pieces, so a huge string is split with a limit one past
// the budget; reaching it means the whole split would go over.
function rtSplitTrap(target, thisArg, args) {
  const length = rtThisLength(thisArg);
  const budget = rtElementBudget() >> 1; // each piece is a string of its own too
  if (length <= budget) return rtReflectApply(target, thisArg, args);
  const separator = args[0];
  if (typeof separator !== "string" && rtIsRegExp(separator)) {
    // V8 finds every match of a regexp separator before it applies the limit: they
    // are counted first, on a global copy of the separator.
    const flags = rtReflectApply(rtRegExpFlags, separator, []);
    const source = rtReflectApply(rtRegExpSource, separator, []);
    const global = new rtRegExp(source, rtIsGlobalRegExp(separator) ? flags : flags + "g");
    rtCountMatches(global, thisArg, budget);
  }
  const wanted = args.length > 1 && args[1] !== undefined ? args[1] >>> 0 : 4294967295;
  const pieces = rtReflectApply(target, thisArg, [args[0], wanted > budget ? budget + 1 : wanted]);
  if (pieces.length > budget) rtHeapBreach();
  return pieces;
}

// A global regexp's matches over a huge string, counted one `exec` at a time (each a
// call of its own, which the heap limit can stop): at most `budget`, or the cell fails.
function rtCountMatches(regexp, string, budget) {
  const flags = rtReflectApply(rtRegExpFlags, regexp, []);
  const unicode = rtReflectApply(rtStringIndexOf, flags, ["u"]) >= 0 ||
    rtReflectApply(rtStringIndexOf, flags, ["v"]) >= 0;
  regexp.lastIndex = 0;
  let count = 0;
  for (;;) {
    const match = rtReflectApply(rtRegExpExec, regexp, [string]);
    if (match === null) break;
    if (++count > budget) rtHeapBreach();
    if (rtString(match[0]) === "") {
      const index = rtLength(regexp.lastIndex);
      regexp.lastIndex = index + (unicode && rtReflectApply(rtStringCodePointAt, string, [index]) > 65535 ? 2 : 1);
    }
  }
  regexp.lastIndex = 0;
  return count;
}
const rtStringCodePointAt = String.prototype.codePointAt;

// A real regexp (the `source` getter throws for anything else but the prototype).
function rtIsRegExp(value) {
  try {
    return typeof rtReflectApply(rtRegExpSource, value, []) === "string" && value !== rtRegExpPrototype;
  } catch {
    return false;
  }
}

function rtIsGlobalRegExp(value) {
  try {
    return rtReflectApply(rtStringIndexOf, rtReflectApply(rtRegExpFlags, value, []), ["g"]) >= 0;
  } catch {
    return false;
  }
}

// `RegExp.prototype[Symbol.match]` with the global flag makes an array of every match.
function rtMatchTrap(target, thisArg, args) {
  const string = args[0];
  if (typeof string === "string" && string.length > rtElementBudget() && rtIsGlobalRegExp(thisArg)) {
    rtCountMatches(thisArg, string, rtElementBudget());
  }
  return rtReflectApply(target, thisArg, args);
}

// `replace` with the global flag (or `replaceAll`) over a huge string: the matches are
// counted first, and the result's length bounded from the replacement's.
function rtReplaceTrap(target, thisArg, args) {
  const string = args[0];
  if (typeof string === "string" && string.length > rtElementBudget() && rtIsGlobalRegExp(thisArg)) {
    rtCheckReplacement(string, rtCountMatches(thisArg, string, rtElementBudget()), 1, args[1]);
  }
  return rtReflectApply(target, thisArg, args);
}

function rtReplaceAllTrap(target, thisArg, args) {
  const length = rtThisLength(thisArg);
  const pattern = args[0];
  if (length > rtElementBudget() && typeof pattern === "string") {
    const budget = rtElementBudget();
    const step = pattern.length > 0 ? pattern.length : 1;
    let count = 0;
    let at = rtReflectApply(rtStringIndexOf, thisArg, [pattern, 0]);
    while (at >= 0) {
      if (++count > budget) rtHeapBreach();
      at = rtReflectApply(rtStringIndexOf, thisArg, [pattern, at + step]);
    }
    rtCheckReplacement(thisArg, count, pattern.length, args[1]);
  }
  return rtReflectApply(target, thisArg, args);
}

// `count` matches of `matchLength` characters replaced by `replacement` (a string with
// `$` patterns, or a function, whose results are the heap limit's business).
function rtCheckReplacement(string, count, matchLength, replacement) {
  if (typeof replacement !== "string") return;
  // "$" and a backquote, or "$'", insert up to the whole string; "$&" and groups, a match.
  const whole = rtReflectApply(rtStringIndexOf, replacement, ["$\x60"]) >= 0 ||
    rtReflectApply(rtStringIndexOf, replacement, ["$'"]) >= 0;
  const each = replacement.length + (whole ? string.length : matchLength) * (replacement.length >> 1);
  rtCheckChars(string.length + count * each, 1);
}

function rtPadTrap(target, thisArg, args) {
  const wanted = rtLength(args[0]);
  if (wanted > rtThisLength(thisArg)) rtCheckChars(wanted, 1);
  return rtReflectApply(target, thisArg, args);
}

function rtRepeatTrap(target, thisArg, args) {
  const length = rtThisLength(thisArg);
  if (length > 0) rtCheckChars(length * rtLength(args[0]), 1);
  return rtReflectApply(target, thisArg, args);
}

// Conversions whose result (and ICU's working copy) grows with the string.
function rtPerCharTrap(bytesPerChar) {
  return (target, thisArg, args) => {
    const length = rtThisLength(thisArg);
    if (length * bytesPerChar > rtBufferLimit) rtHeapBreach();
    return rtReflectApply(target, thisArg, args);
  };
}

// ---------------------------------------------------------------------------
// Source text: the parser and the regexp compiler.

function rtCheckSource(length, cost) {
  if (length * cost > rtBufferLimit) rtHeapBreach();
}

// `Function` and kin: each argument is converted once, here, and handed over as text.
function rtFunctionConstructor(original) {
  return function inner() {
    const args = [];
    let length = 0;
    for (let i = 0; i < arguments.length; i++) {
      args[i] = rtString(arguments[i]);
      length += args[i].length;
    }
    rtCheckSource(length, RT_PARSE_COST);
    if (new.target === undefined) return rtReflectApply(original, undefined, args);
    return rtReflectConstruct(original, args, new.target === inner ? original : new.target);
  };
}

function rtEvalTrap(target, thisArg, args) {
  if (typeof args[0] === "string") rtCheckSource(args[0].length, RT_PARSE_COST);
  return rtReflectApply(target, undefined, args);
}

function rtPatternLength(pattern) {
  if (pattern === undefined) return 0;
  if (typeof pattern === "string") return pattern.length;
  if (pattern !== null && typeof pattern === "object") {
    try {
      const source = pattern.source;
      if (typeof source === "string") return source.length;
    } catch {
      return 0;
    }
  }
  return 0;
}

function rtRegExpConstructor(original) {
  return function inner(pattern, flags) {
    rtCheckSource(rtPatternLength(pattern), RT_REGEXP_COST);
    if (new.target === undefined) return rtReflectApply(original, undefined, arguments);
    return rtReflectConstruct(original, arguments, new.target === inner ? original : new.target);
  };
}

// `compile`, and the String methods that make a regexp of a string argument.
function rtPatternTrap(target, thisArg, args) {
  rtCheckSource(rtPatternLength(args[0]), RT_REGEXP_COST);
  return rtReflectApply(target, thisArg, args);
}

function rtStringPatternTrap(target, thisArg, args) {
  if (typeof args[0] === "string") rtCheckSource(args[0].length, RT_REGEXP_COST);
  return rtReflectApply(target, thisArg, args);
}

// ---------------------------------------------------------------------------
// Intl: ICU objects, counted at about what each holds (measured, with a margin).

const RT_INTL_BYTES = {
  __proto__: null,
  Collator: 4096,
  DateTimeFormat: 40960,
  DisplayNames: 4096,
  DurationFormat: 4096,
  ListFormat: 2048,
  Locale: 2048,
  NumberFormat: 4096,
  PluralRules: 4096,
  RelativeTimeFormat: 12288,
  Segmenter: 12288,
  v8BreakIterator: 12288,
};
const RT_SEGMENTS_BYTES = 4096;
const RT_SEGMENT_ITERATOR_BYTES = 6144;

function rtCounted(object, bytes) {
  if ((typeof object === "object" && object !== null) || typeof object === "function") {
    rtBuffers().countObject(object, bytes);
  }
  return object;
}

function rtIntlConstructor(original, bytes) {
  return function inner() {
    const made = new.target === undefined
      ? rtReflectApply(original, this, arguments)
      : rtReflectConstruct(original, arguments, new.target === inner ? original : new.target);
    return rtCounted(made, bytes);
  };
}

function rtCountingTrap(bytes) {
  return (target, thisArg, args) => rtCounted(rtReflectApply(target, thisArg, args), bytes);
}

// ---------------------------------------------------------------------------
// Installation (before any program runs).

const rtInstallAllocationChecks = (function rtInstallAllocationChecks() {
  const arrayPrototype = Array.prototype;
  const keys = rtObjectKeys(RT_ARRAY_TRAPS);
  for (let i = 0; i < keys.length; i++) {
    rtWrapMethod(arrayPrototype, keys[i], RT_ARRAY_TRAPS[keys[i]]);
  }
  rtWrapMethod(Array, "from", rtArrayFromTrap);

  const stringPrototype = String.prototype;
  rtWrapMethod(stringPrototype, "split", rtSplitTrap);
  rtWrapMethod(stringPrototype, "replaceAll", rtReplaceAllTrap);
  rtWrapMethod(stringPrototype, "padStart", rtPadTrap);
  rtWrapMethod(stringPrototype, "padEnd", rtPadTrap);
  rtWrapMethod(stringPrototype, "repeat", rtRepeatTrap);
  rtWrapMethod(stringPrototype, "normalize", rtPerCharTrap(12));
  const cases = ["toUpperCase", "toLowerCase", "toLocaleUpperCase", "toLocaleLowerCase"];
  for (let i = 0; i < cases.length; i++) rtWrapMethod(stringPrototype, cases[i], rtPerCharTrap(4));
  const patterns = ["match", "matchAll", "search"];
  for (let i = 0; i < patterns.length; i++) {
    rtWrapMethod(stringPrototype, patterns[i], rtStringPatternTrap);
  }
  // The text is built in one call; an array's length bounds it from below (4 bytes an
  // element: a digit and a comma at least, "null," for a hole). Nested arrays are not
  // walked: the heap limit and V8's largest string bound them (see docs/security.md).
  rtWrapMethod(JSON, "stringify", (target, thisArg, args) => {
    if (rtArrayIsArray(args[0])) rtCheckSource(rtLength(args[0].length), 4);
    return rtReflectApply(target, thisArg, args);
  });
  rtWrapMethod(JSON, "parse", (target, thisArg, args) => {
    if (typeof args[0] === "string") rtCheckSource(args[0].length, 4);
    return rtReflectApply(target, thisArg, args);
  });

  const regexpPrototype = RegExp.prototype;
  rtWrapMethod(regexpPrototype, rtSymbolMatch, rtMatchTrap);
  rtWrapMethod(regexpPrototype, rtSymbolReplace, rtReplaceTrap);
  rtWrapMethod(regexpPrototype, "compile", rtPatternTrap);
  rtWrapConstructor(RegExp, rtRegExpConstructor(RegExp));

  rtWrapMethod(rtGlobal, "eval", rtEvalTrap);
  rtWrapConstructor(rtFunction, rtFunctionConstructor(rtFunction));
  const kinds = [rtAsyncFunction, function* () {}.constructor, async function* () {}.constructor];
  for (let i = 0; i < kinds.length; i++) {
    rtWrapConstructor(kinds[i], rtFunctionConstructor(kinds[i]), null);
  }

  const intl = rtGlobal.Intl;
  if (typeof intl !== "object" || intl === null) return;
  const names = rtObjectKeys(RT_INTL_BYTES);
  for (let i = 0; i < names.length; i++) {
    const original = intl[names[i]];
    if (typeof original !== "function") continue;
    rtWrapConstructor(original, rtIntlConstructor(original, RT_INTL_BYTES[names[i]]), intl);
  }
  if (typeof intl.Segmenter === "function") {
    rtWrapMethod(intl.Segmenter.prototype, "segment", rtSegmentTrap);
  }
});

// `segment` makes a Segments object (with a break iterator of its own), whose iterator
// makes another. The Segments prototype is only reachable from one: it is wrapped at
// the first call (no ICU object is made while the prelude runs).
let rtSegmentsWrapped = false;
function rtSegmentTrap(target, thisArg, args) {
  const segments = rtCounted(rtReflectApply(target, thisArg, args), RT_SEGMENTS_BYTES);
  if (!rtSegmentsWrapped) {
    rtSegmentsWrapped = true;
    const prototype = rtObjectGetPrototypeOf(segments);
    rtWrapMethod(prototype, rtSymbolIterator, rtCountingTrap(RT_SEGMENT_ITERATOR_BYTES));
  }
  return segments;
}

rtInstallAllocationChecks();
