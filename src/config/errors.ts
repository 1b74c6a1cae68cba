/** The one error type of configuration loading (STYLE 6); shared by config.ts and mycroft-conf.ts. */

export type ConfigErrorCode =
  | 'CONFIG_INVALID'
  | 'CONFIG_FILE_UNREADABLE'
  | 'CONFIG_FILE_NOT_JSON'
  | 'CONFIG_UNKNOWN_FLAG'
  | 'CONFIG_UNKNOWN_KEY';

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly code: ConfigErrorCode;
  /** Dotted path of the offending key (`commonQuery.pollWindowMs`, `pipeline[2]`); absent for file and flag errors. */
  readonly key?: string;

  constructor(code: ConfigErrorCode, message: string, options: { readonly key?: string; readonly cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    if (options.key !== undefined) this.key = options.key;
  }
}
