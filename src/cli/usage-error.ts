/** A mistake of the caller: the CLI prints it without a stack trace and exits with code 2. */
export class UsageError extends Error {}
