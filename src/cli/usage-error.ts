/** A mistake of the caller: the CLI prints it without a stack trace and exits with code 2. */
export class UsageError extends Error {
  /** Whether the command itself was not understood, so that the usage text helps. */
  constructor(
    message: string,
    readonly showUsage = false,
  ) {
    super(message);
  }
}
