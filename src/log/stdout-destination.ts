/**
 * Where the daemon's log lines go: stdout, written so that the daemon never waits for whoever reads it.
 *
 * Node leaves a stdout pipe non-blocking, so a synchronous write to a full pipe fails with EAGAIN; pino's own
 * destinations then either sleep 100 ms on the event loop and retry (synchronous mode — a slow log reader stalls
 * every contest), or queue without bound and, on `process.exit`, retry *every* error for ever (asynchronous mode — a
 * reader that has gone, EPIPE, made a Ctrl-C'd daemon hang). Here:
 *  - a line is written at once when the pipe has room (the usual case: lines reach the log in order, before a crash);
 *  - when it has none (EAGAIN), lines wait in a queue retried on the next turns of the event loop, at most
 *    `maxQueuedBytes`; past that the oldest are dropped and counted (never a line already started in the pipe),
 *    and the count is written as its own line, between whole lines, once the pipe has room again;
 *  - when the reader has gone (EPIPE or any other error), logging stops for good: nothing is queued any more;
 *  - `flushSync` (pino calls it for `fatal`, and on exit) makes one pass and never waits.
 */
import { writeSync } from 'node:fs';

export interface StdoutDestinationOptions {
  readonly fd?: number;
  /** Bytes of lines held while the pipe is full; older lines are dropped past it. Default 4 MiB. */
  readonly maxQueuedBytes?: number;
  /** The write system call: bytes written (tests give one that says EAGAIN or EPIPE). */
  readonly writeSync?: (fd: number, data: Buffer) => number;
  /** How the queue is retried later (tests drive it by hand). */
  readonly later?: (retry: () => void) => void;
}

export interface StdoutDestination {
  write(line: string): void;
  flushSync(): void;
  /** Lines dropped because the queue was full, and whether the reader has gone. */
  readonly stats: () => { readonly dropped: number; readonly queuedBytes: number; readonly broken: boolean };
}

export function stdoutDestination(options: StdoutDestinationOptions = {}): StdoutDestination {
  const fd = options.fd ?? 1;
  const max = options.maxQueuedBytes ?? 4 * 1024 * 1024;
  const write = options.writeSync ?? ((target: number, data: Buffer) => writeSync(target, data));
  const later = options.later ?? ((retry: () => void) => void setTimeout(retry, 10).unref());
  const queue: Buffer[] = [];
  let queuedBytes = 0;
  let dropped = 0;
  let reported = 0;
  let broken = false;
  let scheduled = false;
  /** The queue's head is part of a line already started in the pipe (or the dropped-lines note): never dropped. */
  let headPinned = false;

  /** Write `data` as far as the pipe takes it; what is left, or null when all went (or logging stopped). */
  const attempt = (data: Buffer): Buffer | null => {
    let rest = data;
    while (rest.length > 0) {
      try {
        rest = rest.subarray(write(fd, rest)); // a partial write resumes at the byte it stopped at
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EAGAIN') return rest;
        broken = true;
        queue.length = 0;
        queuedBytes = 0;
        return null;
      }
    }
    return null;
  };

  const enqueue = (bytes: Buffer): void => {
    queue.push(bytes);
    queuedBytes += bytes.length;
    const first = headPinned ? 1 : 0; // the oldest line that may go
    while (queuedBytes > max && queue.length > first + 1) {
      queuedBytes -= queue.splice(first, 1)[0]!.length;
      dropped++;
    }
    schedule();
  };

  const schedule = (): void => {
    if (scheduled || broken) return;
    scheduled = true;
    later(() => {
      scheduled = false;
      drain();
    });
  };

  /** Writes the queue in order — the dropped-lines note between whole lines — until the pipe is full. */
  const drain = (): void => {
    while (!broken) {
      if (!headPinned && dropped > reported) {
        const note = Buffer.from(`${JSON.stringify({ level: 40, time: Date.now(), reason: 'log_lines_dropped', dropped: dropped - reported, msg: 'the log reader fell behind: lines dropped' })}\n`);
        queue.unshift(note);
        queuedBytes += note.length;
        reported = dropped;
        headPinned = true;
      }
      const head = queue[0];
      if (head === undefined) return;
      const rest = attempt(head);
      if (broken) return; // the queue went with the reader
      if (rest !== null) {
        queuedBytes -= head.length - rest.length;
        queue[0] = rest;
        headPinned ||= rest.length < head.length;
        schedule();
        return;
      }
      queue.shift();
      queuedBytes -= head.length;
      headPinned = false;
    }
  };

  return {
    write(line: string): void {
      if (broken) return;
      const bytes = Buffer.from(line);
      if (queue.length > 0) return enqueue(bytes); // keep the order
      const rest = attempt(bytes);
      if (rest === null) return;
      headPinned = rest.length < bytes.length;
      enqueue(rest);
    },
    flushSync(): void {
      drain();
    },
    stats: () => ({ dropped, queuedBytes, broken }),
  };
}

let processStdout: StdoutDestination | undefined;

/** The process's one stdout destination; whatever is queued at exit gets one last pass (never a wait). */
export function processStdoutDestination(): StdoutDestination {
  if (processStdout === undefined) {
    // Node makes a stdout pipe non-blocking when it creates `process.stdout`: create it now, so a full pipe is
    // EAGAIN (queued) here too, never a write that waits — also for an embedder that has not touched it yet.
    void process.stdout;
    const destination = stdoutDestination();
    process.once('exit', () => destination.flushSync());
    processStdout = destination;
  }
  return processStdout;
}
