#!/usr/bin/env node
// The published entry point: the compiled CLI (run `npm run build` first in a checkout).
import '../dist/cli/bin.js';
