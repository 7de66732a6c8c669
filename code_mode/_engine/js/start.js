// Starting the program: the start command sets the cell's limits, stored values and
// tools, then compiles the program as the body of an async function and runs it; its
// promise settling finishes the cell.

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
