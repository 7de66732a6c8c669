// The outgoing channel: messages to the host, queued as JSON text and written in
// batches into the private buffer that the host reads inside a doorbell call (see the
// protocol in builtins.js).

const RT_STARTED = '{"t":"started"}';
// The buffer's layout (RT_CHUNK, RT_COUNT, RT_INDEX, RT_QUEUED, RT_DEFER,
// RT_HEADER_SLOTS, RT_UNITS_OFFSET) is defined once, in _channel.py, which the prelude
// pastes ahead of this file: the host reads the same offsets.
const rtBuffer = new rtArrayBuffer(RT_UNITS_OFFSET + 2 * RT_CHUNK);
const rtHeader = new rtInt32Array(rtBuffer, 0, RT_HEADER_SLOTS);
const rtUnits = new rtUint16Array(rtBuffer, RT_UNITS_OFFSET);
// rtHeader[RT_QUEUED] is 1 while the queue may hold a message other than `started`,
// i.e. something a drain would hand over. The host reads it when an evaluation of ours
// ends (the JavaScript is stopped then): a terminated program whose flag is 0 needs
// no drain. It is set before such a message is queued and cleared only after a queue
// was sent or dropped, so it may say 1 for nothing, never 0 for something.
// rtHeader[RT_DEFER] is 1 when the batch being written holds only output (and
// `started`): the host may keep it and hand it over with the next batch, so that a
// short program crosses back once. It hands it over at the latest when this evaluation
// ends, and reads it while the program still runs when it needs it (a yield window's
// end): output never waits for the program to reach a point where it could flush again.
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
// The clock readings the program made since the last flush (see clock.js), or null.
// They go out at the end of the next batch: the host has each reading before, or with,
// anything the program did with it, which is what a replay needs.
let rtClockReadings = null;
// What a drain hands over, in order: the queued messages that are not urgent (output
// and `started`), told apart when they are queued, never by reading their text.
let rtQueueKept = rtNewQueue();
let rtQueueOutput = false; // rtQueueKept holds output (not only `started`)

// Header: [RT_COUNT] = code units in this chunk, [RT_INDEX] = chunk index within the
// batch (0 starts a new batch, so a batch cut short by termination is discarded by the
// host), [RT_QUEUED] and [RT_DEFER] (see above).
const rtWrite = (function rtWrite(s) {
  const length = s.length;
  let offset = 0;
  let index = 0;
  for (;;) {
    const n = rtMathMin(RT_CHUNK, length - offset);
    for (let i = 0; i < n; i++) {
      rtUnits[i] = rtReflectApply(rtStringCharCodeAt, s, [offset + i]);
    }
    rtHeader[RT_COUNT] = n;
    rtHeader[RT_INDEX] = index;
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
  if (rtClockReadings !== null) rtQueueClock();
  if (rtQueue.length === 0) return;
  // The queue is cleared only once the batch is out: if termination interrupts the
  // write, a later flush (the host's drain) sends the whole batch again. Nothing
  // between the write and the clearing may be a call (an interrupt point), or a
  // termination landing there would send the batch twice.
  const fresh = rtNewQueue();
  const freshKept = rtNewQueue();
  rtHeader[RT_DEFER] = rtQueueUrgent ? 0 : 1;
  rtWrite("[" + rtReflectApply(rtArrayJoin, rtQueue, [","]) + "]");
  rtQueue = fresh;
  rtQueueKept = freshKept;
  rtQueueChars = 0;
  rtQueueUrgent = false;
  rtQueueOutput = false;
  rtHeader[RT_QUEUED] = 0;
});

// The clock readings as one message at the end of the queue (no drain hands it over:
// a terminated program is not replayed).
const rtQueueClock = (function rtQueueClock() {
  const json = '{"t":"clock","v":[' + rtReflectApply(rtArrayJoin, rtClockReadings, [","]) + "]}";
  rtClockReadings = null;
  rtReflectApply(rtArrayPush, rtQueue, [json]);
  rtQueueChars += json.length;
});

// Queues one message (already JSON text); a flush sends the queue as one batch.
// `urgent`: the host must act on it now (anything but output and `started`); what is
// not urgent is also kept aside for a drain (see rtDrain in commands.js).
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
  else {
    if (json !== RT_STARTED) rtQueueOutput = true;
    rtReflectApply(rtArrayPush, rtQueueKept, [json]);
  }
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
  const urgent = message.t !== "text" && message.t !== "image" && message.t !== "audio";
  rtSendRaw(rtReflectApply(rtJSONStringify, undefined, [message]), urgent);
}
