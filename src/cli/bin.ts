#!/usr/bin/env node
/** Entry point of the `leasehold` executable. */
import { runCli } from './main.js';

process.exitCode = await runCli(process.argv.slice(2));
// The command is done (a worker has stopped and closed its storage). A handler that ignored
// its abort signal may still hold a timer or socket open; its slot was freed and its result is
// discarded, so it must not keep the process alive past the shutdown deadline. Unref'd: when
// nothing is left the process exits on its own first.
setTimeout(() => process.exit(), 200).unref();
