/**
 * The app's settings, from the `sundial` context key (cdk.json, or `-c sundial='{...}'`) plus a
 * few flat keys for the common cases:
 *   -c sundial:assetsDir=build/assets      built Rust functions (default: committed placeholders)
 *   -c sundial:manifestPath=../Cargo.toml  build them at synth with cargo-lambda-cdk (needs cargo lambda or Docker)
 *   -c sundial:jwtIssuer=https://issuer/ -c sundial:jwtAudience=aud1,aud2   JWT auth (default IAM)
 *   -c sundial:consoleClientId=abc123       the web console's OIDC client id (JWT auth; docs/console.md)
 *   -c sundial:stackName=Sundial-prod
 */
import * as path from 'node:path';
import { Duration } from 'aws-cdk-lib';
import * as logs from 'aws-cdk-lib/aws-logs';
import { SundialCode } from './code';
import { ApiAuth, PoolProps, SundialSchedulerProps, TargetAllow } from './sundial-scheduler';

export interface AppConfig {
  readonly stackName: string;
  readonly scheduler: SundialSchedulerProps;
}

interface RawPool {
  name: string;
  kind?: 'lambda' | 'ecs';
  maxConcurrency?: number;
  runTimeoutSeconds?: number;
  memorySize?: number;
}

interface RawConfig {
  stackName?: string;
  pools?: RawPool[];
  shards?: number;
  jwtIssuer?: string;
  jwtAudience?: string | string[];
  /** JWT auth: the claim that carries the tenant (must be one users cannot set themselves). */
  tenantClaim?: string;
  /** JWT auth: the web console's OIDC client id (a public client; redirect URI {ApiUrl}/console). */
  consoleClientId?: string;
  /** IAM auth: `principalTag` (default: the caller's `tenantTag` tag) or `account`. */
  iamTenancy?: 'principalTag' | 'account';
  /** IAM auth: the tag naming a principal's tenant (default `sundial-tenant`). */
  tenantTag?: string;
  tableNamePrefix?: string;
  queuePrefix?: string;
  logRetentionDays?: number;
  retainData?: boolean;
  alarmTopicArn?: string;
  assetsDir?: string;
  manifestPath?: string;
  allowedTargetFunctionArns?: string[];
  allowedTargetSecretArns?: string[];
  privateTargetCidrs?: string[];
  tenantTargets?: Record<string, TargetAllow>;
}

/** Builds the app's configuration from a context lookup (`app.node.tryGetContext`). */
export function appConfig(ctx: (key: string) => unknown, baseDir: string): AppConfig {
  let raw: RawConfig = {};
  const obj = ctx('sundial');
  if (typeof obj === 'string') raw = JSON.parse(obj) as RawConfig;
  else if (obj && typeof obj === 'object') raw = obj as RawConfig;
  const flat = (k: keyof RawConfig): unknown => ctx(`sundial:${k}`) ?? raw[k];

  const issuer = flat('jwtIssuer') as string | undefined;
  const audienceRaw = flat('jwtAudience') as string | string[] | undefined;
  const audience = Array.isArray(audienceRaw) ? audienceRaw : (audienceRaw ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  // Without a JWT issuer the API requires IAM (SigV4): never an open API by default.
  const iamTenancy = flat('iamTenancy') as 'principalTag' | 'account' | undefined;
  if (iamTenancy !== undefined && iamTenancy !== 'principalTag' && iamTenancy !== 'account') {
    throw new Error(`sundial:iamTenancy must be principalTag or account, got ${JSON.stringify(iamTenancy)}`);
  }
  const tenantTag = flat('tenantTag') as string | undefined;
  const apiAuth: ApiAuth = issuer ? { kind: 'jwt', issuer, audience } : { kind: 'iam', tenancy: iamTenancy, tenantTag };

  const pools: PoolProps[] | undefined = raw.pools?.map((p) => ({
    name: p.name,
    kind: p.kind,
    maxConcurrency: p.maxConcurrency,
    runTimeout: p.runTimeoutSeconds !== undefined ? Duration.seconds(p.runTimeoutSeconds) : undefined,
    memorySize: p.memorySize,
  }));
  const assetsDir = flat('assetsDir') as string | undefined;
  const manifestPath = flat('manifestPath') as string | undefined;
  if (assetsDir && manifestPath) throw new Error('give sundial:assetsDir or sundial:manifestPath, not both');
  const days = raw.logRetentionDays;
  const retain = flat('retainData');
  return {
    stackName: (flat('stackName') as string | undefined) ?? 'Sundial',
    scheduler: {
      apiAuth,
      tenantClaim: flat('tenantClaim') as string | undefined,
      consoleClientId: flat('consoleClientId') as string | undefined,
      pools,
      shards: flat('shards') !== undefined ? Number(flat('shards')) : undefined,
      tableNamePrefix: flat('tableNamePrefix') as string | undefined,
      queuePrefix: flat('queuePrefix') as string | undefined,
      logRetention: days !== undefined ? (days as logs.RetentionDays) : undefined,
      retainData: retain === undefined ? undefined : retain === true || retain === 'true',
      alarmTopicArn: flat('alarmTopicArn') as string | undefined,
      assetsDir: assetsDir ? path.resolve(baseDir, assetsDir) : undefined,
      code: manifestPath ? SundialCode.fromSource({ manifestPath: path.resolve(baseDir, manifestPath) }) : undefined,
      allowedTargetFunctionArns: raw.allowedTargetFunctionArns,
      allowedTargetSecretArns: raw.allowedTargetSecretArns,
      privateTargetCidrs: raw.privateTargetCidrs,
      tenantTargets: raw.tenantTargets,
    },
  };
}
