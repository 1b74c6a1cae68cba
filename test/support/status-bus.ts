/** A LocalBus that reports status changes when the test says so (as the client of an existing OVOS bus does). */
import type { BusStatus, Unsubscribe } from '../../src/bus/bus.js';
import { LocalBus } from '../../src/bus/local-bus.js';

export class StatusBus extends LocalBus {
  #statusListeners: Array<(status: BusStatus) => void> = [];

  override onStatus(listener: (status: BusStatus) => void): Unsubscribe {
    this.#statusListeners = [...this.#statusListeners, listener];
    return () => {
      this.#statusListeners = this.#statusListeners.filter((l) => l !== listener);
    };
  }

  report(status: BusStatus): void {
    for (const listener of this.#statusListeners) listener(status);
  }
}
