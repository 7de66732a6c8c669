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
  reflectConstruct,
  stringSlice,
  stringCharCodeAt,
  typeError,
  pristine,
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

// ---------------------------------------------------------------------------
// Regexps whose hooks the program changed (`flags`, `global`, `exec`, an own property,
// a Proxy; see rtRegExpPristine in allocations.js), over a huge string: V8 would read
// each hook again, after the check, so the whole method runs here instead, as the
// specification writes it (each hook read once, every match counted as it is found),
// in a loop the limits can stop.

// ToString, as V8 converts (a Symbol throws).
function str(value) {
  return typeof value === "string" ? value : `${value}`;
}

function isObject(value) {
  return (typeof value === "object" && value !== null) || typeof value === "function";
}

function has(text, letter) {
  return reflectApply(stringIndexOf, text, [letter]) >= 0;
}

function slice(text, start, end) {
  return reflectApply(stringSlice, text, end === undefined ? [start] : [start, end]);
}

// ToIntegerOrInfinity.
function integer(value) {
  const n = +value;
  if (n !== n) return 0;
  return n === Infinity || n === -Infinity ? n : n - (n % 1);
}

// AdvanceStringIndex.
function advance(text, index, unicode) {
  if (!unicode || index + 1 >= text.length) return index + 1;
  return reflectApply(stringCodePointAt, text, [index]) > 65535 ? index + 2 : index + 1;
}

// RegExpExec: the object's own `exec`, or the built-in one (a TypeError for no regexp).
function execOf(regexp, text) {
  const exec = regexp.exec;
  if (typeof exec === "function") {
    const result = reflectApply(exec, regexp, [text]);
    if (result !== null && !isObject(result)) {
      throw new typeError("the regexp's exec returned neither an object nor null");
    }
    return result;
  }
  return reflectApply(regExpExec, regexp, [text]);
}

// `RegExp.prototype[Symbol.match]`.
function matchSpec(regexp, text, budget) {
  const flags = str(regexp.flags);
  if (!has(flags, "g")) return execOf(regexp, text);
  const unicode = has(flags, "u") || has(flags, "v");
  regexp.lastIndex = 0;
  const found = [];
  for (;;) {
    const result = execOf(regexp, text);
    if (result === null) return found.length === 0 ? null : found;
    const matched = str(result[0]);
    if (found.length >= budget) heapBreach();
    found[found.length] = matched;
    if (matched === "") regexp.lastIndex = advance(text, length(regexp.lastIndex), unicode);
  }
}

// `RegExp.prototype[Symbol.replace]`; the result's length is checked as it grows.
function replaceSpec(regexp, text, replacement, budget) {
  const flags = str(regexp.flags);
  const global = has(flags, "g");
  let unicode = false;
  if (global) {
    unicode = has(flags, "u") || has(flags, "v");
    regexp.lastIndex = 0;
  }
  const results = [];
  for (;;) {
    const result = execOf(regexp, text);
    if (result === null) break;
    if (results.length >= budget) heapBreach();
    results[results.length] = result;
    if (!global) break;
    if (str(result[0]) === "") regexp.lastIndex = advance(text, length(regexp.lastIndex), unicode);
  }
  let built = "";
  let size = 0;
  let next = 0;
  for (let i = 0; i < results.length; i++) {
    const result = results[i];
    const count = length(result.length);
    const matched = str(result[0]);
    let position = integer(result.index);
    position = position < 0 ? 0 : position > text.length ? text.length : position;
    const captures = [];
    for (let n = 1; n < count; n++) {
      const capture = result[n];
      captures[n - 1] = capture === undefined ? undefined : str(capture);
    }
    let groups = result.groups;
    let replaced;
    if (typeof replacement === "function") {
      const given = [matched];
      for (let n = 0; n < captures.length; n++) given[given.length] = captures[n];
      given[given.length] = position;
      given[given.length] = text;
      if (groups !== undefined) given[given.length] = groups;
      replaced = str(reflectApply(replacement, undefined, given));
    } else {
      if (groups === null) throw new typeError("Cannot convert null to object");
      replaced = substitute(matched, text, position, captures, groups, replacement);
    }
    if (position >= next) {
      size += position - next + replaced.length;
      checkChars(size, 1);
      built += slice(text, next, position) + replaced;
      next = position + matched.length;
    }
  }
  if (next >= text.length) return built;
  checkChars(size + text.length - next, 1);
  return built + slice(text, next);
}

// GetSubstitution: `$$`, `$&`, `$` and a backquote, `$'`, `$n`, `$nn`, `$<name>`.
function substitute(matched, text, position, captures, groups, template) {
  let result = "";
  let i = 0;
  const tail = position + matched.length;
  const m = captures.length;
  for (;;) {
    const dollar = reflectApply(stringIndexOf, template, ["$", i]);
    if (dollar < 0 || dollar + 1 >= template.length) return result + slice(template, i);
    result += slice(template, i, dollar);
    const c = reflectApply(stringCharCodeAt, template, [dollar + 1]);
    i = dollar + 2;
    if (c === 36) result += "$";
    else if (c === 38) result += matched;
    else if (c === 96) result += slice(text, 0, position);
    else if (c === 39) result += tail < text.length ? slice(text, tail) : "";
    else if (c >= 48 && c <= 57) {
      let index = c - 48;
      const d = dollar + 2 < template.length ? reflectApply(stringCharCodeAt, template, [i]) : -1;
      if (d >= 48 && d <= 57 && index * 10 + d - 48 <= m) {
        index = index * 10 + d - 48;
        i++;
      }
      if (index >= 1 && index <= m) {
        if (captures[index - 1] !== undefined) result += captures[index - 1];
      } else result += slice(template, dollar, i);
    } else if (c === 60 && groups !== undefined) {
      const close = reflectApply(stringIndexOf, template, [">", dollar]);
      if (close < 0) result += "$<";
      else {
        const capture = groups[slice(template, dollar + 2, close)];
        if (capture !== undefined) result += str(capture);
        i = close + 1;
      }
    } else {
      result += "$";
      i = dollar + 1;
    }
  }
}

function pushPiece(pieces, value, budget) {
  if (pieces.length >= budget) heapBreach();
  pieces[pieces.length] = value;
  return pieces.length;
}

// `RegExp.prototype[Symbol.split]`. V8 tries the separator at each position of the
// string in turn, keeping about 57 bytes a position outside the heap until the call
// ends (2 GiB for 64 Mi characters): over a long string it runs here, with a global
// copy that finds the next match directly when the splitter's hooks are V8's own.
function splitRegExp(regexp, text, limit, budget) {
  const lim = limit === undefined ? 4294967295 : limit >>> 0;
  if (pristine(regexp)) return splitPristine(regexp, text, lim, budget);
  let made = regexp.constructor;
  if (made === undefined) made = regExp;
  else {
    if (!isObject(made)) throw new typeError("the regexp's constructor is not an object");
    made = made[Symbol.species];
    if (made === undefined || made === null) made = regExp;
  }
  const flags = str(regexp.flags);
  const unicode = has(flags, "u") || has(flags, "v");
  const splitter = reflectConstruct(made, [regexp, has(flags, "y") ? flags : flags + "y"]);
  if (pristine(splitter)) return splitPristine(splitter, text, lim, budget);
  const pieces = [];
  if (lim === 0) return pieces;
  const size = text.length;
  if (size === 0) {
    if (execOf(splitter, text) === null) pieces[0] = text;
    return pieces;
  }
  let p = 0;
  let q = 0;
  while (q < size) {
    splitter.lastIndex = q;
    const z = execOf(splitter, text);
    if (z === null) {
      q = advance(text, q, unicode);
      continue;
    }
    let e = length(splitter.lastIndex);
    if (e > size) e = size;
    if (e === p) {
      q = advance(text, q, unicode);
      continue;
    }
    if (pushPiece(pieces, slice(text, p, q), budget) === lim) return pieces;
    p = e;
    const captures = length(z.length) - 1;
    for (let i = 1; i <= captures; i++) {
      if (pushPiece(pieces, z[i], budget) === lim) return pieces;
    }
    q = p;
  }
  pushPiece(pieces, slice(text, p, size), budget);
  return pieces;
}

// The same split, where the separator's matches are V8's own: the next position the
// specification's sticky splitter would match at is the next match of a global copy.
function splitPristine(regexp, text, lim, budget) {
  const flags = reflectApply(regExpFlags, regexp, []);
  const unicode = has(flags, "u") || has(flags, "v");
  let copied = "g";
  for (let i = 0; i < flags.length; i++) {
    const letter = slice(flags, i, i + 1);
    if (letter !== "g" && letter !== "y") copied += letter;
  }
  const finder = new regExp(reflectApply(regExpSource, regexp, []), copied);
  const pieces = [];
  if (lim === 0) return pieces;
  const size = text.length;
  if (size === 0) {
    if (reflectApply(regExpExec, finder, [text]) === null) pieces[0] = text;
    return pieces;
  }
  let p = 0;
  let q = 0;
  while (q < size) {
    finder.lastIndex = q;
    const z = reflectApply(regExpExec, finder, [text]);
    if (z === null || z.index >= size) break;
    let e = finder.lastIndex;
    if (e > size) e = size;
    if (e === p) {
      q = advance(text, z.index, unicode);
      continue;
    }
    if (pushPiece(pieces, slice(text, p, z.index), budget) === lim) return pieces;
    p = e;
    for (let i = 1; i < z.length; i++) {
      if (pushPiece(pieces, z[i], budget) === lim) return pieces;
    }
    q = p;
  }
  pushPiece(pieces, slice(text, p, size), budget);
  return pieces;
}

return {
  __proto__: null,
  split,
  match,
  replace,
  replaceAll,
  matchSpec,
  replaceSpec,
  splitRegExp,
};
