import module from 'node:module';

// V8's compile cache (Node 22.1 and later; NODE_COMPILE_CACHE names its directory, else the OS's
// temporary one): a later start reuses the compiled code of the hundreds of modules Plaza loads instead
// of compiling them again. Enabled before they are imported, hence the dynamic imports below. Called
// optionally: on a Node 20 (past its end of life, still some machines' default, where CI's production
// path runs) Plaza starts without the cache rather than failing.
module.enableCompileCache?.();
const { processContext } = await import('./cli/process-context.js');
const { runCli } = await import('./cli/run.js');

// The `plaza` command: everything is in src/cli/ (run.ts dispatches, commands.ts lists the commands).
const context = processContext();
runCli(process.argv.slice(2), context)
  .then(async (code) => {
    // `serve` returns once it is listening (it opens its own database); the process then lives
    // on its server and signals. Other commands end here.
    await context.close();
    // A refused command ends now, whatever handles a half-done start may have left open.
    if (code !== 0) process.exit(code);
  })
  .catch(async (error: unknown) => {
    // The stack, not the object: a database error's own fields (detail: "Failing row contains (…)")
    // may hold the values of the row, a password hash among them.
    console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
    await context.close().catch(() => {});
    process.exit(1);
  });
