/**
 * The published package, as a user gets it: `npm run build` (what `prepack` runs: tsc to dist/
 * with declarations, resources.json copied beside the compiled code), `npm pack`, the tarball unpacked into a fresh app's node_modules, the
 * example app (examples/app) type-checked against the shipped .d.ts and synthesized with
 * `cdk synth`, offline, importing `@sundial/cdk` by name.
 *
 * The peer dependencies (aws-cdk-lib, constructs) and cargo-lambda-cdk are linked from this
 * directory's node_modules instead of installed, so the test needs no registry and the app and
 * the package share one aws-cdk-lib, as npm's peer resolution would arrange.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';

const INFRA = path.resolve(__dirname, '..');
const SOURCE_OF_TRUTH = path.resolve(INFRA, '..', 'functions', 'model', 'resources.json');
const EXAMPLE = path.join(INFRA, 'examples', 'app');
const NODE_MODULES = path.join(INFRA, 'node_modules');

function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): string {
  const res = spawnSync(cmd, args, {
    cwd,
    encoding: 'utf8',
    timeout: 180_000,
    env: { ...process.env, npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false', ...env },
  });
  assert.equal(res.status, 0, `${cmd} ${args.join(' ')} failed (${res.status}):\n${res.stdout}\n${res.stderr}`);
  return res.stdout;
}

/** `unshare -n` cuts the network off when we may create namespaces. */
function offline(): string[] {
  if (spawnSync('unshare', ['-n', 'true']).status === 0) return ['unshare', '-n'];
  if (spawnSync('unshare', ['-rn', 'true']).status === 0) return ['unshare', '-rn'];
  return [];
}

describe('the npm package and an app that uses it', () => {
  let work: string;
  let files: string[];
  let pkgDir: string;

  before(() => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'sundial-pkg-'));
    // What `npm pack` runs as prepack, run here first so its output stays out of pack's JSON.
    run('npm', ['run', 'build', '--silent'], INFRA);
    const packed = JSON.parse(run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', work], INFRA));
    files = packed[0].files.map((f: { path: string }) => f.path);
    // The user's app: the example's files, the package unpacked into node_modules.
    for (const f of ['app.ts', 'cdk.json', 'tsconfig.json', 'package.json']) fs.copyFileSync(path.join(EXAMPLE, f), path.join(work, f));
    const scope = path.join(work, 'node_modules', '@sundial');
    fs.mkdirSync(scope, { recursive: true });
    run('tar', ['-xzf', path.join(work, packed[0].filename), '-C', scope], work);
    pkgDir = path.join(scope, 'cdk');
    fs.renameSync(path.join(scope, 'package'), pkgDir);
    for (const dep of ['aws-cdk-lib', 'constructs', 'cargo-lambda-cdk', 'tsx']) {
      fs.symlinkSync(path.join(NODE_MODULES, dep), path.join(work, 'node_modules', dep));
    }
  });
  after(() => fs.rmSync(work, { recursive: true, force: true }));

  it('ships the compiled code, declarations, resources.json and placeholder assets; no sources or tests', () => {
    for (const f of ['package.json', 'README.md', 'dist/lib/index.js', 'dist/lib/index.d.ts', 'dist/lib/sundial-scheduler.d.ts', 'dist/lib/resources.json', 'assets/tick/bootstrap', 'assets/worker-ecs/Dockerfile']) {
      assert.ok(files.includes(f), `${f} is in the tarball`);
    }
    assert.ok(!files.some((f) => f.startsWith('test/') || f.startsWith('lib/') || f.startsWith('bin/') || f.startsWith('examples/')), files.join('\n'));
    const pkg = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8'));
    assert.equal(pkg.name, '@sundial/cdk');
    assert.ok(pkg.peerDependencies['aws-cdk-lib'] && pkg.peerDependencies.constructs);
    assert.equal(pkg.dependencies['aws-cdk-lib'], undefined, 'aws-cdk-lib is a peer, never a second copy');
  });

  it('the packaged resources.json equals the source of truth, and the installed package reads it', () => {
    assert.equal(fs.readFileSync(path.join(pkgDir, 'dist', 'lib', 'resources.json'), 'utf8'), fs.readFileSync(SOURCE_OF_TRUTH, 'utf8'));
    assert.equal(fs.readFileSync(path.join(INFRA, 'dist', 'lib', 'resources.json'), 'utf8'), fs.readFileSync(SOURCE_OF_TRUTH, 'utf8'));
    const read = run('node', ['-e', "console.log(require('@sundial/cdk').RESOURCES_JSON_PATH)"], work).trim();
    assert.equal(fs.realpathSync(read), fs.realpathSync(path.join(pkgDir, 'dist', 'lib', 'resources.json')));
  });

  it('the example app type-checks against the shipped declarations', () => {
    run(process.execPath, [path.join(NODE_MODULES, 'typescript', 'bin', 'tsc'), '-p', path.join(work, 'tsconfig.json')], work);
  });

  it('the example app synthesizes with cdk synth, offline', () => {
    const out = path.join(work, 'cdk.out');
    const cmd = [...offline(), path.join(NODE_MODULES, '.bin', 'cdk'), 'synth', '--no-notices', '--quiet', '-o', out];
    run(cmd[0], cmd.slice(1), work, { AWS_ACCESS_KEY_ID: '', AWS_SECRET_ACCESS_KEY: '', AWS_PROFILE: '', AWS_EC2_METADATA_DISABLED: 'true' });
    const t = JSON.parse(fs.readFileSync(path.join(out, 'Payments.template.json'), 'utf8'));
    const res = Object.values(t.Resources) as Array<{ Type: string; Properties: any }>;
    const tables = res.filter((r) => r.Type === 'AWS::DynamoDB::Table');
    assert.equal(tables.length, 5, 'jobs, executions and the three toolkit tables');
    assert.ok(tables.some((r) => r.Properties.TableName === 'payments-inbox'));
    for (const tb of tables) assert.equal(tb.Properties.SSESpecification?.SSEType, 'KMS');
    const policies = JSON.stringify(res.filter((r) => r.Type === 'AWS::IAM::Policy'));
    assert.ok(policies.includes('execute-api:Invoke'), 'grantInvokeApi reached the operators role');
    // The tenant principal carries the guardrail: tagged with its tenant, the policy attached.
    const guardrail = Object.entries(t.Resources as Record<string, { Type: string; Properties: any }>).find(
      ([, r]) => r.Type === 'AWS::IAM::ManagedPolicy' && r.Properties.PolicyDocument.Statement.some((x: any) => x.Sid === 'SundialTenantTagOfTargets'),
    );
    assert.ok(guardrail, 'the guardrail policy');
    const tenants = res.filter((r) => r.Type === 'AWS::IAM::Role' && (r.Properties.Tags ?? []).some((x: any) => x.Key === 'sundial-tenant'));
    assert.ok(tenants.length > 0, 'a tenant principal');
    for (const r of tenants) assert.ok(JSON.stringify(r.Properties.ManagedPolicyArns ?? []).includes(guardrail[0]), JSON.stringify(r.Properties));
    const fns = res.filter((r) => r.Type === 'AWS::Lambda::Function');
    assert.equal(fns.length, 6);
    for (const f of fns) assert.deepEqual(f.Properties.TracingConfig, { Mode: 'Active' });
  });
});
