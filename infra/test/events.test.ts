/**
 * The tenants' event sources (issue 32, docs/events.md): a tenant's SQS queue through an event
 * source mapping, a bus made for a tenant with a rule stamping its events, both to the ingest
 * function, which exists only when sources are declared.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Stack } from 'aws-cdk-lib';
import { Match } from 'aws-cdk-lib/assertions';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { build, envOf, JWT_PROPS, logicalId, roleStatements } from './helpers';

const QUEUE = 'arn:aws:sqs:us-east-1:111111111111:acme-files';
const sourceQueue = () => sqs.Queue.fromQueueArn(new Stack(), 'Source', QUEUE);

describe('event sources: a tenant queue and a tenant bus wired to the ingest', () => {
  const b = build({
    ...JWT_PROPS,
    eventSources: [
      { tenant: 'acme', queue: sourceQueue() },
      { tenant: 'globex', bus: { accounts: ['222222222222'] } },
    ],
  });
  const s = b.sundial;
  const ingest = s.ingestFunction!;

  it('makes the ingest function, with its sources declared in its environment', () => {
    assert.ok(ingest, 'ingestFunction');
    const env = envOf(b, ingest);
    const sources = JSON.parse(env.SUNDIAL_EVENT_SOURCES as string);
    assert.deepEqual(sources[0], { tenant: 'acme', queueArn: QUEUE });
    assert.deepEqual(sources[1], { tenant: 'globex', bus: 'SundialTest-tenant-globex' });
    // Bus events it fails end in its own dead-letter queue after Lambda's two retries.
    const fn = b.json.Resources[logicalId(b.stack, ingest)].Properties;
    assert.deepEqual(fn.DeadLetterConfig.TargetArn, { 'Fn::GetAtt': [logicalId(b.stack, s.ingestDeadLetterQueue!), 'Arn'] });
    b.template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', { MaximumRetryAttempts: 2 });
  });

  it("maps the tenant's queue with partial batch responses, and lets the ingest consume it and read its tags", () => {
    b.template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: QUEUE,
      FunctionName: { Ref: logicalId(b.stack, ingest) },
      BatchSize: 10,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      ScalingConfig: { MaximumConcurrency: 5 },
    });
    const stmts = roleStatements(b, ingest.role!);
    const on = (action: string) => stmts.some((st) => st.effect === 'Allow' && st.actions.includes(action) && st.resources.includes(QUEUE));
    for (const a of ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:ChangeMessageVisibility', 'sqs:GetQueueAttributes', 'sqs:ListQueueTags', 'sqs:GetQueueUrl']) {
      assert.ok(on(a), `ingest may ${a} on the tenant queue`);
    }
    // It never sends to the tenant's queue: it is a source, not a target.
    assert.ok(!on('sqs:SendMessage'));
  });

  it("makes the tenant's bus, tagged and open to its accounts, with a rule stamping each event with the tenant", () => {
    const bus = s.tenantBuses.globex;
    const busId = logicalId(b.stack, bus);
    const busRes = b.json.Resources[busId].Properties as { Name: string; Tags?: { Key: string; Value: string }[] };
    assert.equal(busRes.Name, 'SundialTest-tenant-globex');
    assert.deepEqual(busRes.Tags, [{ Key: 'sundial-tenant', Value: 'globex' }]);
    const policies = Object.values(b.template.findResources('AWS::Events::EventBusPolicy')).map((p) => JSON.stringify(p.Properties));
    assert.ok(policies.some((p) => p.includes('222222222222') && p.includes('events:PutEvents')), policies.join('\n'));
    b.template.hasResourceProperties('AWS::Events::Rule', {
      EventBusName: { Ref: busId },
      EventPattern: { 'detail-type': ['Sundial Event'] },
      Targets: [
        Match.objectLike({
          Arn: { 'Fn::GetAtt': [logicalId(b.stack, ingest), 'Arn'] },
          InputTransformer: {
            InputTemplate: '{"sundialEventSource":{"tenant":"globex","bus":"SundialTest-tenant-globex"},"event":<aws.events.event>}',
          },
          DeadLetterConfig: { Arn: { 'Fn::GetAtt': [logicalId(b.stack, s.ingestDeadLetterQueue!), 'Arn'] } },
        }),
      ],
    });
  });

  it("the guardrail covers the ingest, and lets a tenant put events only on its own bus", () => {
    const stmts = b.stack.resolve(s.tenantGuardrailStatements().map((st) => st.toStatementJson())) as Record<string, any>[];
    const fns = stmts.find((st) => st.Sid === 'SundialFunctions')!;
    assert.ok(JSON.stringify(fns.Resource).includes(logicalId(b.stack, ingest)), 'lambda:* denied on the ingest');
    const admin = stmts.find((st) => st.Sid === 'SundialTenantBusesAdmin')!;
    assert.deepEqual(admin.NotAction, 'events:PutEvents');
    assert.equal(admin.Effect, 'Deny');
    const own = stmts.find((st) => st.Sid === 'SundialTenantBus0')!;
    assert.deepEqual(own.Resource, b.stack.resolve(s.tenantBuses.globex.eventBusArn));
    assert.equal(own.Action, 'events:PutEvents');
    assert.deepEqual(own.Condition, { StringNotEquals: { 'aws:PrincipalTag/sundial-tenant': 'globex' } });
  });

  it('refuses a source that is neither or both, a bad tenant, and a second bus for a tenant', () => {
    const bad = [
      [{ tenant: 'acme' }, /exactly one of queue and bus/],
      [{ tenant: 'acme', queue: sourceQueue(), bus: {} }, /exactly one of queue and bus/],
      [{ tenant: 'a b', bus: {} }, /eventSources\[0\]\.tenant/],
      [{ tenant: 'a.b', bus: {} }, /eventSources\[0\]\.tenant/],
    ] as const;
    for (const [src, msg] of bad) assert.throws(() => build({ ...JWT_PROPS, eventSources: [src as any] }), msg);
    assert.throws(() => build({ ...JWT_PROPS, eventSources: [{ tenant: 'acme', bus: {} }, { tenant: 'acme', bus: {} }] }), /already has a bus/);
  });

  it('makes no ingest, bus or mapping without sources', () => {
    const plain = build(JWT_PROPS);
    assert.equal(plain.sundial.ingestFunction, undefined);
    assert.deepEqual(Object.keys(plain.sundial.tenantBuses), []);
    assert.equal(Object.keys(plain.template.findResources('AWS::Events::EventBus')).length, 1, 'only the stack bus');
  });
});
