#!/usr/bin/env node
// Copies the shared resource definition into the compiled package (dist/lib/resources.json),
// where lib/resources.ts looks first when it runs from dist/. Part of `npm run build`, so of
// `npm pack` / `npm publish` (prepack). test/package.test.ts checks the copy equals the source.
const fs = require('node:fs');
const path = require('node:path');

const src = path.resolve(__dirname, '..', '..', 'functions', 'model', 'resources.json');
const dst = path.resolve(__dirname, '..', 'dist', 'lib', 'resources.json');
JSON.parse(fs.readFileSync(src, 'utf8')); // refuse to ship a file that does not parse
fs.mkdirSync(path.dirname(dst), { recursive: true });
fs.copyFileSync(src, dst);
console.log(`packaged ${path.relative(process.cwd(), src)} -> ${path.relative(process.cwd(), dst)}`);
