// The size checks only a huge string reaches (see allocations.js), compiled on first use.
//
// This is the body of `function (rt)`, compiled with the `Function` constructor the
// first time a check needs it (a `split`, `match` or `replace` over a string longer than
// the element budget): every other cell pays nothing for it. The program may have
// replaced any global by then, so this code names none: everything comes in `rt`,
// captured before the program ran.
"use strict";

const {
  reflectApply,
  regExp,
  regExpPrototype,
  regExpExec,
  regExpFlags,
  regExpSource,
  stringIndexOf,
  stringCodePointAt,
  string,
  length,
  heapBreach,
  checkChars,
} = rt;

// A real regexp (the `source` getter throws for anything else but the prototype).
function isRegExp(value) {
  try {
    return typeof reflectApply(regExpSource, value, []) === "string" && value !== regExpPrototype;
  } catch {
    return false;
  }
}

function isGlobalRegExp(value) {
  try {
    return reflectApply(stringIndexOf, reflectApply(regExpFlags, value, []), ["g"]) >= 0;
  } catch {
    return false;
  }
}

// A global regexp's matches over a huge string, counted one `exec` at a time (each a
// call of its own, which the heap limit can stop): at most `budget`, or the cell fails.
function countMatches(regexp, text, budget) {
  const flags = reflectApply(regExpFlags, regexp, []);
  const unicode =
    reflectApply(stringIndexOf, flags, ["u"]) >= 0 ||
    reflectApply(stringIndexOf, flags, ["v"]) >= 0;
  regexp.lastIndex = 0;
  let count = 0;
  for (;;) {
    const match = reflectApply(regExpExec, regexp, [text]);
    if (match === null) break;
    if (++count > budget) heapBreach();
    if (string(match[0]) === "") {
      const index = length(regexp.lastIndex);
      const wide = unicode && reflectApply(stringCodePointAt, text, [index]) > 65535;
      regexp.lastIndex = index + (wide ? 2 : 1);
    }
  }
  regexp.lastIndex = 0;
  return count;
}

// `count` matches of `matchLength` characters replaced by `replacement` (a string with
// `$` patterns, or a function, whose results are the heap limit's business).
function checkReplacement(text, count, matchLength, replacement) {
  if (typeof replacement !== "string") return;
  // "$" and a backquote, or "$'", insert up to the whole string; "$&" and groups, a match.
  const whole =
    reflectApply(stringIndexOf, replacement, ["$\x60"]) >= 0 ||
    reflectApply(stringIndexOf, replacement, ["$'"]) >= 0;
  const inserted = whole ? text.length : matchLength;
  const each = replacement.length + inserted * (replacement.length >> 1);
  checkChars(text.length + count * each, 1);
}

// `split` of a string longer than `budget`: V8 stops at `limit` pieces, so it is split
// with a limit one past the budget; reaching it means the whole split would go over.
// V8 finds every match of a regexp separator before it applies the limit: they are
// counted first, on a global copy of the separator.
function split(target, thisArg, args, budget) {
  const separator = args[0];
  if (typeof separator !== "string" && isRegExp(separator)) {
    const flags = reflectApply(regExpFlags, separator, []);
    const source = reflectApply(regExpSource, separator, []);
    const global = new regExp(source, isGlobalRegExp(separator) ? flags : flags + "g");
    countMatches(global, thisArg, budget);
  }
  const wanted = args.length > 1 && args[1] !== undefined ? args[1] >>> 0 : 4294967295;
  const pieces = reflectApply(target, thisArg, [args[0], wanted > budget ? budget + 1 : wanted]);
  if (pieces.length > budget) heapBreach();
  return pieces;
}

// `RegExp.prototype[Symbol.match]` on a string longer than `budget`.
function match(regexp, text, budget) {
  if (isGlobalRegExp(regexp)) countMatches(regexp, text, budget);
}

// `RegExp.prototype[Symbol.replace]` on a string longer than `budget`: the matches are
// counted first, and the result's length bounded from the replacement's.
function replace(regexp, text, budget, replacement) {
  if (isGlobalRegExp(regexp)) {
    checkReplacement(text, countMatches(regexp, text, budget), 1, replacement);
  }
}

// `replaceAll` of a string pattern in a string longer than `budget`.
function replaceAll(text, pattern, budget, replacement) {
  const step = pattern.length > 0 ? pattern.length : 1;
  let count = 0;
  let at = reflectApply(stringIndexOf, text, [pattern, 0]);
  while (at >= 0) {
    if (++count > budget) heapBreach();
    at = reflectApply(stringIndexOf, text, [pattern, at + step]);
  }
  checkReplacement(text, count, pattern.length, replacement);
}

return { __proto__: null, split, match, replace, replaceAll };
