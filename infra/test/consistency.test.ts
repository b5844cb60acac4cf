/**
 * One source of truth: the synthesized template must say what functions/model/resources.json says,
 * and the Rust side must keep reading that same file.
 *
 * The JSON is parsed here on its own (not through lib/resources.ts) so a bug in the loader cannot
 * hide a drift.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { Duration } from 'aws-cdk-lib';
import { build, envOf, JWT_PROPS, logicalId } from './helpers';

const ROOT = path.resolve(__dirname, '..', '..');
const JSON_PATH = path.join(ROOT, 'functions', 'model', 'resources.json');
const def = JSON.parse(fs.readFileSync(JSON_PATH, 'utf8'));

/** SUNDIAL_ names a binary reads (resources.json envLoaders), less those the CDK leaves unset. */
const readBy = (binary: string): string[] => {
  const unset = new Set<string>(def.cdkLeavesUnset.names);
  const names = Object.entries(def.envLoaders as Record<string, any>)
    .filter(([k]) => !k.startsWith('$'))
    .filter(([, l]) => l.binaries.includes(binary))
    .flatMap(([, l]) => l.names as string[])
    .filter((n) => !unset.has(n))
    .map((n) => def.env[n] as string);
  return [...new Set(names)].sort();
};

const keySchema = (pk: any, sk: any) => [
  { AttributeName: pk.name, KeyType: 'HASH' },
  { AttributeName: sk.name, KeyType: 'RANGE' },
];

describe('CDK template matches resources.json', () => {
  const b = build({
    ...JWT_PROPS,
    queuePrefix: 'acme-',
    pools: [{ name: 'default' }, { name: 'bulk' }, { name: 'long', kind: 'ecs', runTimeout: Duration.hours(1) }],
    eventSources: [{ tenant: 'acme', bus: {} }],
  });
  const s = b.sundial;
  const tableProps = {
    jobs: b.json.Resources[logicalId(b.stack, s.jobsTable)].Properties,
    executions: b.json.Resources[logicalId(b.stack, s.executionsTable)].Properties,
  };

  it('has exactly the tables of resources.json', () => {
    assert.deepEqual(Object.keys(def.tables).sort(), ['executions', 'jobs']);
    assert.equal(Object.keys(b.template.findResources('AWS::DynamoDB::Table')).length, Object.keys(def.tables).length);
  });

  for (const name of ['jobs', 'executions'] as const) {
    it(`${name}: key schema, attribute types, indexes, projections and TTL`, () => {
      const t = def.tables[name];
      const p = tableProps[name];
      assert.deepEqual(p.KeySchema, keySchema(t.partitionKey, t.sortKey));
      assert.deepEqual(
        p.GlobalSecondaryIndexes.map((g: any) => ({ name: g.IndexName, keys: g.KeySchema, projection: g.Projection.ProjectionType })),
        t.indexes.map((i: any) => ({ name: i.name, keys: keySchema(i.partitionKey, i.sortKey), projection: i.projection })),
      );
      // every key attribute is declared with the type resources.json gives it
      const declared = Object.fromEntries(p.AttributeDefinitions.map((a: any) => [a.AttributeName, a.AttributeType]));
      const expected: Record<string, string> = {};
      for (const k of [t.partitionKey, t.sortKey, ...t.indexes.flatMap((i: any) => [i.partitionKey, i.sortKey])]) {
        expected[k.name] = k.type;
      }
      assert.deepEqual(declared, expected);
      assert.deepEqual(p.TimeToLiveSpecification, { AttributeName: t.ttlAttribute, Enabled: true });
    });
  }

  it('with tableNamePrefix, names tables {prefix}{defaultName} like the Rust local config', () => {
    const p = build({ ...JWT_PROPS, tableNamePrefix: 'x-' });
    for (const name of ['jobs', 'executions']) {
      p.template.hasResourceProperties('AWS::DynamoDB::Table', { TableName: `x-${def.tables[name].defaultName}` });
    }
  });

  it('names queues {prefix}{pool}, low lanes {prefix}{pool}-low, DLQs {prefix}{pool}{dlqSuffix} and notify queues {prefix}{pool}{notifySuffix}, with the maxReceiveCount and retention', () => {
    // The ingest's dead letters (bus events it failed to take) are no pool's: CloudFormation names it.
    const ingestDlq = logicalId(b.stack, s.ingestDeadLetterQueue!);
    const names = Object.entries(b.template.findResources('AWS::SQS::Queue'))
      .filter(([id]) => id !== ingestDlq)
      .map(([, q]) => q.Properties.QueueName)
      .sort();
    const pools = ['default', 'bulk', 'long'];
    const { dlqSuffix, notifySuffix } = def.queues;
    assert.deepEqual(names, pools.flatMap((p) => [`acme-${p}`, `acme-${p}-low`, `acme-${p}${dlqSuffix}`, `acme-${p}${notifySuffix}`]).sort());
    for (const pool of s.pools) {
      const q = b.json.Resources[logicalId(b.stack, pool.queue)].Properties;
      assert.equal(q.RedrivePolicy.maxReceiveCount, def.queues.maxReceiveCount);
      assert.equal(q.MessageRetentionPeriod, def.queues.messageRetentionSeconds);
      assert.ok(q.VisibilityTimeout >= def.queues.visibilityTimeoutSeconds);
      const n = b.json.Resources[logicalId(b.stack, pool.notifyQueue)].Properties;
      assert.equal(n.MessageRetentionPeriod, def.queues.messageRetentionSeconds);
    }
  });

  it('gives every function the env contract, with names from resources.json', () => {
    const env = def.env;
    const common = [env.jobsTable, env.executionsTable, env.queuePrefix, env.pools, env.shards];
    const check = (vars: Record<string, unknown>, binary: string, extra: string[], what: string) => {
      const names = Object.keys(vars).filter((k) => k.startsWith('SUNDIAL_')).sort();
      for (const n of [...common, ...extra]) assert.ok(names.includes(n), `${what}: ${n}`);
      // exactly the names the Rust loaders of its binary read, every one of them
      assert.deepEqual(names, readBy(binary), what);
      assert.deepEqual(vars[env.jobsTable], b.stack.resolve(s.jobsTable.tableName), what);
      assert.deepEqual(vars[env.executionsTable], b.stack.resolve(s.executionsTable.tableName), what);
      assert.equal(vars[env.queuePrefix], 'acme-', what);
      assert.equal(vars[env.pools], 'default,bulk,long', what);
      assert.equal(vars[env.shards], String(def.defaults.shards), what);
    };
    const tickSettings = (vars: Record<string, unknown>, what: string) => {
      for (const k of ['tickInProcessMaxShards', 'shardsPerScan', 'catchUpGlobal', 'catchUpPerTenant', 'fairQueues']) {
        assert.equal(vars[env[k]], String(def.defaults[k]), `${what}: ${k}`);
      }
    };
    const workerSettings = (vars: Record<string, unknown>, what: string) => {
      for (const k of ['leaseSecs', 'skewMarginMs']) assert.equal(vars[env[k]], String(def.defaults[k]), `${what}: ${k}`);
      assert.equal(vars[env.maxTotalRunSecs], '', `${what}: no run-time budget unless given`);
      assert.equal(vars[env.tenantMaxRunning], '', `${what}: no tenant limit unless given`);
      assert.equal(vars[env.workerId], undefined, `${what}: each process has its own id`);
    };
    const tick = envOf(b, s.tickFunction);
    check(tick, 'tick', [env.scanFunction], 'tick');
    assert.deepEqual(tick[env.scanFunction], b.stack.resolve(s.scanFunction.functionName));
    tickSettings(tick, 'tick');
    const scan = envOf(b, s.scanFunction);
    check(scan, 'tick', [], 'scan');
    assert.equal(scan[env.scanFunction], '', 'a scan never fans out further');
    tickSettings(scan, 'scan');
    const api = envOf(b, s.apiFunction);
    check(api, 'api', [], 'api');
    assert.equal(api[env.tenantClaim], def.defaults.tenantClaim);
    // The ingest is the API's control plane for events: the API's settings, and its sources.
    const ingest = envOf(b, s.ingestFunction!);
    check(ingest, 'ingest', [env.eventSources], 'ingest');
    assert.equal(ingest[env.tenantClaim], def.defaults.tenantClaim);
    assert.deepEqual(JSON.parse(ingest[env.eventSources] as string), [{ tenant: 'acme', bus: 'SundialTest-tenant-acme' }]);
    for (const pool of s.pools.filter((p) => p.kind === 'lambda')) {
      const vars = envOf(b, pool.worker!);
      check(vars, 'worker', [env.pool], `worker ${pool.name}`);
      assert.equal(vars[env.pool], pool.name);
      assert.equal(vars[env.privateTargetCidrs], '', 'public webhook addresses only unless given');
      assert.equal(vars[env.tenantTargets], '', 'no tenant allowlists unless given');
      workerSettings(vars, `worker ${pool.name}`);
    }
    const [td] = Object.values(b.template.findResources('AWS::ECS::TaskDefinition'));
    // (plain variables and container secrets: the run-name key is a secret, never a plain value)
    const container = td.Properties.ContainerDefinitions[0];
    const ecsVars = Object.fromEntries([
      ...container.Environment.map((e: any) => [e.Name, e.Value]),
      ...(container.Secrets ?? []).map((e: any) => [e.Name, e.ValueFrom]),
    ]);
    assert.deepEqual((container.Secrets ?? []).map((e: any) => e.Name), [env.runNameKey], 'ecs worker: the run-name key is a container secret');
    check(ecsVars, 'worker-ecs', [env.pool], 'ecs worker');
    assert.equal(ecsVars[env.pool], 'long');
    workerSettings(ecsVars, 'ecs worker');
    assert.equal(ecsVars[env.workerSlots], String(def.defaults.workerSlots));
    assert.equal(ecsVars[env.shutdownGraceSecs], String(def.defaults.shutdownGraceSecs));
  });

  it('sets every env variable resources.json names somewhere (no name is left unwired)', () => {
    const used = new Set<string>();
    for (const r of Object.values(b.json.Resources)) {
      if (r.Type === 'AWS::Lambda::Function') Object.keys(r.Properties.Environment?.Variables ?? {}).forEach((k) => used.add(k));
      if (r.Type === 'AWS::ECS::TaskDefinition') {
        for (const c of r.Properties.ContainerDefinitions) [...(c.Environment ?? []), ...(c.Secrets ?? [])].forEach((e: any) => used.add(e.Name));
      }
    }
    const declared = new Set<string>([
      ...Object.values(def.env as Record<string, string>),
      ...Object.values(def.tables as Record<string, { envVar: string }>).map((t) => t.envVar),
      def.queues.namePrefixEnvVar,
    ]);
    // Not for functions: the CLI's own variables, and the names each process must set itself.
    const notDeployed = new Set<string>([...readBy('sundial'), ...def.cdkLeavesUnset.names.map((n: string) => def.env[n])]);
    const deployed = new Set(['tick', 'worker', 'worker-ecs', 'api', 'ingest'].flatMap(readBy));
    for (const name of declared) {
      if (notDeployed.has(name) && !deployed.has(name)) {
        assert.ok(!used.has(name), `${name} is not meant for a function but the CDK sets it`);
        continue;
      }
      assert.ok(used.has(name), `${name} is in resources.json but no function gets it`);
    }
    for (const name of used) {
      if (name.startsWith('SUNDIAL_')) assert.ok(declared.has(name), `${name} is set by the CDK but not declared in resources.json`);
    }
  });

  it('never lets a deployed function reach loopback webhooks or run the diagnostic handlers (the dev-only settings are never set)', () => {
    for (const setting of ['devLoopbackTargets', 'diagnosticHandlers'] as const) {
      const dev = def.env[setting];
      assert.ok(def.cdkLeavesUnset.names.includes(setting));
      for (const [id, r] of Object.entries(b.json.Resources as Record<string, any>)) {
        const vars: string[] =
          r.Type === 'AWS::Lambda::Function'
            ? Object.keys(r.Properties.Environment?.Variables ?? {})
            : r.Type === 'AWS::ECS::TaskDefinition'
              ? r.Properties.ContainerDefinitions.flatMap((c: any) => [...(c.Environment ?? []), ...(c.Secrets ?? [])].map((e: any) => e.Name))
              : [];
        assert.ok(!vars.includes(dev), `${id} sets ${dev}`);
      }
    }
  });
});

describe('the Rust side reads the same file', () => {
  it('sundial_model::resources compiles in functions/model/resources.json', () => {
    const rs = fs.readFileSync(path.join(ROOT, 'functions', 'model', 'src', 'resources.rs'), 'utf8');
    assert.match(rs, /include_str!\("\.\.\/resources\.json"\)/);
  });

  it('lib/resources.ts loads that very file', async () => {
    const { RESOURCES_JSON_PATH } = await import('../lib/resources');
    assert.equal(fs.realpathSync(RESOURCES_JSON_PATH), fs.realpathSync(JSON_PATH));
  });
});
