/**
 * Deploys the synthesized template to the local emulator's CloudFormation (moto, started by
 * localstack/start.sh) and checks that what got created is what the Rust side will look for:
 * tables with resources.json's keys and indexes, queues found by `{prefix}{pool}` through
 * GetQueueUrl with their redrive to the DLQ, every function's env naming real resources, and the
 * workers' event source mappings. Then it sends one fire message through a pool queue the way the
 * scan does and takes it off the way a worker does, using only names read from the deployed env.
 *
 * Skipped when no emulator answers (set AWS_ENDPOINT_URL or SUNDIAL_EMULATOR_PORT). moto's
 * CloudFormation lacks some types (API Gateway v2, alarms, queue policies, TTL and PITR settings):
 * it skips them, so those are covered by the template tests instead; the adaptations below
 * (inline code instead of the CDK asset bucket, no bootstrap-version rule, no output on the API)
 * are the only changes to the template.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import {
  CloudFormationClient,
  CreateStackCommand,
  DeleteStackCommand,
  DescribeStacksCommand,
  DescribeStackEventsCommand,
} from '@aws-sdk/client-cloudformation';
import { DescribeTableCommand, DynamoDBClient, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { GetFunctionConfigurationCommand, LambdaClient, ListEventSourceMappingsCommand } from '@aws-sdk/client-lambda';
import {
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { resources } from '../lib/resources';
import { SundialStack } from '../lib/sundial-stack';
import { CDK_JSON_CONTEXT, fakeAssetsDir } from './helpers';

const endpoint = process.env.AWS_ENDPOINT_URL ?? `http://127.0.0.1:${process.env.SUNDIAL_EMULATOR_PORT ?? '4566'}`;
const clientConfig = {
  endpoint,
  region: process.env.AWS_REGION ?? 'us-east-1',
  credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
};

async function emulatorAnswers(): Promise<boolean> {
  try {
    const res = await fetch(`${endpoint}/_sundial/health`, { signal: AbortSignal.timeout(1000) });
    return res.ok;
  } catch {
    return false;
  }
}

/** The template, adapted only where moto cannot follow a CDK deployment (see the header). */
function emulatorTemplate(stackName: string): any {
  const app = new App({ builtinCloudFormationValidation: false, context: CDK_JSON_CONTEXT });
  const stack = new SundialStack(app, stackName, {
    scheduler: {
      apiAuth: { kind: 'jwt', issuer: 'https://issuer.example.com/', audience: ['sundial'] },
      pools: [{ name: 'default' }, { name: 'bulk', maxConcurrency: 3 }],
      shards: 16,
      retainData: false,
      assetsDir: fakeAssetsDir(),
    },
  });
  const t = Template.fromStack(stack).toJSON() as any;
  delete t.Rules;
  delete t.Parameters;
  delete t.Outputs.ApiUrl;
  for (const r of Object.values(t.Resources) as any[]) {
    if (r.Type === 'AWS::Lambda::Function') r.Properties.Code = { ZipFile: 'placeholder' };
  }
  return t;
}

describe('deploy to the emulator CloudFormation', async () => {
  const up = await emulatorAnswers();

  it('creates the stack, and the Rust naming contract finds every resource', { skip: !up && `no emulator at ${endpoint}` }, async () => {
    const r = resources();
    const stackName = `InfraTest-${randomBytes(4).toString('hex')}`;
    const cfn = new CloudFormationClient(clientConfig);
    const ddb = new DynamoDBClient(clientConfig);
    const sqs = new SQSClient(clientConfig);
    const lambda = new LambdaClient(clientConfig);
    try {
      await cfn.send(
        new CreateStackCommand({
          StackName: stackName,
          TemplateBody: JSON.stringify(emulatorTemplate(stackName)),
          Capabilities: ['CAPABILITY_IAM'],
        }),
      );
      let stack;
      for (let i = 0; i < 120; i++) {
        stack = (await cfn.send(new DescribeStacksCommand({ StackName: stackName }))).Stacks![0];
        if (!stack.StackStatus!.endsWith('IN_PROGRESS')) break;
        await new Promise((res) => setTimeout(res, 250));
      }
      if (stack!.StackStatus !== 'CREATE_COMPLETE') {
        const events = await cfn.send(new DescribeStackEventsCommand({ StackName: stackName }));
        assert.fail(`stack ${stack!.StackStatus}: ${JSON.stringify(events.StackEvents?.slice(0, 10), null, 1)}`);
      }
      const out = Object.fromEntries(stack!.Outputs!.map((o) => [o.OutputKey, o.OutputValue]));

      // The tick's env is the Rust Config: every name in it must lead to a real resource.
      const tickEnv = (await lambda.send(new GetFunctionConfigurationCommand({ FunctionName: out.TickFunctionName })))
        .Environment!.Variables!;
      assert.equal(tickEnv[r.env.jobsTable], out.JobsTableName);
      assert.equal(tickEnv[r.env.executionsTable], out.ExecutionsTableName);
      assert.equal(tickEnv[r.env.queuePrefix], `${stackName}-`);
      assert.equal(tickEnv[r.env.pools], 'default,bulk');
      assert.equal(tickEnv[r.env.shards], '16');

      // Tables: keys and indexes as resources.json says.
      for (const [name, def] of [
        ['jobs', r.tables.jobs],
        ['executions', r.tables.executions],
      ] as const) {
        const table = (await ddb.send(new DescribeTableCommand({ TableName: tickEnv[def.envVar] }))).Table!;
        assert.deepEqual(
          table.KeySchema,
          [
            { AttributeName: def.partitionKey.name, KeyType: 'HASH' },
            { AttributeName: def.sortKey.name, KeyType: 'RANGE' },
          ],
          name,
        );
        assert.deepEqual(
          (table.GlobalSecondaryIndexes ?? []).map((g) => [g.IndexName, g.Projection?.ProjectionType]).sort(),
          def.indexes.map((i) => [i.name, i.projection]).sort(),
          name,
        );
      }

      // Scan function named in the tick's env exists.
      const scan = await lambda.send(new GetFunctionConfigurationCommand({ FunctionName: tickEnv[r.env.scanFunction] }));
      assert.equal(scan.Runtime, 'provided.al2023'); // (moto's CloudFormation drops Architectures)

      // Queues: derived names resolve, redrive goes to the pool's DLQ.
      const prefix = tickEnv[r.env.queuePrefix];
      const mappings = (await lambda.send(new ListEventSourceMappingsCommand({}))).EventSourceMappings ?? [];
      for (const pool of tickEnv[r.env.pools].split(',')) {
        const url = (await sqs.send(new GetQueueUrlCommand({ QueueName: `${prefix}${pool}` }))).QueueUrl!;
        const dlqUrl = (await sqs.send(new GetQueueUrlCommand({ QueueName: `${prefix}${pool}${r.queues.dlqSuffix}` }))).QueueUrl!;
        const attrs = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['All'] }))).Attributes!;
        const dlqArn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: dlqUrl, AttributeNames: ['QueueArn'] })))
          .Attributes!.QueueArn;
        const redrive = JSON.parse(attrs.RedrivePolicy!);
        assert.equal(redrive.deadLetterTargetArn, dlqArn, pool);
        assert.equal(Number(redrive.maxReceiveCount), r.queues.maxReceiveCount, pool);
        // A worker Lambda consumes this queue and serves this pool.
        const mapping = mappings.find((m) => m.EventSourceArn === attrs.QueueArn);
        assert.ok(mapping, `no event source mapping on ${prefix}${pool}`);
        const workerEnv = (await lambda.send(new GetFunctionConfigurationCommand({ FunctionName: mapping!.FunctionArn })))
          .Environment!.Variables!;
        assert.equal(workerEnv[r.env.pool], pool);
        assert.equal(workerEnv[r.env.privateTargetCidrs], '');
        assert.equal(workerEnv[r.env.devLoopbackTargets], undefined);
        assert.equal(workerEnv[r.env.queuePrefix], prefix);
      }

      // One fire through the deployed resources, by names from the env only: the scan's
      // put-then-send, the worker's receive, claim and delete. (The Rust binaries do this for
      // real in the workspace's integration tests; here it proves the deployment wires them.)
      const execTable = tickEnv[r.env.executionsTable];
      const key = { [r.tables.executions.partitionKey.name]: { S: 'T#acme#J#job-1' }, [r.tables.executions.sortKey.name]: { S: 'E#2026-11-30T00:00:00Z' } };
      await ddb.send(new PutItemCommand({ TableName: execTable, Item: { ...key, status: { S: 'READY' } }, ConditionExpression: 'attribute_not_exists(pk)' }));
      const queueUrl = (await sqs.send(new GetQueueUrlCommand({ QueueName: `${prefix}default` }))).QueueUrl!;
      await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: JSON.stringify({ pk: key.pk.S, sk: key.sk.S }) }));
      const got = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, WaitTimeSeconds: 1, MaxNumberOfMessages: 1 }));
      assert.equal(got.Messages?.length, 1);
      const body = JSON.parse(got.Messages![0].Body!);
      const item = (await ddb.send(new GetItemCommand({ TableName: execTable, Key: { pk: { S: body.pk }, sk: { S: body.sk } } }))).Item;
      assert.equal(item?.status.S, 'READY');
      await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: got.Messages![0].ReceiptHandle! }));
    } finally {
      await cfn.send(new DeleteStackCommand({ StackName: stackName })).catch(() => undefined);
      for (const c of [cfn, ddb, sqs, lambda]) c.destroy();
    }
  });
});
