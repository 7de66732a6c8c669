// Size checks before V8 allocates: `memory_limit_bytes` for what one built-in call does.
//
// The heap limit stops a program at the next point where V8 checks for termination, and
// V8 also caps the heap itself near the limit (_v8/_heap_cap.py). Neither reaches
// inside one built-in call: a call that allocates in proportion to an argument, a length
// or a pattern runs to its end whatever the limit says, and some abort the whole process
// on the way (`'ab'.repeat(2 ** 27).split('')`: "invalid size error"; `fill` of a sparse
// array of 2 ** 28: "invalid table size"), others take gigabytes V8 does not count (the
// parser's memory for `new Function`, the regexp compiler's, ICU objects behind `Intl`).
// The census in tests/hostile/test_memory_census.py tries every such built-in.
//
// So the runtime wraps those built-ins in proxies of the originals (same name, length,
// `toString` and own properties: a proxy without a `get` trap passes every read on) and
// checks, from the arguments alone, what the call would at least allocate, before
// calling the original:
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
// Every isolate evaluates this file before a cell takes it, so it holds only what each
// call must run (a size compared with the budget) and the installation; what only a
// huge string or array reaches (counting a regexp's matches, bounding a replacement) is
// in allocations_impl.js, compiled the first time a call needs it. The installation
// makes no closure per wrapper: a trap is called with its handler as `this`, and a
// handler carries what its trap needs to know (the proxy, an Intl object's size).
// (Closures that captured each wrapper's data made the first cell of every isolate
// about 0.1 ms slower; see docs/performance.md, optimisation 57.)
//
// A global `eval` wrapped this way is an indirect eval: the code it runs sees the
// global scope, never the calling function's variables.

const RT_HEAP_MESSAGE = '{"t":"heap"}';
const RT_MAX_STRING = 536870888; // V8's largest string (2 ** 29 - 24 characters)
const RT_PARSE_COST = 32; // bytes of parser memory a character of source, at least
const RT_REGEXP_COST = 128; // bytes of regexp compiler memory a character of pattern
const RT_FEW_ELEMENTS = 65536; // an array method on fewer elements is not checked
const RT_PROPERTY_CLASS_COST = 32768; // bytes of ICU memory a `\p{...}` class (18 KiB measured)

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

function rtElementBudget() {
  const budget = rtMathFloor(rtMemoryLimitBytes / 16);
  return budget < 16777216 ? budget : 16777216;
}

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
  if (count <= RT_MAX_STRING && count * bytesPerChar > rtMemoryLimitBytes) rtHeapBreach();
}

function rtCheckSource(length, cost) {
  if (length * cost > rtMemoryLimitBytes) rtHeapBreach();
}

// Conversions made once, here, before the check: the converted primitive is what the
// check measures and what the original receives, so a value that converts differently
// each time (a `valueOf` that counts its calls, a getter, a Proxy) cannot pass the
// check as one thing and reach V8 as another. A template literal converts as ToString
// does (a Symbol throws); unary plus as ToNumber (a BigInt throws, as V8's ToIntegerOr-
// Infinity would).
function rtToString(value) {
  return typeof value === "string" ? value : `${value}`;
}

function rtToNumber(value) {
  return typeof value === "number" ? value : +value;
}

function rtIsObject(value) {
  return (typeof value === "object" && value !== null) || typeof value === "function";
}

// The receiver of a String.prototype method, converted once (null and undefined stay:
// the original throws its TypeError for them).
function rtThisString(thisArg) {
  return thisArg === null || thisArg === undefined ? thisArg : rtToString(thisArg);
}

function rtThisLength(text) {
  return typeof text === "string" ? text.length : -1;
}

// An argument a String method makes a regexp of, unless it has a method under `key`
// (`Symbol.match`...): such an object is passed on (read once here, once by V8: a
// getter that changes only picks what runs, and every branch is checked or the
// program's own code); any other value is converted once, and its length checked.
function rtPatternArgument(value, key) {
  if (rtIsObject(value) && value[key] != null) return value;
  const text = value === undefined ? value : rtToString(value);
  if (text !== undefined) rtCheckSource(text.length, RT_REGEXP_COST);
  return text;
}

// A replacement: a function stays, anything else is converted once.
function rtReplacement(value) {
  return typeof value === "function" ? value : rtToString(value);
}

// The receiver of an array method that makes a new array of its length: V8 reads
// `length` again, and a getter or a Proxy can answer more the second time. Such a
// receiver is pinned: an object whose own `length` is the one checked, inheriting
// every element from the receiver (reads go on to it, its getters and traps included).
function rtPinnedLength(thisArg, length) {
  return { __proto__: thisArg, length };
}

// The slow paths (allocations_impl.js), compiled the first time one is needed.
let rtAllocationsImpl = null;

function rtAllocations() {
  if (rtAllocationsImpl === null) {
    rtAllocationsImpl = rtCompileLazy(rtAllocationsImplSource, {
      __proto__: null,
      reflectApply: rtReflectApply,
      regExp: rtRegExp,
      regExpPrototype: rtRegExpPrototype,
      regExpExec: rtRegExpExec,
      regExpFlags: rtRegExpFlags,
      regExpSource: rtRegExpSource,
      stringIndexOf: rtStringIndexOf,
      stringCodePointAt: rtStringCodePointAt,
      string: rtString,
      length: rtLength,
      heapBreach: rtHeapBreach,
      checkChars: rtCheckChars,
      reflectConstruct: rtReflectConstruct,
      stringSlice: rtStringSlice,
      stringCharCodeAt: rtStringCharCodeAt,
      typeError: rtTypeError,
      pristine: rtRegExpPristine,
    });
  }
  return rtAllocationsImpl;
}

// ---------------------------------------------------------------------------
// Arrays: the methods that write `count` elements in one call.

function rtArrayLength(thisArg) {
  return rtIsObject(thisArg) ? rtLength(thisArg.length) : 0;
}

// `start` and `end` are converted once and handed over as indices within the length
// read here: whatever V8 reads as the length next, it writes at most end - start.
function rtFillTrap(target, thisArg, args) {
  if (!rtIsObject(thisArg)) return rtReflectApply(target, thisArg, args);
  const length = rtArrayLength(thisArg);
  const start = rtRelative(args[1], length, 0);
  const end = rtRelative(args[2], length, length);
  if (end - start > RT_FEW_ELEMENTS) rtCheckElements(end - start);
  return rtReflectApply(target, thisArg, [args[0], start, end]);
}

// `toSorted`, `toReversed`, `with`: a copy of the whole array (of a pinned receiver).
function rtWholeArrayTrap(target, thisArg, args) {
  if (!rtIsObject(thisArg)) return rtReflectApply(target, thisArg, args);
  const length = rtArrayLength(thisArg);
  if (length > RT_FEW_ELEMENTS) rtCheckElements(length);
  return rtReflectApply(target, rtPinnedLength(thisArg, length), args);
}

function rtToSplicedTrap(target, thisArg, args) {
  if (!rtIsObject(thisArg)) return rtReflectApply(target, thisArg, args);
  const length = rtArrayLength(thisArg);
  if (length > RT_FEW_ELEMENTS) rtCheckElements(length + (args.length > 2 ? args.length - 2 : 0));
  return rtReflectApply(target, rtPinnedLength(thisArg, length), args);
}

// `Array.from`: V8 defines every index of an array-like in one call. The iterator
// method and the length are read once, here; V8 is handed an object that answers the
// same (an iterator method calling the one read, or a pinned length and no iterator).
function rtArrayFromTrap(target, thisArg, args) {
  const items = args[0];
  if (!rtIsObject(items)) return rtReflectApply(target, thisArg, args);
  const using = items[Symbol.iterator];
  let given;
  if (using != null) {
    given = {
      __proto__: null,
      [Symbol.iterator]() {
        return rtReflectApply(using, items, []);
      },
    };
  } else {
    const length = rtLength(items.length);
    rtCheckElements(length);
    given = { __proto__: items, length, [Symbol.iterator]: undefined };
  }
  return rtReflectApply(target, thisArg, [given, args[1], args[2]]);
}

// ---------------------------------------------------------------------------
// Strings.

// `split` of a string of more pieces than the budget allows (each piece is a string of
// its own too, hence half of it) is counted first (allocations_impl.js).
// The receiver, the limit and a separator without a `Symbol.split` method are converted
// once (see rtPatternArgument).
// A regexp separator (one whose `Symbol.split` is V8's) over more than 1/128 of the
// limit in characters is split by allocations_impl.js: V8 keeps about 57 bytes a
// character outside the heap while it splits (measured, a regexp found nowhere in 64 Mi
// characters: 2 GiB, and the worker killed).
function rtSplitTrap(target, thisArg, args) {
  const text = rtThisString(thisArg);
  let separator = args.length > 0 ? args[0] : undefined;
  let splitter = null;
  if (rtIsObject(separator)) {
    splitter = separator[Symbol.split];
    if (splitter == null) separator = rtToString(separator);
  }
  const limit = args.length > 1 && args[1] !== undefined ? rtToNumber(args[1]) : undefined;
  const budget = rtElementBudget() >> 1;
  if (splitter === rtRegExpSplit && rtThisLength(text) * 128 > rtMemoryLimitBytes) {
    return rtAllocations().splitRegExp(separator, text, limit, budget);
  }
  const given = [separator, limit];
  if (rtThisLength(text) <= budget) return rtReflectApply(target, text, given);
  return rtAllocations().split(target, text, given, budget);
}

// `RegExp.prototype[Symbol.match]` and `[Symbol.replace]`: a global regexp over a huge
// string makes an array of every match, or a string of every replacement. Its matches
// are counted first; a regexp whose hooks the program changed runs in
// allocations_impl.js instead (its `flags` or `exec` would answer V8 anew).
// The string and a replacement that is no function are converted once.
function rtMatchTrap(target, thisArg, args) {
  const string = rtToString(args.length > 0 ? args[0] : undefined);
  if (string.length > rtElementBudget()) {
    if (!rtRegExpPristine(thisArg)) {
      return rtAllocations().matchSpec(thisArg, string, rtElementBudget());
    }
    rtAllocations().match(thisArg, string, rtElementBudget());
  }
  return rtReflectApply(target, thisArg, [string]);
}

function rtReplaceTrap(target, thisArg, args) {
  const string = rtToString(args.length > 0 ? args[0] : undefined);
  const replacement = rtReplacement(args.length > 1 ? args[1] : undefined);
  if (string.length > rtElementBudget()) {
    if (!rtRegExpPristine(thisArg)) {
      return rtAllocations().replaceSpec(thisArg, string, replacement, rtElementBudget());
    }
    rtAllocations().replace(thisArg, string, rtElementBudget(), replacement);
  }
  return rtReflectApply(target, thisArg, [string, replacement]);
}


function rtReplaceAllTrap(target, thisArg, args) {
  const text = rtThisString(thisArg);
  let pattern = args.length > 0 ? args[0] : undefined;
  if (!rtIsObject(pattern) || pattern[Symbol.replace] == null) pattern = rtToString(pattern);
  const replacement = rtReplacement(args.length > 1 ? args[1] : undefined);
  if (rtThisLength(text) > rtElementBudget() && typeof pattern === "string") {
    rtAllocations().replaceAll(text, pattern, rtElementBudget(), replacement);
  }
  return rtReflectApply(target, text, [pattern, replacement]);
}

function rtPadTrap(target, thisArg, args) {
  const text = rtThisString(thisArg);
  const wanted = rtToNumber(args.length > 0 ? args[0] : undefined);
  const filler = args.length > 1 && args[1] !== undefined ? rtToString(args[1]) : undefined;
  if (rtLength(wanted) > rtThisLength(text)) rtCheckChars(rtLength(wanted), 1);
  return rtReflectApply(target, text, [wanted, filler]);
}

function rtRepeatTrap(target, thisArg, args) {
  const text = rtThisString(thisArg);
  const count = rtToNumber(args.length > 0 ? args[0] : undefined);
  const length = rtThisLength(text);
  if (length > 0) rtCheckChars(length * rtLength(count), 1);
  return rtReflectApply(target, text, [count]);
}

// Conversions whose result (and ICU's working copy) grows with the string: 4 bytes a
// character for the case mappings, 12 for `normalize`.
function rtCaseTrap(target, thisArg, args) {
  const text = rtThisString(thisArg);
  if (rtThisLength(text) * 4 > rtMemoryLimitBytes) rtHeapBreach();
  return rtReflectApply(target, text, args);
}

function rtNormalizeTrap(target, thisArg, args) {
  const text = rtThisString(thisArg);
  const form = args.length > 0 && args[0] !== undefined ? rtToString(args[0]) : undefined;
  if (rtThisLength(text) * 12 > rtMemoryLimitBytes) rtHeapBreach();
  return rtReflectApply(target, text, [form]);
}

// ---------------------------------------------------------------------------
// Installation (before any program runs): one pass over a table of methods and one over
// a table of constructors, calling no helper of the runtime per wrapper. V8 compiles a
// function that was called a few times with its baseline compiler (Sparkplug), in
// batches: helpers called for every wrapper filled a batch that was then compiled on
// the first cell's clock (see docs/performance.md, optimisation 57).
const rtInstallAllocationChecks = (function rtInstallAllocationChecks() {
  // Each method: its holder, its key, its trap.
  const methods = [
    Array.prototype, "fill", rtFillTrap,
    Array.prototype, "concat", rtConcatTrap,
    Array.prototype, "toSorted", rtWholeArrayTrap,
    Array.prototype, "toReversed", rtWholeArrayTrap,
    Array.prototype, "with", rtWholeArrayTrap,
    Array.prototype, "toSpliced", rtToSplicedTrap,
    Array, "from", rtArrayFromTrap,
    String, "raw", rtStringRawTrap, // see walks.js
    String.prototype, "split", rtSplitTrap,
    String.prototype, "replaceAll", rtReplaceAllTrap,
    String.prototype, "padStart", rtPadTrap,
    String.prototype, "padEnd", rtPadTrap,
    String.prototype, "repeat", rtRepeatTrap,
    String.prototype, "normalize", rtNormalizeTrap,
    String.prototype, "toUpperCase", rtCaseTrap,
    String.prototype, "toLowerCase", rtCaseTrap,
    String.prototype, "toLocaleUpperCase", rtCaseTrap,
    String.prototype, "toLocaleLowerCase", rtCaseTrap,
    String.prototype, "match", rtStringMatchTrap,
    String.prototype, "matchAll", rtStringMatchAllTrap,
    String.prototype, "search", rtStringSearchTrap,
    JSON, "stringify", rtStringifyTrap,
    JSON, "parse", rtParseTrap,
    rtRegExpPrototype, Symbol.match, rtMatchTrap,
    rtRegExpPrototype, Symbol.replace, rtReplaceTrap,
    rtRegExpPrototype, "compile", rtPatternTrap,
    rtGlobal, "eval", rtEvalTrap,
    rtGlobal, "encodeURI", rtEncodeUriTrap,
    rtGlobal, "encodeURIComponent", rtEncodeUriTrap,
    rtGlobal, "escape", rtEscapeTrap,
    BigInt.prototype, "toString", rtBigIntToStringTrap,
    Date.prototype, "toLocaleString", rtLocaleTrap,
    Date.prototype, "toLocaleDateString", rtLocaleTrap,
    Date.prototype, "toLocaleTimeString", rtLocaleTrap,
    Number.prototype, "toLocaleString", rtLocaleTrap,
    BigInt.prototype, "toLocaleString", rtLocaleTrap,
    String.prototype, "localeCompare", rtLocaleTrap,
  ];
  // Each constructor: the original, where its name is defined (`null`: only as its
  // prototype's `constructor`), the traps of its handler, its size (Intl), and whether
  // it inherits from `Function` (the other kinds of function: their [[Prototype]] is
  // then Function's proxy, or `Object.getPrototypeOf(AsyncFunction)` would hand any
  // program the original, unchecked `Function`). `Function` comes before its kinds.
  const constructors = [
    rtRegExp, rtGlobal, rtRegExpApply, rtRegExpConstruct, 0, false,
    rtFunction, rtGlobal, rtFunctionApply, rtFunctionConstruct, 0, false,
    rtAsyncFunction, null, rtFunctionApply, rtFunctionConstruct, 0, true,
    function* () {}.constructor, null, rtFunctionApply, rtFunctionConstruct, 0, true,
    async function* () {}.constructor, null, rtFunctionApply, rtFunctionConstruct, 0, true,
  ];
  const intl = rtGlobal.Intl;
  if (typeof intl === "object" && intl !== null) {
    const names = rtObjectKeys(RT_INTL_BYTES);
    for (let i = 0; i < names.length; i++) {
      const original = intl[names[i]];
      if (typeof original !== "function") continue;
      const entry = [original, intl, rtIntlApply, rtIntlConstruct, RT_INTL_BYTES[names[i]], false];
      rtReflectApply(rtArrayPush, constructors, entry);
    }
    if (typeof intl.Segmenter === "function") {
      rtReflectApply(rtArrayPush, methods, [intl.Segmenter.prototype, "segment", rtSegmentTrap]);
    }
    if (typeof intl.DateTimeFormat === "function") {
      const prototype = intl.DateTimeFormat.prototype;
      rtReflectApply(rtArrayPush, methods, [prototype, "formatRange", rtDateRangeTrap]);
      rtReflectApply(rtArrayPush, methods, [prototype, "formatRangeToParts", rtDateRangeTrap]);
    }
    if (typeof intl.Locale === "function") {
      const prototype = intl.Locale.prototype;
      rtReflectApply(rtArrayPush, methods, [prototype, "maximize", rtLocaleResultTrap]);
      rtReflectApply(rtArrayPush, methods, [prototype, "minimize", rtLocaleResultTrap]);
    }
  }

  const searches = ["indexOf", "lastIndexOf", "includes"];
  for (let i = 0; i < searches.length; i++) {
    rtReflectApply(rtArrayPush, methods, [Array.prototype, searches[i], rtSearchTrap]);
  }
  const walks = rtObjectKeys(RT_WALKS); // see walks.js
  for (let i = 0; i < walks.length; i++) {
    rtReflectApply(rtArrayPush, methods, [Array.prototype, walks[i], rtWalkTrap]);
  }
  // As rtWrapMethod (buffers.js) does, written out: the proxy's handler has no
  // prototype, so a program's `Object.prototype.get` is no trap. (`kind`: the
  // method's name, for the traps that serve several.)
  for (let i = 0; i < methods.length; i += 3) {
    const descriptor = rtObjectGetOwnPropertyDescriptor(methods[i], methods[i + 1]);
    if (descriptor === undefined) continue; // not in this V8
    const handler = { __proto__: null, apply: methods[i + 2], kind: methods[i + 1] };
    const value = new rtProxy(descriptor.value, handler);
    rtObjectDefineProperty(methods[i], methods[i + 1], {
      __proto__: null,
      value,
      writable: true,
      enumerable: false,
      configurable: true,
    });
  }
  // Each is replaced by a proxy whose traps see it as `this.proxy`: on its holder under
  // its name, and as its prototype's `constructor`.
  let functionProxy = null;
  for (let i = 0; i < constructors.length; i += 6) {
    const original = constructors[i];
    const holder = constructors[i + 1];
    const handler = {
      __proto__: null,
      apply: constructors[i + 2],
      construct: constructors[i + 3],
      bytes: constructors[i + 4],
      proxy: null,
      parent: functionProxy,
    };
    if (constructors[i + 5]) handler.getPrototypeOf = rtFunctionKindPrototype;
    const value = new rtProxy(original, handler);
    handler.proxy = value;
    if (original === rtFunction) functionProxy = value;
    const descriptor = {
      __proto__: null,
      value,
      writable: true,
      enumerable: false,
      configurable: true,
    };
    rtObjectDefineProperty(original.prototype, "constructor", descriptor);
    if (holder !== null) rtObjectDefineProperty(holder, original.name, descriptor);
  }
});

rtInstallAllocationChecks();

// The regexp hooks as installed (see rtRegExpPristine; read as rtRegExpHook reads them,
// written out: the prelude calls only what it compiles ahead).
const rtRecordRegExpHooks = (function rtRecordRegExpHooks() {
  const keys = RT_REGEXP_HOOK_KEYS;
  for (let i = 0; i <= keys.length; i++) {
    const holder = i < keys.length ? rtRegExpPrototype : rtRegExp;
    const key = i < keys.length ? keys[i] : Symbol.species;
    const descriptor = rtObjectGetOwnPropertyDescriptor(holder, key);
    let hook;
    if (descriptor !== undefined) hook = "value" in descriptor ? descriptor.value : descriptor.get;
    rtReflectApply(rtArrayPush, rtRegExpHooks, [holder, key, hook]);
  }
});

rtRecordRegExpHooks();
