// Stack traces: frames of the program read `exec_main.mjs:<line>:<column>` with the
// user's own positions; frames of this runtime are hidden. install.js installs
// rtPrepareStackTrace as `Error.prepareStackTrace`.

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
