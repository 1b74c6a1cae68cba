/**
 * Secrets the daemon reads from files (the NATS credentials of a cluster, the stage link's token): opened without
 * following a link (O_NOFOLLOW, checked on the descriptor itself), non-blocking (a FIFO never hangs a start), a
 * regular file of bounded size. The errors name the file and the key, never its content.
 */
import { closeSync, constants, fstatSync, openSync, readFileSync } from 'node:fs';

export type SecretFileErrorCode = 'secret_unreadable' | 'secret_not_regular' | 'secret_link' | 'secret_too_large' | 'secret_empty';

export class SecretFileError extends Error {
  readonly code: SecretFileErrorCode;
  constructor(code: SecretFileErrorCode, message: string) {
    super(message);
    this.name = 'SecretFileError';
    this.code = code;
  }
}

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
