// The cell's state: whether it started and finished, its pending tool calls and timers,
// its stored values and limits; and what every helper needs: the helper's own error
// (rtHelperError), the cell's completion (rtFinish) and the check that a value is JSON
// data (rtJsonProblem).

let rtStarted = false;
let rtFinished = false; // completion (or exit) sent: every later effect is dropped
let rtToolSeq = 0;
let rtTimerSeq = 0;
const rtPendingTools = new rtMap(); // id -> {resolve, reject}
const rtTimers = new rtMap(); // id -> callback
let rtStored = new rtMap(); // key -> JSON text (snapshot + this cell's writes)
const rtWrites = new rtMap(); // key -> JSON text
let rtStoredLimits = { entries: 256, chars: 8388608 };
let rtMaxJsonDepth = 128;
let rtAllowRemoteImages = false; // RuntimeConfig.allow_remote_image_urls

// A helper's own failure: the plain string `message`, thrown (or rejected with) as is,
// as in the reference; an uncaught one reads as exactly that text. (`ctor` names the
// error the reference's prose would call it, a TypeError for a wrong argument type.)
function rtHelperError(message, ctor) {
  return message;
}

const rtFinish = (function rtFinish(errorText) {
  if (rtFinished) return;
  const writes = { __proto__: null };
  rtReflectApply(rtMapForEach, rtWrites, [
    (json, key) => {
      // Defined, not assigned: the key `__proto__` must stay an own property.
      rtObjectDefineProperty(writes, key, {
        __proto__: null,
        value: json,
        writable: true,
        configurable: true,
        enumerable: true,
      });
    },
  ]);
  // `writes` values are JSON texts: the host parses them (and checks them).
  const message = { __proto__: null, t: "done", error: errorText, writes };
  rtEnqueue(rtReflectApply(rtJSONStringify, undefined, [message]), true);
  // Finished only once the message is queued: at the edge of the stack any call above
  // can throw, and the program (or its completion) then tries again. The flush itself
  // may fail there too; the host's probe sends the queue.
  rtFinished = true;
  try {
    rtFlush();
  } catch {
    // Sent by the next flush.
  }
});

// What is wrong with `json` (the text JSON.stringify made of a program's value), or
// null: nesting deeper than `maxDepth` (when it is above 0), or a number that is not
// finite. JSON.stringify writes no such number itself, but `JSON.rawJSON("1e400")` puts
// any literal in its text, and the host reads `1e400` as a float infinity, which is not
// JSON data at all (it would fail every later use of it).
const RT_NUMBER_SUSPECT = /[0-9][eE]|[0-9.]{16}/;
function rtJsonProblem(json, maxDepth) {
  if (maxDepth <= 0 && rtReflectApply(rtRegExpExec, RT_NUMBER_SUSPECT, [json]) === null) {
    return null;
  }
  const n = json.length;
  let depth = 0;
  for (let i = 0; i < n; i++) {
    const c = rtCharCodeAtOf(json, i);
    if (c === 34) {
      // a string: skip to its closing quote
      for (i += 1; i < n; i++) {
        const d = rtCharCodeAtOf(json, i);
        if (d === 92) i += 1;
        else if (d === 34) break;
      }
    } else if (c === 91 || c === 123) {
      depth += 1;
      if (maxDepth > 0 && depth > maxDepth) {
        return "it nests deeper than the limit of " + maxDepth + " (RuntimeConfig.max_json_depth)";
      }
    } else if (c === 93 || c === 125) {
      depth -= 1;
    } else if (c === 45 || (c >= 48 && c <= 57)) {
      let j = i + 1;
      let exponent = false;
      for (; j < n; j++) {
        const d = rtCharCodeAtOf(json, j);
        if (d === 101 || d === 69) exponent = true;
        else if (!((d >= 48 && d <= 57) || d === 46 || d === 43 || d === 45)) break;
      }
      if (exponent || j - i > 15) {
        const token = rtReflectApply(rtStringSlice, json, [i, j]);
        if (!rtNumberIsFinite(rtNumber(token))) {
          const shown = token.length > 40 ? rtReflectApply(rtStringSlice, token, [0, 40]) + "..." : token;
          return "it holds the number " + shown + ", which is out of range";
        }
      }
      i = j - 1;
    }
  }
  return null;
}

function rtNever() {
  return new rtPromise(() => {});
}
