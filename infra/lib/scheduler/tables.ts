/**
 * The tables: jobs and executions with the keys and indexes of resources.json, and the handler
 * toolkit's tables when asked for.
 */
import { RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import { resources, TableDef } from '../resources';
import { TOOLKIT_TABLES, ToolkitTableName } from '../toolkit';
import { Sundial } from './context';
import { TableCapacity, TableOverrides } from './props';

export interface Tables {
  readonly jobs: dynamodb.Table;
  readonly executions: dynamodb.Table;
  /** The handler toolkit's tables, when `toolkitTables` asked for them. */
  readonly toolkit?: Record<ToolkitTableName, dynamodb.Table>;
}

/** The jobs and executions tables, then the toolkit's. */
export function createTables(s: Sundial): Tables {
  const { props } = s;
  const r = resources();
  const to = props.tableOverrides ?? {};
  const cap = capacityProps(props.tableCapacity);
  const jobs = table(s, 'JobsTable', r.tables.jobs, props.tableNamePrefix, { ...cap, ...to.all, ...to.jobs });
  const executions = table(s, 'ExecutionsTable', r.tables.executions, props.tableNamePrefix, { ...cap, ...to.all, ...to.executions });
  if (!props.toolkitTables) return { jobs, executions };
  const prefix = props.toolkitTables === true ? undefined : props.toolkitTables.namePrefix;
  return { jobs, executions, toolkit: toolkit(s, prefix, { ...to.all, ...to.toolkit }) };
}

/** The table props of a billing choice (empty for on demand, the construct's default). */
function capacityProps(c: TableCapacity | undefined): TableOverrides {
  if (c === undefined || c.mode === 'onDemand') return {};
  for (const [name, v] of [['writeCapacity', c.writeCapacity], ['readCapacity', c.readCapacity]] as const) {
    if (!Number.isInteger(v) || v < 1 || v > 40_000) {
      throw new Error(`tableCapacity.${name} must be an integer from 1 to 40,000 (the default table quota), got ${v}`);
    }
  }
  return { billingMode: dynamodb.BillingMode.PROVISIONED, writeCapacity: c.writeCapacity, readCapacity: c.readCapacity };
}

function table(s: Sundial, id: string, def: TableDef, namePrefix: string | undefined, overrides: TableOverrides): dynamodb.Table {
  const t = new dynamodb.Table(s.scope, id, {
    ...tableDefaults(s),
    ...overrides,
    ...tableEncryption(s),
    tableName: namePrefix !== undefined ? `${namePrefix}${def.defaultName}` : undefined,
    partitionKey: attr(def.partitionKey),
    sortKey: attr(def.sortKey),
    timeToLiveAttribute: def.ttlAttribute,
  });
  for (const ix of def.indexes) {
    t.addGlobalSecondaryIndex({
      indexName: ix.name,
      partitionKey: attr(ix.partitionKey),
      sortKey: attr(ix.sortKey),
      projectionType: ix.projection === 'ALL' ? dynamodb.ProjectionType.ALL : dynamodb.ProjectionType.KEYS_ONLY,
      ...(overrides.billingMode === dynamodb.BillingMode.PROVISIONED
        ? { readCapacity: overrides.readCapacity, writeCapacity: overrides.writeCapacity }
        : {}),
    });
  }
  return t;
}

/** What every table gets unless `tableOverrides` says otherwise. */
function tableDefaults(s: Sundial): Partial<dynamodb.TableProps> {
  return {
    billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    deletionProtection: s.retain,
    removalPolicy: s.retain ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
  };
}

function tableEncryption(s: Sundial): Pick<dynamodb.TableProps, 'encryption' | 'encryptionKey'> {
  return s.encryptionKey
    ? { encryption: dynamodb.TableEncryption.CUSTOMER_MANAGED, encryptionKey: s.encryptionKey }
    : {};
}

/** The handler toolkit's tables (lib/toolkit.ts): one string hash key each, TTL on markers. */
function toolkit(s: Sundial, namePrefix: string | undefined, overrides: TableOverrides): Record<ToolkitTableName, dynamodb.Table> {
  const make = (name: ToolkitTableName, id: string): dynamodb.Table => {
    const def = TOOLKIT_TABLES[name];
    return new dynamodb.Table(s.scope, id, {
      ...tableDefaults(s),
      ...overrides,
      ...tableEncryption(s),
      tableName: namePrefix !== undefined ? `${namePrefix}${def.suffix}` : undefined,
      partitionKey: { name: def.partitionKey, type: dynamodb.AttributeType.STRING },
      timeToLiveAttribute: def.ttlAttribute,
    });
  };
  return { inbox: make('inbox', 'ToolkitInbox'), outbound: make('outbound', 'ToolkitOutbound'), markers: make('markers', 'ToolkitMarkers') };
}

function attr(k: { name: string; type: string }): dynamodb.Attribute {
  return {
    name: k.name,
    type: k.type === 'S' ? dynamodb.AttributeType.STRING : k.type === 'N' ? dynamodb.AttributeType.NUMBER : dynamodb.AttributeType.BINARY,
  };
}
