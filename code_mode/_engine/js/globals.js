// The in-isolate half of the bridge: installs the globals a program sees and speaks
// the JSON protocol with the host.
//
// This fragment is pasted, after output.js, inside one strict-mode function that runs
// before any user code (see _engine/_prelude.py). Everything it needs from the
// language is captured into local constants first, so a program that later replaces
// `JSON.stringify`, `Array.prototype.push` or `Promise.prototype.then` cannot break
// the runtime; it can only break itself.
//
// Host -> isolate: the host calls `rtRecv` with the JSON text of a batch of commands as
// its receiver (`this`), through a function handle it took from the prelude's result
// (mini-racer's `mr_call_function`). The function is reachable from no global: a
// program cannot see, call or replace the host's entry point.
// Isolate -> host: `rtSend(message)` queues a JSON message; `rtFlush()` writes the
// queued batch as UTF-16 into a private ArrayBuffer whose memory the host reads from
// inside the native doorbell call (`rtBellMore` for a partial chunk, `rtBellEnd` for
// the last one). The program never sees the buffer or the doorbells.
//
// Compiled ahead: V8 compiles a function on its first call (lazily), except a function
// expression in parentheses, which it compiles with the script around it. The prelude
// is evaluated in a warm isolate before a cell takes it, so the functions on every
// cell's start path (from `rtRecv` through `rtStart`, the program's compilation, `text`
// and `rtFinish` to the doorbell) are written `const f = (function f() {...});`: they are
// ready when the cell starts, while the rest of the runtime (tool calls, timers, store,
// images, errors) is only pre-parsed and costs a cell that never uses it nothing. A
// function declared that way exists from its line on (no hoisting): it is only ever
// called once the prelude has run, from the host's calls. tests/test_native_probe.py
// checks that a short cell compiles none of the runtime's functions itself.

const rtJSONStringify = JSON.stringify;
const rtJSONParse = JSON.parse;
const rtString = String;
const rtNumber = Number;
const rtMathMin = Math.min;
const rtMathTrunc = Math.trunc;
const rtNumberIsFinite = Number.isFinite;
const rtReflectApply = Reflect.apply;
const rtObjectDefineProperty = Object.defineProperty;
const rtObjectFreeze = Object.freeze;
const rtObjectHasOwn = Object.hasOwn;
const rtObjectKeys = Object.keys;
const rtObjectPrototype = Object.prototype;
const rtError = Error;
const rtTypeError = TypeError;
const rtSyntaxError = SyntaxError;
const rtPromise = Promise;
const rtPromiseThen = Promise.prototype.then;
const rtPromiseWithResolvers = Promise.withResolvers;
const rtProxy = Proxy;
const rtReflectGet = Reflect.get;
const rtPromiseReject = Promise.reject;
const rtMapForEach = Map.prototype.forEach;
const rtStringStartsWith = String.prototype.startsWith;
const rtMap = Map;
const rtMapGet = Map.prototype.get;
const rtMapSet = Map.prototype.set;
const rtMapHas = Map.prototype.has;
const rtMapDelete = Map.prototype.delete;
const rtMapSize = Object.getOwnPropertyDescriptor(Map.prototype, "size").get;
const rtArrayPush = Array.prototype.push;
const rtArrayJoin = Array.prototype.join;
const rtStringCharCodeAt = String.prototype.charCodeAt;
const rtStringSlice = String.prototype.slice;
const rtRegExpExec = RegExp.prototype.exec;
const rtErrorToString = Error.prototype.toString;
const rtAsyncFunction = async function () {}.constructor;
const rtGlobal = globalThis;
const rtUint16Array = Uint16Array;
const rtInt32Array = Int32Array;
const rtArrayBuffer = ArrayBuffer;
const rtDateNow = Date.now;
const rtObjectSetPrototypeOf = Object.setPrototypeOf;
// `charCodeAt` as a plain function of (string, index): one call per character, with no
// argument array (rtJsonProblem scans whole stored values with it).
const rtCharCodeAtOf = rtReflectApply(Function.prototype.bind, Function.prototype.call, [
  String.prototype.charCodeAt,
]);
// What `then` on the program's promise uses as its species (see rtStart).
const RT_SPECIES = rtObjectFreeze({ __proto__: null, [Symbol.species]: Promise });

// ---------------------------------------------------------------------------
// The outgoing channel.

const RT_STARTED = '{"t":"started"}';
const RT_CHUNK = 32768; // UTF-16 code units per doorbell
const rtBuffer = new rtArrayBuffer(16 + 2 * RT_CHUNK);
const rtHeader = new rtInt32Array(rtBuffer, 0, 4);
const rtUnits = new rtUint16Array(rtBuffer, 16);
// rtHeader[2] is 1 while the queue may hold a message other than `started`, i.e.
// something a drain would hand over. The host reads it when an evaluation of ours
// ends (the JavaScript is stopped then): a terminated program whose flag is 0 needs
// no drain. It is set before such a message is queued and cleared only after a queue
// was sent or dropped, so it may say 1 for nothing, never 0 for something.
const RT_QUEUED = 2;
// rtHeader[3] is 1 when the batch being written holds only output (and `started`):
// the host may keep it and hand it over with the next batch, so that a short program
// crosses back once. It hands it over at the latest when this evaluation ends, and
// reads it while the program still runs when it needs it (a yield window's end):
// output never waits for the program to reach a point where it could flush again.
const RT_DEFER = 3;
// Queued characters that force a flush: a batch is one message or at most this much,
// so batching never makes the host see a "message" bigger than any single one.
const RT_FLUSH_CHARS = RT_CHUNK;

// The queue has no prototype: accessors a program defines on `Array.prototype`
// (say, a setter/getter for "0") must not see or forge queued messages.
const rtNewQueue = (function rtNewQueue() {
  const queue = [];
  rtObjectSetPrototypeOf(queue, null);
  return queue;
});
let rtQueue = rtNewQueue();
let rtQueueChars = 0;
let rtQueueUrgent = false; // the queue holds a message other than output and `started`

// Header: [0] = code units in this chunk, [1] = chunk index within the batch (0 starts
// a new batch, so a batch cut short by termination is discarded by the host), [2] =
// RT_QUEUED (see above).
const rtWrite = (function rtWrite(s) {
  const length = s.length;
  let offset = 0;
  let index = 0;
  for (;;) {
    const n = rtMathMin(RT_CHUNK, length - offset);
    for (let i = 0; i < n; i++) {
      rtUnits[i] = rtReflectApply(rtStringCharCodeAt, s, [offset + i]);
    }
    rtHeader[0] = n;
    rtHeader[1] = index;
    index += 1;
    offset += n;
    if (offset >= length) {
      rtBellEnd();
      return;
    }
    rtBellMore();
  }
});

const rtFlush = (function rtFlush() {
  if (rtQueue.length === 0) return;
  // The queue is cleared only once the batch is out: if termination interrupts the
  // write, a later flush (the host's drain) sends the whole batch again. Nothing
  // between the write and the clearing may be a call (an interrupt point), or a
  // termination landing there would send the batch twice.
  const fresh = rtNewQueue();
  rtHeader[RT_DEFER] = rtQueueUrgent ? 0 : 1;
  rtWrite("[" + rtReflectApply(rtArrayJoin, rtQueue, [","]) + "]");
  rtQueue = fresh;
  rtQueueChars = 0;
  rtQueueUrgent = false;
  rtHeader[RT_QUEUED] = 0;
});

// Queues one message (already JSON text); a flush sends the queue as one batch.
// `urgent`: the host must act on it now (anything but output and `started`).
const rtEnqueue = (function rtEnqueue(json, urgent) {
  if (rtQueue.length !== 0 && rtQueueChars + json.length > RT_FLUSH_CHARS) {
    try {
      rtFlush();
    } catch {
      // Out of stack: the queue is kept (and sent with this message), as before.
    }
  }
  if (json !== RT_STARTED) rtHeader[RT_QUEUED] = 1;
  if (urgent) rtQueueUrgent = true;
  rtReflectApply(rtArrayPush, rtQueue, [json]);
  rtQueueChars += json.length;
});

// Sends one message at once. Output too: every item reaches the host's native layer as
// the program makes it (one native call each), so a program that then spins or dies
// (memory limit) has handed over all it printed, and a yield while it spins carries
// that output. (A batch of output only may wait there for the next one: see RT_DEFER.)
const rtSendRaw = (function rtSendRaw(json, urgent) {
  rtEnqueue(json, urgent);
  // Queued: from here on nothing may throw into the program (at the edge of the stack
  // any call can), or it would see a failed helper whose message still goes out.
  try {
    rtFlush();
  } catch {
    // Sent by the next flush (at the latest, the host's probe).
  }
});

// `message` is a fresh object of the runtime's; without a prototype, a program's
// `Object.prototype.toJSON` cannot change how it serializes.
function rtSend(message) {
  rtObjectSetPrototypeOf(message, null);
  const urgent = message.t !== "text" && message.t !== "image";
  rtSendRaw(rtReflectApply(rtJSONStringify, undefined, [message]), urgent);
}

// ---------------------------------------------------------------------------
// Cell state.

let rtStarted = false;
let rtFinished = false; // completion (or exit) sent: every later effect is dropped
let rtToolSeq = 0;
let rtTimerSeq = 0;
const rtPendingTools = new rtMap(); // id -> {resolve, reject}
const rtTimers = new rtMap(); // id -> callback
let rtStored = new rtMap(); // key -> JSON text (snapshot + this cell's writes)
const rtWrites = new rtMap(); // key -> JSON text
let rtStoredLimits = { entries: 256, bytes: 8388608 };
let rtMaxJsonDepth = 128;
let rtAllowRemoteImages = true;

// A helper's own failure: an Error whose `stack` is its message alone, so an uncaught
// one reads as exactly that text (no internal frames).
function rtHelperError(message, ctor) {
  const error = new (ctor || rtError)(message);
  rtObjectDefineProperty(error, "stack", {
    __proto__: null, // descriptors ignore a program's `Object.prototype.get` etc.
    value: message,
    writable: true,
    configurable: true,
    enumerable: false,
  });
  return error;
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

// ---------------------------------------------------------------------------
// Stack traces: frames of the program read `exec_main.mjs:<line>:<column>` with the
// user's own positions; frames of this runtime are hidden.

const RT_FILE = "exec_main.mjs";
// The program is the body of an async function built by the AsyncFunction constructor,
// which parses the body on its own: a program cannot close the function early and run
// code outside it (sloppy, at global scope). V8 places the body after two lines of its
// own (`(async function anonymous(` and `) {`); the body starts with RT_PREFIX.
const RT_PREFIX = '"use strict";';
const RT_LINE_OFFSET = 2;

function rtFormatFrame(frame) {
  if (frame.getScriptNameOrSourceURL() !== RT_FILE) return null;
  const line = frame.getLineNumber() - RT_LINE_OFFSET;
  let column = frame.getColumnNumber();
  if (line === 1) column -= RT_PREFIX.length;
  const location = RT_FILE + ":" + line + ":" + column;
  let name = frame.getFunctionName();
  if (name === "eval" && frame.isEval()) name = null;
  const prefix = (frame.isAsync() ? "async " : "") + (frame.isConstructor() ? "new " : "");
  if (!name) return prefix + location;
  if (!frame.isToplevel() && !frame.isConstructor()) {
    let typeName = null;
    try {
      typeName = frame.getTypeName();
    } catch {
      typeName = null;
    }
    if (typeName && typeName !== "Object" && !rtReflectApply(rtStringStartsWith, name, [typeName + "."])) {
      name = typeName + "." + name;
    }
  }
  return prefix + name + " (" + location + ")";
}

function rtPrepareStackTrace(error, frames) {
  let header;
  try {
    header = rtReflectApply(rtErrorToString, error, []);
  } catch {
    header = "Error";
  }
  const lines = [header];
  for (let i = 0; i < frames.length; i++) {
    let text = null;
    try {
      text = rtFormatFrame(frames[i]);
    } catch {
      text = null;
    }
    if (text !== null) rtReflectApply(rtArrayPush, lines, ["    at " + text]);
  }
  return rtReflectApply(rtArrayJoin, lines, ["\n"]);
}

// ---------------------------------------------------------------------------
// Globals.

const rtDefineGlobal = (function rtDefineGlobal(name, value) {
  rtObjectDefineProperty(rtGlobal, name, {
    value,
    writable: true,
    configurable: true,
    enumerable: false,
  });
});

const rtText = (function rtText(value) {
  if (rtFinished) return undefined;
  const item = cmTextItem(value);
  rtSendRaw(
    rtReflectApply(rtJSONStringify, undefined, [{ __proto__: null, t: "text", text: item.text }]),
    false,
  );
  return undefined;
});

function rtImage() {
  if (rtFinished) return undefined;
  const item = cmImageItem(arguments, rtAllowRemoteImages);
  rtSend({ t: "image", image_url: item.image_url, detail: item.detail });
  return undefined;
}

function rtSendItems(items) {
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    if (item.type === "text") rtSend({ t: "text", text: item.text });
    else rtSend({ t: "image", image_url: item.image_url, detail: item.detail });
  }
}

function rtForwardOutput() {
  if (rtFinished) return undefined;
  rtSendItems(cmForwardOutputItems(arguments, rtAllowRemoteImages));
  return undefined;
}

const rtConsoleMethod = (function rtConsoleMethod() {
  return function () {
    if (rtFinished) return undefined;
    rtSend({ t: "text", text: cmConsoleText(arguments) });
    return undefined;
  };
});

function rtNotify(value) {
  if (rtFinished) return undefined;
  const text = cmNotifyText(value);
  rtSend({ t: "notify", text });
  return undefined;
}

function rtYieldControl() {
  if (rtFinished) return undefined;
  rtSend({ t: "yield" });
  return undefined;
}

function rtExit() {
  rtFinish(null);
  return undefined;
}

function rtStoreKey(key, what) {
  try {
    return rtString(key);
  } catch {
    throw rtHelperError(what + " key must be a string", rtTypeError);
  }
}

function rtStore(key, value) {
  const k = rtStoreKey(key, "store");
  if (rtFinished) return undefined;
  const json = rtReflectApply(rtJSONStringify, undefined, [value]);
  if (json === undefined) {
    throw rtHelperError(
      "Unable to store " +
        rtReflectApply(rtJSONStringify, undefined, [k]) +
        ". Only plain serializable objects can be stored.",
    );
  }
  const problem = rtJsonProblem(json, rtMaxJsonDepth);
  if (problem !== null) {
    throw rtHelperError(
      "Unable to store " + rtReflectApply(rtJSONStringify, undefined, [k]) + ": " + problem,
    );
  }
  let entries = rtReflectApply(rtMapSize, rtStored, []);
  let bytes = 0;
  rtReflectApply(rtMapForEach, rtStored, [
    (text, storedKey) => {
      if (storedKey !== k) bytes += storedKey.length + text.length;
    },
  ]);
  if (!rtReflectApply(rtMapHas, rtStored, [k])) entries += 1;
  bytes += k.length + json.length;
  if (entries > rtStoredLimits.entries || bytes > rtStoredLimits.bytes) {
    rtFinish(
      "code mode session storage exceeds its limit of " +
        rtStoredLimits.entries +
        " entries or " +
        rtStoredLimits.bytes +
        " serialized bytes",
    );
    return undefined;
  }
  rtReflectApply(rtMapSet, rtStored, [k, json]);
  rtReflectApply(rtMapSet, rtWrites, [k, json]);
  return undefined;
}

function rtLoad(key) {
  const k = rtStoreKey(key, "load");
  if (!rtReflectApply(rtMapHas, rtStored, [k])) return undefined;
  return rtReflectApply(rtJSONParse, undefined, [rtReflectApply(rtMapGet, rtStored, [k])]);
}

function rtSetTimeout(callback, delay) {
  if (typeof callback !== "function") {
    throw rtHelperError("setTimeout expects a function callback", rtTypeError);
  }
  let ms = rtNumber(delay);
  if (!rtNumberIsFinite(ms) || ms <= 0) ms = 0;
  else ms = rtMathTrunc(ms);
  if (rtFinished) return undefined;
  rtTimerSeq += 1;
  const id = rtTimerSeq;
  rtReflectApply(rtMapSet, rtTimers, [id, callback]);
  rtSend({ t: "timer", id, ms });
  return id;
}

function rtClearTimeout(id) {
  if (id === undefined || id === null) return undefined;
  let n;
  try {
    n = rtNumber(id);
  } catch {
    throw rtHelperError("clearTimeout expects a numeric timeout id", rtTypeError);
  }
  if (!rtNumberIsFinite(n) || n <= 0) return undefined;
  if (rtReflectApply(rtMapDelete, rtTimers, [n]) && !rtFinished) {
    rtSend({ t: "clear", id: n });
  }
  return undefined;
}

const rtMakeTool = (function rtMakeTool(ident, kind) {
  const tool = function (input) {
    if (rtFinished) return rtNever();
    let json;
    if (input !== undefined) {
      // Throws synchronously (BigInt, cycles, throwing toJSON), as documented.
      json = rtReflectApply(rtJSONStringify, undefined, [input]);
    }
    if (kind === "function") {
      if (json === undefined) json = "{}";
      else if (json[0] !== "{") {
        return rtReflectApply(rtPromiseReject, rtPromise, [
          rtHelperError("tool `" + ident + "` expects a JSON object for arguments"),
        ]);
      }
    } else if (json === undefined || json[0] !== '"') {
      return rtReflectApply(rtPromiseReject, rtPromise, [
        rtHelperError("tool `" + ident + "` expects a string input"),
      ]);
    }
    const problem = rtJsonProblem(json, 0); // its depth is the host's to check
    if (problem !== null) {
      return rtReflectApply(rtPromiseReject, rtPromise, [
        rtHelperError("tool `" + ident + "` input is not JSON data: " + problem),
      ]);
    }
    rtToolSeq += 1;
    const id = "tool-" + rtToolSeq;
    const { promise, resolve, reject } = rtReflectApply(rtPromiseWithResolvers, rtPromise, []);
    rtReflectApply(rtMapSet, rtPendingTools, [id, { resolve, reject }]);
    rtSendRaw(
      '{"t":"tool","id":"' +
        id +
        '","name":' +
        rtReflectApply(rtJSONStringify, undefined, [ident]) +
        ',"input":' +
        json +
        "}",
      true,
    );
    return promise;
  };
  rtObjectDefineProperty(tool, "name", { value: ident });
  return tool;
});

const RT_NOT_TOOLS = { then: true, toJSON: true, constructor: true, __proto__: null };

const rtMakeTools = (function rtMakeTools(definitions) {
  const target = {};
  for (let i = 0; i < definitions.length; i++) {
    const d = definitions[i];
    // Defined, not assigned: a tool named `__proto__` must be an own property.
    rtObjectDefineProperty(target, d.ident, {
      value: rtMakeTool(d.ident, d.kind),
      writable: true,
      configurable: true,
      enumerable: true,
    });
  }
  return new rtProxy(target, {
    get(obj, key, receiver) {
      if (
        typeof key !== "string" ||
        rtObjectHasOwn(obj, key) ||
        key in rtObjectPrototype ||
        RT_NOT_TOOLS[key] === true
      ) {
        return rtReflectApply(rtReflectGet, undefined, [obj, key, receiver]);
      }
      return function () {
        return rtReflectApply(rtPromiseReject, rtPromise, [
          rtHelperError("tool `" + key + "` is not enabled in exec"),
        ]);
      };
    },
  });
});

// ---------------------------------------------------------------------------
// Starting the program.

// A static import (or `export ... from`) at the start of a line or after a `;`.
const rtImportPattern = /(?:^|;)\s*(?:import\s*(?:[\w$*{}\s,]+?\s*from\s*)?|export\s+[\w$*{}\s,]*?\s*from\s*)(['"])([^'"]*)\1/m;

const rtBody = (function rtBody(source) {
  return RT_PREFIX + source + "\n//# sourceURL=" + RT_FILE;
});

// The program compiled, or a string: why it cannot run; `null` for a syntax error,
// which rtThrowSyntaxError reports.
const rtCompile = (function rtCompile(source) {
  try {
    return new rtAsyncFunction(rtBody(source));
  } catch (error) {
    if (error instanceof rtSyntaxError) {
      const match = rtReflectApply(rtRegExpExec, rtImportPattern, [source]);
      if (match !== null) return "Unsupported import in exec: " + match[2];
      return null;
    }
    return cmErrorText(error);
  }
});

// A program that does not parse. V8 tells where the error is (line, column) only in
// its report of an exception that leaves the host's call uncaught, not on the error
// object, so the source is parsed once more by the same constructor, outside any
// `try`, at the end of the host's call: parsing runs none of it, and nothing of the
// runtime is left to do. `started` goes first; the host makes the cell's result from
// the report (_engine/_syntax_error.py). It is the very body that failed, so the
// message is the same; V8's lines are the program's plus RT_LINE_OFFSET, and its
// first line starts with RT_PREFIX.
let rtSyntaxErrorSource = null;

function rtThrowSyntaxError() {
  const source = rtSyntaxErrorSource;
  rtSyntaxErrorSource = null;
  rtFlush();
  new rtAsyncFunction(rtBody(source));
  rtFinish("SyntaxError: the program does not parse"); // not reached: it fails again
}

const rtStart = (function rtStart(command) {
  if (rtStarted) return;
  rtStarted = true;
  rtAllowRemoteImages = command.allow_remote_images !== false;
  rtStoredLimits = { entries: command.max_stored_entries, bytes: command.max_stored_bytes };
  rtMaxJsonDepth = command.max_json_depth;
  rtBufferLimit = command.memory_limit_bytes; // see buffers.js
  // Stored values arrive as the JSON texts their `store` wrote: nothing is parsed
  // (or copied again) until the program loads a key.
  const stored = command.stored;
  const keys = rtObjectKeys(stored);
  for (let i = 0; i < keys.length; i++) {
    const text = stored[keys[i]];
    if (typeof text === "string") rtReflectApply(rtMapSet, rtStored, [keys[i], text]);
  }

  const allTools = [];
  for (let i = 0; i < command.tools.length; i++) {
    const d = command.tools[i];
    allTools[i] = { name: d.ident, description: d.description };
  }
  // The other globals were defined with the prelude (see rtDefineGlobals); these two
  // replace its placeholders, keeping their place in the global object's key order.
  rtDefineGlobal("tools", rtMakeTools(command.tools));
  rtDefineGlobal("ALL_TOOLS", allTools);

  // Queued, not flushed: it travels with the next batch. The host counts a yield
  // window from when it posted this start command to the idle isolate, so a program
  // that computes for a long time first still yields on time.
  rtEnqueue(RT_STARTED, false);
  const compiled = rtCompile(command.source);
  if (compiled === null) {
    rtSyntaxErrorSource = command.source;
    return;
  }
  if (typeof compiled === "string") {
    rtFinish(compiled);
    return;
  }
  let promise;
  try {
    promise = compiled();
  } catch (error) {
    rtFinish(cmErrorText(error));
    return;
  }
  // `then` looks up `promise.constructor[Symbol.species]`, which the program may have
  // replaced by now (on `Promise.prototype` or `Promise`): pin it to the real Promise.
  rtObjectDefineProperty(promise, "constructor", { __proto__: null, value: RT_SPECIES });
  rtReflectApply(rtPromiseThen, promise, [rtFinishOk, rtFinishError]);
});

// The program's promise settled (named and compiled ahead, unlike an arrow in rtStart).
const rtFinishOk = (function rtFinishOk() {
  rtFinish(null);
});
const rtFinishError = (function rtFinishError(error) {
  rtFinish(cmErrorText(error));
});

// ---------------------------------------------------------------------------
// Commands from the host.

function rtSettleTool(command) {
  const pending = rtReflectApply(rtMapGet, rtPendingTools, [command.id]);
  if (pending === undefined) return;
  rtReflectApply(rtMapDelete, rtPendingTools, [command.id]);
  if (rtFinished) return;
  if (command.ok) pending.resolve(command.value);
  else pending.reject(rtHelperError(rtString(command.message)));
}

function rtFire(id) {
  const callback = rtReflectApply(rtMapGet, rtTimers, [id]);
  if (callback === undefined) return;
  rtReflectApply(rtMapDelete, rtTimers, [id]);
  if (rtFinished) return;
  try {
    rtReflectApply(callback, undefined, []);
  } catch (error) {
    rtFinish(cmErrorText(error));
  }
}

// The host's last call on an interrupted isolate (terminate, or a failure): it only
// wants the output the program had queued (with `started`, which the host's checks
// expect first). Nothing else can matter any more, and an empty drain costs nothing.
function rtDrain() {
  const kept = rtNewQueue();
  let output = false;
  for (let i = 0; i < rtQueue.length; i++) {
    const json = rtQueue[i];
    const head = rtReflectApply(rtStringSlice, json, [0, 12]);
    if (head === '{"t":"text",' || head === '{"t":"image"') output = true;
    else if (json !== RT_STARTED) continue;
    rtReflectApply(rtArrayPush, kept, [json]);
  }
  rtQueueUrgent = false;
  if (output) {
    rtQueue = kept;
    rtFlush();
  } else {
    rtQueue = rtNewQueue();
    rtQueueChars = 0;
    rtHeader[RT_QUEUED] = 0;
  }
}

// `this` is the batch's JSON text (a primitive string: the prelude is strict code).
const rtRecv = (function rtRecv() {
  const json = this;
  const commands = rtReflectApply(rtJSONParse, undefined, [json]);
  for (let i = 0; i < commands.length; i++) {
    const command = commands[i];
    switch (command.t) {
      case "start":
        rtStart(command);
        break;
      case "result":
        rtSettleTool(command);
        break;
      case "fire":
        rtFire(command.id);
        break;
      case "drain":
        rtDrain();
        break;
      default:
        break;
    }
  }
  // A batch of commands is always followed by a probe (`[]`), which the isolate runs
  // after this evaluation's microtasks: it flushes what these commands and their
  // microtasks queued, in one batch instead of two.
  if (commands.length === 0) rtFlush();
  if (rtSyntaxErrorSource !== null) rtThrowSyntaxError();
  return undefined;
});

for (const name of ["console", "Atomics", "SharedArrayBuffer", "WebAssembly"]) {
  delete rtGlobal[name];
}

// The globals a program sees, except what depends on its start command (`tools`,
// `ALL_TOOLS`: placeholders until rtStart defines them). Defined here, with the
// prelude, which a warm isolate has evaluated before a cell takes it: a cell's start
// then defines two globals instead of thirteen. They are what rtStart would define
// (no value depends on the cell), and no program runs before its start command.
const rtDefineGlobals = (function rtDefineGlobals() {
  const console = {
    log: rtConsoleMethod(),
    info: rtConsoleMethod(),
    warn: rtConsoleMethod(),
    error: rtConsoleMethod(),
    debug: rtConsoleMethod(),
  };
  rtDefineGlobal("tools", undefined);
  rtDefineGlobal("ALL_TOOLS", undefined);
  rtDefineGlobal("clearTimeout", rtClearTimeout);
  rtDefineGlobal("setTimeout", rtSetTimeout);
  rtDefineGlobal("text", rtText);
  rtDefineGlobal("image", rtImage);
  rtDefineGlobal("forward_output", rtForwardOutput);
  rtDefineGlobal("console", console);
  rtDefineGlobal("store", rtStore);
  rtDefineGlobal("load", rtLoad);
  rtDefineGlobal("notify", rtNotify);
  rtDefineGlobal("yield_control", rtYieldControl);
  rtDefineGlobal("exit", rtExit);
});
rtDefineGlobals();
rtObjectDefineProperty(Error, "prepareStackTrace", {
  value: rtPrepareStackTrace,
  writable: true,
  configurable: true,
  enumerable: false,
});
// `rtRecv` goes to the host on the prelude's result (see _prelude.py), to no global.
