/**
 * The stage link's credential (src/ovos-plugin/README.md, Protocol §8): a token in a file only the daemon's user (or
 * a group given to ovos-core's user) can read. The daemon makes it at its first start (32 random bytes, mode 0600) and
 * keeps it across restarts; the ovos-core plugin reads it at every connect and sends it as `Authorization: Bearer …`.
 * Nothing to copy by hand: both find it at `$XDG_STATE_HOME/ovos-contests/stage-link-token` when they run as one
 * user; `orchestrator.stageTokenFile` and the plugin's `token_file` name another path when they do not.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { readSecretFile, SecretFileError } from '../config/secret-file.js';

/** The header a plugin sends it in: `Authorization: Bearer <token>`. */
export const TOKEN_SCHEME = 'Bearer';

export interface LinkToken {
  readonly file: string;
  /** Whether `header` (an `Authorization` header's value) carries this token. */
  admits(header: string | undefined): boolean;
  /** Set when the file can be read by every user of the machine (a group may be meant, everyone is not). */
  readonly openToAll: boolean;
}

/** The token in `file`, made there first if the file does not exist (its folder too, 0700, when `ownFolder`). */
export function linkToken(file: string, ownFolder: boolean): LinkToken {
  let text: string;
  let mode: number;
  try {
    ({ text, mode } = readSecretFile(file, 'orchestrator.stageTokenFile', 1024));
  } catch (error) {
    if (!(error instanceof SecretFileError) || error.code !== 'secret_unreadable' || !/\(ENOENT\)$/.test(error.message)) throw error;
    if (ownFolder) mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    text = randomBytes(32).toString('base64url');
    mode = 0o600;
    // wx: never through a link, never over a file another start made meanwhile (then that one is read).
    let fd: number;
    try {
      fd = openSync(file, 'wx', 0o600);
    } catch (raced) {
      if ((raced as NodeJS.ErrnoException).code !== 'EEXIST') throw raced;
      return linkToken(file, false);
    }
    try {
      writeSync(fd, `${text}\n`);
    } finally {
      closeSync(fd);
    }
  }
  const expected = Buffer.from(`${TOKEN_SCHEME} ${text}`, 'utf8');
  return {
    file,
    openToAll: (mode & 0o004) !== 0,
    admits: (header) => {
      if (header === undefined) return false;
      const given = Buffer.from(header, 'utf8');
      return given.length === expected.length && timingSafeEqual(given, expected);
    },
  };
}
