// Intl objects counted at an estimate of their ICU memory (see allocations.js, whose
// installation wraps these constructors and methods).
//
// V8 sees only the small JavaScript object of a formatter; the ICU objects behind it
// (tens of KiB for a DateTimeFormat) are outside its heap, so a program that keeps
// formatters made in a loop grew the process by gigabytes under a 64 MiB limit
// (issue 19). Each object a constructor makes is counted, at about what it holds
// (measured, with a margin: tests/hostile/test_root_census.py), with the ArrayBuffers
// (buffers_impl.js countObject) until V8 collects it; and what a method adds to an
// object later (a DateTimeFormat's interval formatter, made by its first
// `formatRange`), or a new object it returns (`Intl.Locale#maximize`), likewise.

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

function rtIntlApply(target, thisArg, args) {
  return rtCounted(rtReflectApply(target, thisArg, args), this.bytes);
}

function rtIntlConstruct(target, args, newTarget) {
  const made = rtReflectConstruct(target, args, newTarget === this.proxy ? target : newTarget);
  return rtCounted(made, this.bytes);
}

// `segment` makes a Segments object (with a break iterator of its own), whose iterator
// makes another. The Segments prototype is only reachable from one: it is wrapped at
// the first call (no ICU object is made while the prelude runs).
let rtSegmentsWrapped = false;
// ICU keeps its own copy of the text (UTF-16), counted with it.
function rtSegmentTrap(target, thisArg, args) {
  const text = rtToString(args.length > 0 ? args[0] : undefined);
  const made = rtReflectApply(target, thisArg, [text]);
  const segments = rtCounted(made, RT_SEGMENTS_BYTES + 2 * text.length);
  if (!rtSegmentsWrapped) {
    rtSegmentsWrapped = true;
    rtWrapMethod(rtObjectGetPrototypeOf(segments), Symbol.iterator, rtSegmentIteratorTrap);
  }
  return segments;
}

function rtSegmentIteratorTrap(target, thisArg, args) {
  return rtCounted(rtReflectApply(target, thisArg, args), RT_SEGMENT_ITERATOR_BYTES);
}

// A DateTimeFormat's first `formatRange` (or `formatRangeToParts`) makes it an ICU
// interval formatter that it keeps: 52 KiB measured, counted once per formatter.
const RT_DATE_RANGE_BYTES = 65536;
let rtRanged = null; // the formatters counted so (a WeakSet, made on first use)

function rtDateRangeTrap(target, thisArg, args) {
  const result = rtReflectApply(target, thisArg, args); // a TypeError for no formatter
  if (rtRanged === null) rtRanged = new rtWeakSet();
  if (!rtReflectApply(rtWeakSetHas, rtRanged, [thisArg])) {
    rtReflectApply(rtWeakSetAdd, rtRanged, [thisArg]);
    rtCounted(thisArg, RT_DATE_RANGE_BYTES);
  }
  return result;
}

// `Intl.Locale#maximize` and `minimize`: a new Locale each call.
function rtLocaleResultTrap(target, thisArg, args) {
  return rtCounted(rtReflectApply(target, thisArg, args), RT_INTL_BYTES.Locale);
}
