/** Table billing: on demand by default, provisioned on request (docs/capacity.md). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { build, JWT_PROPS } from './helpers';

const tables = (json: ReturnType<typeof build>['json']) =>
  Object.values(json.Resources).filter((r) => r.Type === 'AWS::DynamoDB::Table');

describe('table capacity', () => {
  it('is on demand unless asked otherwise', () => {
    const { json } = build();
    for (const t of tables(json)) {
      assert.equal(t.Properties?.BillingMode, 'PAY_PER_REQUEST');
      assert.equal(t.Properties?.ProvisionedThroughput, undefined);
    }
  });

  it('provisions the jobs and executions tables and their indexes when asked', () => {
    const { json } = build({ ...JWT_PROPS, tableCapacity: { mode: 'provisioned', writeCapacity: 700, readCapacity: 1200 } });
    const provisioned = tables(json).filter((t) => t.Properties?.ProvisionedThroughput !== undefined);
    assert.equal(provisioned.length, 2);
    for (const t of provisioned) {
      assert.equal(t.Properties?.BillingMode ?? 'PROVISIONED', 'PROVISIONED');
      assert.deepEqual(t.Properties?.ProvisionedThroughput, { ReadCapacityUnits: 1200, WriteCapacityUnits: 700 });
      for (const ix of (t.Properties?.GlobalSecondaryIndexes ?? []) as { ProvisionedThroughput?: unknown }[]) {
        assert.deepEqual(ix.ProvisionedThroughput, { ReadCapacityUnits: 1200, WriteCapacityUnits: 700 });
      }
    }
  });

  it('runs the planner and grants UpdateTable only when provisioned', () => {
    const planRules = (json: ReturnType<typeof build>['json']) =>
      Object.values(json.Resources).filter(
        (r) => r.Type === 'AWS::Events::Rule' && JSON.stringify(r.Properties?.Targets ?? []).includes('plan'),
      );
    const grants = (json: ReturnType<typeof build>['json']) => JSON.stringify(json).includes('dynamodb:UpdateTable');
    const onDemand = build().json;
    assert.equal(planRules(onDemand).length, 0);
    assert.equal(grants(onDemand), false);
    const provisioned = build({ ...JWT_PROPS, tableCapacity: { mode: 'provisioned', writeCapacity: 5, readCapacity: 5 } }).json;
    assert.equal(planRules(provisioned).length, 1);
    assert.equal(grants(provisioned), true);
  });

  it('refuses units outside 1..40,000', () => {
    assert.throws(
      () => build({ ...JWT_PROPS, tableCapacity: { mode: 'provisioned', writeCapacity: 0, readCapacity: 5 } }),
      /tableCapacity\.writeCapacity/,
    );
  });
});
