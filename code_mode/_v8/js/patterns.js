// Source text and patterns (see allocations.js, whose installation wraps these traps):
// what the parser and the regexp compiler cost, converted once and checked before
// V8 compiles; and which regexps V8 matches as their internal flags say.
//
// `Function` and its kinds, `eval`, `RegExp`, `compile` and the String methods that
// make a regexp of an argument are bounded by the limit (RT_PARSE_COST and
// RT_REGEXP_COST bytes a character, RT_PROPERTY_CLASS_COST a `\p{...}` class).

// `Function` and kin (the handler's target): each argument is converted once, here, and
// handed over as text. (`new.target` is the proxy for `new Function(...)` itself: the
// original is then the new target, V8's fast path.)
function rtSourceArguments(args) {
  const texts = [];
  let length = 0;
  for (let i = 0; i < args.length; i++) {
    texts[i] = rtString(args[i]);
    length += texts[i].length;
  }
  rtCheckSource(length, RT_PARSE_COST);
  return texts;
}

function rtFunctionApply(target, thisArg, args) {
  return rtReflectApply(target, undefined, rtSourceArguments(args));
}

function rtFunctionConstruct(target, args, newTarget) {
  const texts = rtSourceArguments(args);
  return rtReflectConstruct(target, texts, newTarget === this.proxy ? target : newTarget);
}

// The [[Prototype]] of AsyncFunction and the generator kinds: Function's proxy.
function rtFunctionKindPrototype() {
  return this.parent;
}

function rtEvalTrap(target, thisArg, args) {
  if (typeof args[0] === "string") rtCheckSource(args[0].length, RT_PARSE_COST);
  return rtReflectApply(target, undefined, args);
}

// A real regexp's source (read from its internal slot), or undefined.
function rtRegExpSourceOf(value) {
  if (!rtIsObject(value)) return undefined;
  try {
    return rtReflectApply(rtRegExpSource, value, []);
  } catch {
    return undefined;
  }
}

// The pattern and flags of `RegExp(pattern, flags)` and `compile`, converted once: a
// real regexp keeps its source (V8 reads it from the regexp itself); an object that
// says it is a regexp (`Symbol.match`) gives its `source` and `flags` once; anything
// else becomes its string. The result is what V8 compiles, measured.
function rtPatternArguments(args) {
  let pattern = args.length > 0 ? args[0] : undefined;
  let flags = args.length > 1 ? args[1] : undefined;
  let source = rtRegExpSourceOf(pattern);
  if (source === undefined) {
    if (rtIsObject(pattern) && pattern[Symbol.match]) {
      if (flags === undefined) flags = pattern.flags;
      pattern = pattern.source;
    }
    if (pattern !== undefined) pattern = rtToString(pattern);
    source = pattern === undefined ? "" : pattern;
  }
  if (flags !== undefined) flags = rtToString(flags);
  rtCheckPattern(source, flags);
  return [pattern, flags];
}

// What compiling `source` costs: RT_REGEXP_COST a character, and for each property
// class (`\p{...}`, `\P{...}`) RT_PROPERTY_CLASS_COST more: ICU builds each as a set
// of ranges, and case-insensitive Unicode matching closes it over case (measured in
// the census, tests/hostile/test_root_census.py).
function rtCheckPattern(source, flags) {
  let classes = 0;
  if (source.length > 2) {
    let at = rtReflectApply(rtStringIndexOf, source, ["{"]);
    while (at > 1) {
      const letter = rtReflectApply(rtStringCharCodeAt, source, [at - 1]);
      if ((letter === 112 || letter === 80) && rtReflectApply(rtStringCharCodeAt, source, [at - 2]) === 92) {
        classes++;
      }
      at = rtReflectApply(rtStringIndexOf, source, ["{", at + 1]);
    }
  }
  rtCheckSource(source.length * RT_REGEXP_COST + classes * RT_PROPERTY_CLASS_COST, 1);
}

function rtRegExpApply(target, thisArg, args) {
  return rtReflectApply(target, undefined, rtPatternArguments(args));
}

function rtRegExpConstruct(target, args, newTarget) {
  const given = rtPatternArguments(args);
  return rtReflectConstruct(target, given, newTarget === this.proxy ? target : newTarget);
}

// `compile`.
function rtPatternTrap(target, thisArg, args) {
  return rtReflectApply(target, thisArg, rtPatternArguments(args));
}

// The String methods that make a regexp of an argument (see rtPatternArgument).
function rtStringMatchTrap(target, thisArg, args) {
  const pattern = rtPatternArgument(args.length > 0 ? args[0] : undefined, Symbol.match);
  return rtReflectApply(target, rtThisString(thisArg), [pattern]);
}

function rtStringMatchAllTrap(target, thisArg, args) {
  const pattern = rtPatternArgument(args.length > 0 ? args[0] : undefined, Symbol.matchAll);
  return rtReflectApply(target, rtThisString(thisArg), [pattern]);
}

function rtStringSearchTrap(target, thisArg, args) {
  const pattern = rtPatternArgument(args.length > 0 ? args[0] : undefined, Symbol.search);
  return rtReflectApply(target, rtThisString(thisArg), [pattern]);
}

// ---------------------------------------------------------------------------
// Regexps whose hooks the program changed.

// Whether V8 would match `value` as its internal flags say: a real regexp of the
// original prototype, with no own property but `lastIndex`, whose prototype's hooks
// (rtRegExpHooks) are those the runtime installed.
function rtRegExpPristine(value) {
  if (rtRegExpSourceOf(value) === undefined) return false;
  if (rtObjectGetPrototypeOf(value) !== rtRegExpPrototype) return false;
  if (rtReflectOwnKeys(value).length !== 1) return false;
  const hooks = rtRegExpHooks;
  for (let i = 0; i < hooks.length; i += 3) {
    if (rtRegExpHook(hooks[i], hooks[i + 1]) !== hooks[i + 2]) return false;
  }
  return true;
}

function rtRegExpHook(holder, key) {
  const descriptor = rtObjectGetOwnPropertyDescriptor(holder, key);
  if (descriptor === undefined) return undefined;
  return "value" in descriptor ? descriptor.value : descriptor.get;
}

// Each hook: its holder, its key, and (once installed) what it is.
const RT_REGEXP_HOOK_KEYS = [
  "exec", "flags", "global", "ignoreCase", "multiline", "dotAll", "unicode", "unicodeSets",
  "sticky", "hasIndices", "constructor", Symbol.split, Symbol.match, Symbol.replace,
];
const rtRegExpHooks = [];
