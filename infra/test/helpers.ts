/** Shared fixtures: build a stack with a SundialScheduler and read its template. */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { App, CfnElement, Duration, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as iam from 'aws-cdk-lib/aws-iam';
import { SundialScheduler, SundialSchedulerProps } from '../lib/sundial-scheduler';

/** The feature flags the app uses (cdk.json), so tests synthesize what `cdk synth` does. */
export const CDK_JSON_CONTEXT: Record<string, unknown> = JSON.parse(
  fs.readFileSync(path.join(__dirname, '..', 'cdk.json'), 'utf8'),
).context;

export const JWT_PROPS: SundialSchedulerProps = {
  apiAuth: { kind: 'jwt', issuer: 'https://issuer.example.com/', audience: ['sundial-api'] },
  pools: [
    { name: 'default', maxConcurrency: 20, runTimeout: Duration.minutes(3) },
    { name: 'bulk', maxConcurrency: 5 },
  ],
  allowedTargetFunctionArns: ['arn:aws:lambda:us-east-1:123456789012:function:target-a'],
  alarmTopicArn: 'arn:aws:sns:us-east-1:123456789012:ops',
};

export interface Built {
  readonly stack: Stack;
  readonly sundial: SundialScheduler;
  readonly template: Template;
  /** The template as plain JSON. */
  readonly json: { Resources: Record<string, { Type: string; Properties?: any; DeletionPolicy?: string; UpdateReplacePolicy?: string }> };
}

/**
 * Stand-ins for built functions (not the committed placeholders, whose synth warning is tested
 * on its own): the layout cargo lambda's --lambda-dir produces.
 */
let fakeAssets: string | undefined;
export function fakeAssetsDir(): string {
  if (fakeAssets) return fakeAssets;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sundial-assets-'));
  for (const name of ['tick', 'worker', 'api', 'ingest', 'worker-ecs']) {
    fs.mkdirSync(path.join(dir, name));
    fs.writeFileSync(path.join(dir, name, 'bootstrap'), `fake ${name} binary`, { mode: 0o755 });
  }
  fs.writeFileSync(path.join(dir, 'worker-ecs', 'Dockerfile'), 'FROM scratch\nCOPY bootstrap /bootstrap\n');
  process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  fakeAssets = dir;
  return dir;
}

export function build(props: SundialSchedulerProps = JWT_PROPS, stackName = 'SundialTest'): Built {
  const app = new App({ builtinCloudFormationValidation: false, context: CDK_JSON_CONTEXT });
  const stack = new Stack(app, stackName);
  const sundial = new SundialScheduler(stack, 'Sundial', { assetsDir: fakeAssetsDir(), ...props });
  const template = Template.fromStack(stack);
  return { stack, sundial, template, json: template.toJSON() as Built['json'] };
}

export function logicalId(stack: Stack, construct: { node: { defaultChild?: unknown } }): string {
  return stack.getLogicalId(construct.node.defaultChild as CfnElement);
}

export interface Stmt {
  readonly effect: string;
  readonly actions: string[];
  readonly resources: unknown[];
  readonly condition?: unknown;
}

const arr = <T>(v: T | T[] | undefined): T[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/** Every inline statement attached to a role (AWS::IAM::Policy resources naming it). */
export function roleStatements(built: Built, role: iam.IRole): Stmt[] {
  const roleId = logicalId(built.stack, role as unknown as { node: { defaultChild?: unknown } });
  const out: Stmt[] = [];
  for (const r of Object.values(built.json.Resources)) {
    if (r.Type !== 'AWS::IAM::Policy') continue;
    const roles = arr(r.Properties.Roles) as Array<{ Ref?: string }>;
    if (!roles.some((x) => x.Ref === roleId)) continue;
    for (const s of arr(r.Properties.PolicyDocument.Statement) as any[]) {
      out.push({ effect: s.Effect, actions: arr(s.Action), resources: arr(s.Resource), condition: s.Condition });
    }
  }
  return out;
}

/** Actions granted on resources equal to `resource` (a resolved token, deep-compared). */
export function actionsOn(stmts: Stmt[], resource: unknown): string[] {
  const key = JSON.stringify(resource);
  return [
    ...new Set(
      stmts.filter((s) => s.effect === 'Allow' && s.resources.some((r) => JSON.stringify(r) === key)).flatMap((s) => s.actions),
    ),
  ].sort();
}

export function allActions(stmts: Stmt[]): string[] {
  return [...new Set(stmts.filter((s) => s.effect === 'Allow').flatMap((s) => s.actions))].sort();
}

export function envOf(built: Built, fn: { node: { defaultChild?: unknown } }): Record<string, unknown> {
  const id = logicalId(built.stack, fn);
  return built.json.Resources[id].Properties.Environment.Variables;
}
