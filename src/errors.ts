/**
 * The one base of the errors this package throws on purpose: a stable `code` that callers and tests read, a
 * message for people, the `cause` kept. Each kind is a subclass naming its codes.
 */
export class CodedError<Code extends string> extends Error {
  readonly code: Code;

  constructor(code: Code, message: string, options?: { readonly cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}
