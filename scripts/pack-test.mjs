#!/usr/bin/env node
// The published package as a user gets it: `npm pack` (which builds), publint and
// arethetypeswrong on the tarball, then a fresh project installs the tarball (npm registry only,
// from the local cache when it can), imports every subpath of package.json "exports",
// type-checks a file importing them all plus the README's hello world (the repo's tsc), and runs
// that hello world on SQLite. Exits non-zero at the first failure. `npm run pack-test`
// (`-- --keep` keeps the temporary directory, `-- --prebuilt` packs dist/ as it is).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
const bin = (name) => path.join(root, 'node_modules', '.bin', name);
const work = mkdtempSync(path.join(tmpdir(), 'leasehold-pack-'));
const app = path.join(work, 'app');
const keep = process.argv.includes('--keep');
// --prebuilt: dist/ was just built (CI, after npm ci), so npm pack skips the prepare script's build
const prebuilt = process.argv.includes('--prebuilt');

function run(cmd, args, cwd, env = {}) {
  try {
    return execFileSync(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8', env: { ...process.env, ...env } });
  } catch (e) {
    // what the command printed is the reason (tsc, publint and attw write their findings to stdout)
    if (e.stdout) process.stdout.write(e.stdout);
    throw e;
  }
}

function step(title, fn) {
  const t0 = Date.now();
  process.stdout.write(`== ${title}\n`);
  const out = fn();
  process.stdout.write(`   done in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
  return out;
}

/** Each subpath of "exports" as an import specifier, with the source file its built target comes from. */
function subpaths() {
  return Object.entries(pkg.exports).map(([sub, target]) => {
    const file = typeof target === 'string' ? target : (target.default ?? target.import);
    const specifier = sub === '.' ? pkg.name : `${pkg.name}/${sub.slice(2)}`;
    return { specifier, source: file?.endsWith('.js') ? file.replace(/^\.\/dist\//, 'src/') : null };
  });
}

/** The hello world with its repo-relative imports of src/ turned into the package's own subpaths. */
function helloWorld() {
  const exported = new Map(subpaths().filter((s) => s.source).map((s) => [s.source, s.specifier]));
  const text = readFileSync(path.join(root, 'examples/hello-world/main.ts'), 'utf8');
  return text.replace(/(['"])((?:\.\.\/)+src\/[^'"]+)\1/g, (_m, q, rel) => {
    const source = path.posix.normalize(path.posix.join('examples/hello-world', rel));
    const specifier = exported.get(source);
    if (!specifier) throw new Error(`examples/hello-world/main.ts imports ${rel}, which no subpath of "exports" publishes`);
    return `${q}${specifier}${q}`;
  });
}

try {
  const tarball = step(prebuilt ? 'npm pack (dist/ as built)' : 'npm pack (runs the build)', () => {
    if (prebuilt && !existsSync(path.join(root, 'dist', 'index.js'))) throw new Error('--prebuilt, but there is no dist/: run npm run build first');
    const [info] = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', work, ...(prebuilt ? ['--ignore-scripts'] : [])], root));
    const leaked = info.files.map((f) => f.path).filter((p) => /\.test(-util)?\.|(^|\/)test\//.test(p));
    if (leaked.length) throw new Error(`the tarball ships test files: ${leaked.slice(0, 5).join(', ')}`);
    console.log(`   ${info.filename}: ${info.entryCount} files, ${(info.size / 1024).toFixed(0)} KiB`);
    return path.join(work, info.filename);
  });

  step('publint', () => process.stdout.write(run(bin('publint'), ['run', tarball, '--strict'], root)));
  // ESM only ("type": "module", no require condition): node16's CommonJS view of it is not a failure
  step('arethetypeswrong (esm-only)', () => process.stdout.write(run(bin('attw'), [tarball, '--profile', 'esm-only', '--no-definitely-typed', '--format', 'table-flipped'], root)));

  step('install the tarball (and the optional peers) into a fresh project', () => {
    execFileSync('mkdir', ['-p', app]);
    writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'pack-test-app', private: true, type: 'module' }, null, 2));
    // what a TypeScript user of every subpath has besides: @types/node, and the optional peers
    // (an ORM) whose subpath they import — at the repo's own ranges, so the cache answers
    const at = (name) => `${name}@${pkg.devDependencies[name] ?? pkg.peerDependencies[name]}`;
    const install = (specs) => run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error', ...specs], app);
    install([tarball, at('@types/node')]);
    // the peers in a second install: in one with the tarball npm's peer resolution took ten times the CPU
    const peers = Object.keys(pkg.peerDependencies ?? {});
    if (peers.length) install(peers.map(at));
  });

  step(`import every subpath of "exports" (${Object.keys(pkg.exports).length})`, () => {
    const specs = subpaths().map((s) => s.specifier);
    const script = `for (const s of ${JSON.stringify(specs)}) { const m = await import(s); if (Object.keys(m).length === 0) throw new Error(s + ' exports nothing'); console.log('   ' + s + ': ' + Object.keys(m).length + ' exports'); }`;
    process.stdout.write(run(process.execPath, ['--input-type=module', '-e', script], app));
  });

  step("type-check a file importing every subpath, and the hello world (tsc; leasehold's declarations checked too)", () => {
    const imports = subpaths().map((s, i) => `import * as m${i} from '${s.specifier}';\nexport const n${i}: number = Object.keys(m${i}).length;`);
    writeFileSync(path.join(app, 'imports.ts'), `${imports.join('\n')}\n`);
    writeFileSync(path.join(app, 'hello.ts'), helloWorld());
    const compilerOptions = { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: false, types: ['node'] };
    writeFileSync(path.join(app, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['imports.ts', 'hello.ts'] }, null, 2));
    let out = '';
    try {
      out = execFileSync(bin('tsc'), ['-p', 'tsconfig.json'], { cwd: app, encoding: 'utf8' });
    } catch (e) {
      out = e.stdout ?? String(e);
    }
    // skipLibCheck is off so leasehold's own .d.ts are checked; another package's errors in its
    // own declarations (drizzle-orm has some under this config) are not ours to fix
    const errors = out.split('\n').filter((l) => /^\S+\(\d+,\d+\): error /.test(l));
    const ours = errors.filter((l) => !l.startsWith('node_modules/') || l.startsWith(`node_modules/${pkg.name}/`));
    const others = new Set(errors.filter((l) => !ours.includes(l)).map((l) => l.match(/^node_modules\/((?:@[^/]+\/)?[^/]+)/)?.[1]));
    if (others.size) console.log(`   ${errors.length - ours.length} error(s) inside other packages' own declarations ignored: ${[...others].join(', ')}`);
    if (ours.length || (errors.length === 0 && /error/.test(out))) throw new Error(`tsc:\n${ours.join('\n') || out}`);
  });

  step('the hello world on SQLite', () => {
    // Node strips the types of hello.ts itself (22.18+, 24): no build step, as a user's quick try
    const out = run(process.execPath, ['hello.ts'], app, { LEASEHOLD_DB: `sqlite:${path.join(work, 'hello.db')}`, NODE_NO_WARNINGS: '1' });
    process.stdout.write(out.replace(/^/gm, '   '));
    if (!/processed 1 job\(s\)/.test(out)) throw new Error('the hello world did not process its job');
  });
  console.log(`pack-test: ok (${work}${keep ? ', kept' : ''})`);
} catch (e) {
  console.error(`pack-test: FAILED: ${e.message}`);
  process.exitCode = 1;
} finally {
  if (!keep) rmSync(work, { recursive: true, force: true });
}
