#!/usr/bin/env node
/** Entry point of the `leasehold` executable. */
import { runCli } from './main.js';

process.exitCode = await runCli(process.argv.slice(2));
