/** Runs `work`, then every registered stop in reverse order, whether `work` succeeded or not. */
export async function withCleanup<T>(work: (onExit: (stop: () => Promise<unknown>) => void) => Promise<T>): Promise<T> {
  const stops: (() => Promise<unknown>)[] = [];
  try {
    return await work((stop) => stops.push(stop));
  } finally {
    for (const stop of stops.reverse()) {
      await stop().catch((error: unknown) => console.error(`bench: cleanup failed: ${(error as Error).message}`));
    }
  }
}

/** Progress on stderr, so that stdout stays the table. */
export function progress(message: string): void {
  process.stderr.write(`  · ${message}\n`);
}
