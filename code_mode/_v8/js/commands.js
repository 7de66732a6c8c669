// Commands from the host: `start`, `result` (a tool call's outcome), `fire` (a timer),
// `drain` (the last call on an interrupted isolate), `replay` (the clock readings of a
// program replayed after its worker died, before its start: see clock.js), in batches
// that rtRecv applies.

function rtSettleTool(command) {
  const pending = rtReflectApply(rtMapGet, rtPendingTools, [command.id]);
  if (pending === undefined) return;
  rtReflectApply(rtMapDelete, rtPendingTools, [command.id]);
  if (rtFinished) return;
  if (command.ok) pending.resolve(command.value);
  else pending.reject(rtString(command.message)); // a plain string, as the reference
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
// expect first): the messages rtEnqueue kept aside as not urgent. Nothing else can
// matter any more, and an empty drain costs nothing.
function rtDrain() {
  rtQueueUrgent = false;
  if (rtQueueOutput) {
    rtQueue = rtQueueKept;
    rtFlush();
  } else {
    rtQueue = rtNewQueue();
    rtQueueKept = rtNewQueue();
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
      case "replay":
        rtReplayClock(command.clock);
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
// `rtRecv` goes to the host on the prelude's result (see _prelude.py), to no global.
