#!/usr/bin/env node
// The installed command: runs the compiled CLI (scripts/setup.sh builds dist/).
import '../dist/cli/main.js';
