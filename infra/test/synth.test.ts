/**
 * `cdk synth` through the local CLI, as CI and a user run it: offline (in a network namespace
 * with no interfaces when the machine allows one), with no Rust build (the committed placeholder
 * assets), no Docker, and the cdk.json of this directory.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';

const INFRA = path.resolve(__dirname, '..');
const CDK = path.join(INFRA, 'node_modules', '.bin', 'cdk');

/** `unshare -n` cuts the network off when we may create namespaces (root, or user namespaces). */
function offlinePrefix(): string[] {
  const probe = spawnSync('unshare', ['-n', 'true']);
  if (probe.status === 0) return ['unshare', '-n'];
  const userNs = spawnSync('unshare', ['-rn', 'true']);
  if (userNs.status === 0) return ['unshare', '-rn'];
  return [];
}

function synth(args: string[]): { out: string; template: any; offline: boolean } {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'sundial-synth-'));
  const prefix = offlinePrefix();
  const cmd = [...prefix, CDK, 'synth', '--no-notices', '--quiet', '-o', out, ...args];
  const res = spawnSync(cmd[0], cmd.slice(1), {
    cwd: INFRA,
    encoding: 'utf8',
    timeout: 120_000,
    // No credentials, no region: synth must not need AWS.
    env: { ...process.env, AWS_ACCESS_KEY_ID: '', AWS_SECRET_ACCESS_KEY: '', AWS_PROFILE: '', AWS_EC2_METADATA_DISABLED: 'true' },
  });
  assert.equal(res.status, 0, `cdk synth failed (${res.status}):\n${res.stdout}\n${res.stderr}`);
  const stackName = 'Sundial';
  const template = JSON.parse(fs.readFileSync(path.join(out, `${stackName}.template.json`), 'utf8'));
  return { out, template, offline: prefix.length > 0 };
}

describe('cdk synth (the CLI, offline, no Rust build)', () => {
  it('synthesizes the app with the committed placeholder assets and IAM auth by default', (t) => {
    const { out, template, offline } = synth([]);
    t.diagnostic(offline ? 'ran without network (unshare -n)' : 'network namespace unavailable: ran as is');
    try {
      const types = Object.values(template.Resources).map((r: any) => r.Type);
      assert.equal(types.filter((x) => x === 'AWS::DynamoDB::Table').length, 2);
      // the default pool's queue, low lane, DLQ and notify queue
      assert.equal(types.filter((x) => x === 'AWS::SQS::Queue').length, 4);
      // tick, scan, reconcile, api, the default pool's worker
      assert.equal(types.filter((x) => x === 'AWS::Lambda::Function').length, 5);
      const routes = Object.values(template.Resources).filter((r: any) => r.Type === 'AWS::ApiGatewayV2::Route') as any[];
      assert.ok(routes.some((r) => r.Properties.RouteKey === 'ANY /{proxy+}' && r.Properties.AuthorizationType === 'AWS_IAM'));
      // the placeholder bootstraps were staged as Lambda assets
      const assets = JSON.parse(fs.readFileSync(path.join(out, 'Sundial.assets.json'), 'utf8'));
      const zips = Object.values(assets.files as Record<string, { source: { packaging: string } }>).filter(
        (f) => f.source.packaging === 'zip',
      );
      assert.equal(zips.length, 3, 'tick, worker and api code');
    } finally {
      fs.rmSync(out, { recursive: true, force: true });
    }
  });

  it('takes JWT auth, pools and a built assets directory from context', () => {
    const assets = fs.mkdtempSync(path.join(os.tmpdir(), 'sundial-built-'));
    for (const n of ['tick', 'worker', 'api']) {
      fs.mkdirSync(path.join(assets, n));
      fs.writeFileSync(path.join(assets, n, 'bootstrap'), `built ${n}`, { mode: 0o755 });
    }
    const cfg = JSON.stringify({ pools: [{ name: 'default' }, { name: 'reports', maxConcurrency: 4 }], shards: 64 });
    const { out, template } = synth([
      '-c', `sundial=${cfg}`,
      '-c', 'sundial:jwtIssuer=https://issuer.example.com/',
      '-c', 'sundial:jwtAudience=a,b',
      '-c', `sundial:assetsDir=${assets}`,
    ]);
    try {
      const res = Object.values(template.Resources) as any[];
      const auth = res.find((r) => r.Type === 'AWS::ApiGatewayV2::Authorizer');
      assert.deepEqual(auth.Properties.JwtConfiguration, { Issuer: 'https://issuer.example.com/', Audience: ['a', 'b'] });
      const queues = res.filter((r) => r.Type === 'AWS::SQS::Queue').map((r) => r.Properties.QueueName).sort();
      const lanes = ['', '-dlq', '-low', '-notify'];
      assert.deepEqual(queues, ['default', 'reports'].flatMap((p) => lanes.map((l) => `Sundial-${p}${l}`)));
      const tick = res.find((r) => r.Type === 'AWS::Lambda::Function' && r.Properties.Environment.Variables.SUNDIAL_SCAN_FUNCTION);
      assert.equal(tick.Properties.Environment.Variables.SUNDIAL_SHARDS, '64');
      assert.equal(tick.Properties.Environment.Variables.SUNDIAL_POOLS, 'default,reports');
    } finally {
      fs.rmSync(out, { recursive: true, force: true });
      fs.rmSync(assets, { recursive: true, force: true });
    }
  });
});
