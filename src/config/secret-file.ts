/**
 * Secrets the daemon reads from files (the NATS credentials of a cluster, the stage link's token): opened without
 * following a link (O_NOFOLLOW, checked on the descriptor itself), non-blocking (a FIFO never hangs a start), a
 * regular file of bounded size. The errors name the file and the key, never its content.
 */
import { closeSync, constants, fstatSync, openSync, readFileSync } from 'node:fs';
import { CodedError } from '../errors.js';

export type SecretFileErrorCode = 'secret_unreadable' | 'secret_not_regular' | 'secret_link' | 'secret_too_large' | 'secret_empty';

export class SecretFileError extends CodedError<SecretFileErrorCode> {}

/**
 * The text of the secret file `file` (`key` names it in errors), its trailing newline trimmed, and its mode. Throws a
 * `SecretFileError` when it cannot be read as one.
 */
export function readSecretFile(file: string, key: string, maxBytes = 64 * 1024): { readonly text: string; readonly mode: number; readonly uid: number } {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    if (code === 'ELOOP') throw new SecretFileError('secret_link', `${key}: ${file} is a symbolic link (not followed)`);
    throw new SecretFileError('secret_unreadable', `${key}: cannot read ${file} (${code})`);
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new SecretFileError('secret_not_regular', `${key}: ${file} is not a regular file`);
    if (stat.size > maxBytes) throw new SecretFileError('secret_too_large', `${key}: ${file} is larger than ${maxBytes} bytes`);
    const text = readFileSync(fd, 'utf8').replace(/\r?\n$/, '');
    if (text === '') throw new SecretFileError('secret_empty', `${key}: ${file} is empty`);
    return { text, mode: stat.mode & 0o777, uid: stat.uid };
  } catch (error) {
    if (error instanceof SecretFileError) throw error;
    throw new SecretFileError('secret_unreadable', `${key}: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  } finally {
    closeSync(fd);
  }
}

/** A configuration file larger than this is not one (mycroft.conf is a few KB; a config file of ours, less). */
export const MAX_CONFIG_FILE_BYTES = 4 * 1024 * 1024;

/**
 * A configuration file's text: a regular file (a FIFO, a device or a folder is refused at once, never waited on), at
 * most `maxBytes`. Throws an Error whose message says why (ENOENT errors keep their `code`).
 */
export function readRegularFile(file: string, maxBytes = MAX_CONFIG_FILE_BYTES): string {
  const fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const stat = fstatSync(fd);
    if (stat.isDirectory()) throw Object.assign(new Error('is a folder'), { code: 'EISDIR' });
    if (!stat.isFile()) throw new Error('not a regular file (a FIFO, socket or device is not read)');
    if (stat.size > maxBytes) throw new Error(`larger than ${maxBytes} bytes`);
    return readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
}
