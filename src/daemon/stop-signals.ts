/**
 * A stop signal is one stop however many processes of the group receive it. systemd's default `KillMode=control-group`
 * and a terminal's Ctrl-C signal every process of the group at once: under `npm start` the daemon gets its own copy
 * and, a moment later (tens of milliseconds, more on a loaded machine), the one npm forwards to it; under `--workers`
 * each worker gets one from systemd and one from the primary. Only a signal that comes `repeatMs` or more after the
 * first — a person pressing Ctrl-C again — cuts the drain short.
 */

/** A copy of the first signal comes within this long of it; a signal after it is a person's second. */
export const REPEAT_MS = 2_000;

export interface StopSignals {
  /** A stop signal came: `first` for the one that starts the stop, `repeat` for a copy of it, `force` for a second stop. */
  heard(signal: string, now?: number): 'first' | 'repeat' | 'force';
}

export function stopSignals(repeatMs = REPEAT_MS): StopSignals {
  let firstAt: number | undefined;
  return {
    heard: (_signal, now = Date.now()) => {
      if (firstAt === undefined) {
        firstAt = now;
        return 'first';
      }
      return now - firstAt < repeatMs ? 'repeat' : 'force';
    },
  };
}
