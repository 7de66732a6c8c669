// Starting the program: the start command sets the cell's limits, stored values and
// tools, then compiles the program as the body of an async function and runs it; its
// promise settling finishes the cell.
//
// Module syntax: the host has rewritten what a module accepts and a function body
// does not (_engine/_module_source.py). A static import arrives as `import_error`:
// the rest is compiled (a syntax error wins) and the cell then fails with it before
// anything runs. `import(...)` and `import.meta` arrive as calls of, and reads from,
// the two parameters below (`hidden`: the program uses them).

const rtBody = (function rtBody(source) {
  return RT_PREFIX + source + "\n//# sourceURL=" + RT_FILE;
});

const RT_HIDDEN_PARAMETERS = ["$cmIm$", "$cmIM$"];

// `import(specifier)`: the promise the reference's module loader gives, rejected with
// its plain string (or with the error of turning the specifier into a string).
function rtDynamicImport(specifier) {
  try {
    "" + specifier; // ToString, which throws for a symbol (String() would not)
  } catch (error) {
    return rtReflectApply(rtPromiseReject, rtPromise, [error]);
  }
  return rtReflectApply(rtPromiseReject, rtPromise, ["unsupported import in exec"]);
}

// `import.meta`: an object without prototype or properties, the same for the whole
// program, as V8 makes it for a module whose host adds nothing.
function rtImportMetaHolder() {
  return rtObjectFreeze({ __proto__: null, meta: { __proto__: null } });
}

// The program's function (`hidden`: it takes the two parameters above).
const rtNewProgram = (function rtNewProgram(source, hidden) {
  if (hidden) {
    return new rtAsyncFunction(RT_HIDDEN_PARAMETERS[0], RT_HIDDEN_PARAMETERS[1], rtBody(source));
  }
  return new rtAsyncFunction(rtBody(source));
});

// The program compiled, or null for a syntax error, which rtThrowSyntaxError reports.
const rtCompile = (function rtCompile(source, hidden) {
  try {
    return rtNewProgram(source, hidden);
  } catch (error) {
    if (error instanceof rtSyntaxError) return null;
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
let rtSyntaxErrorHidden = false;

function rtThrowSyntaxError() {
  const source = rtSyntaxErrorSource;
  rtSyntaxErrorSource = null;
  rtFlush();
  rtNewProgram(source, rtSyntaxErrorHidden);
  rtFinish("SyntaxError: the program does not parse"); // not reached: it fails again
}

const rtStart = (function rtStart(command) {
  if (rtStarted) return;
  rtStarted = true;
  rtAllowRemoteImages = command.allow_remote_images === true;
  rtStoredLimits = { entries: command.max_stored_entries, chars: command.max_stored_chars };
  rtMaxJsonDepth = command.max_json_depth;
  rtMemoryLimitBytes = command.memory_limit_bytes; // see buffers.js
  rtSeedRandom(command.seed); // see clock.js
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
  const hidden = command.hidden === true;
  const compiled = rtCompile(command.source, hidden);
  if (compiled === null) {
    rtSyntaxErrorSource = command.source;
    rtSyntaxErrorHidden = hidden;
    return;
  }
  if (typeof compiled === "string") {
    rtFinish(compiled);
    return;
  }
  if (typeof command.import_error === "string") {
    rtFinish(command.import_error);
    return;
  }
  let promise;
  try {
    promise = hidden ? compiled(rtDynamicImport, rtImportMetaHolder()) : compiled();
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
