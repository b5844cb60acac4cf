/**
 * A platform team's CDK app with Sundial in it, written against the published package
 * (`@sundial/cdk`), not against this repository's sources.
 *
 *   npm install            # @sundial/cdk from ../.. (file:), or from the registry
 *   npx cdk synth          # placeholder functions (a warning says so); offline
 *   npx cdk synth -c sundial:assetsDir=/path/to/built/assets    # infra/scripts/build-assets.sh output
 *   npx cdk synth -c sundial:manifestPath=/path/to/sundial/Cargo.toml   # build with cargo lambda at synth
 */
import { App, CfnOutput, Duration, Stack, StackProps, Tags } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import { Construct } from 'constructs';
import { SundialCode, SundialScheduler } from '@sundial/cdk';

class PaymentsStack extends Stack {
  constructor(scope: Construct, id: string, props?: StackProps) {
    super(scope, id, props);
    const assetsDir = this.node.tryGetContext('sundial:assetsDir') as string | undefined;
    const manifestPath = this.node.tryGetContext('sundial:manifestPath') as string | undefined;
    const key = new kms.Key(this, 'SundialKey', { enableKeyRotation: true, description: 'Sundial tables, queues and logs' });

    const sundial = new SundialScheduler(this, 'Scheduler', {
      apiAuth: { kind: 'iam' },
      pools: [
        { name: 'default', maxConcurrency: 20 },
        { name: 'settlement', maxConcurrency: 4, runTimeout: Duration.minutes(10) },
      ],
      code: manifestPath ? SundialCode.fromSource({ manifestPath }) : assetsDir ? SundialCode.fromAssets(assetsDir) : undefined,
      encryptionKey: key,
      tracing: true,
      toolkitTables: { namePrefix: 'payments-' },
      functionOverrides: { api: { memorySize: 512 } },
      retainData: false,
      // What each tenant may call (review M3): without it every tenant may use every pool,
      // public webhook host and in-process handler, and synth warns.
      tenantTargets: { payments: { pools: ['default', 'settlement'], http: ['*.payments.example.com'] } },
    });

    // The team's operators call the API with SigV4 (`sundial --auth iam ...`) as tenant
    // `payments`: the tag names their tenant, and the guardrail keeps them (and every tenant
    // principal of this account) off Sundial's functions, tables, roles and the tenant tag.
    const operators = new iam.Role(this, 'Operators', { assumedBy: new iam.AccountRootPrincipal() });
    Tags.of(operators).add('sundial-tenant', 'payments');
    for (const policy of sundial.tenantGuardrailPolicies()) operators.addManagedPolicy(policy);
    sundial.grantInvokeApi(operators);
    // A reporting job reads executions directly.
    const reporting = new iam.Role(this, 'Reporting', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') });
    sundial.grantReadExecutions(reporting);
    // The settlement handler uses the idempotency toolkit's inbox, outbound and markers tables.
    const settlement = new iam.Role(this, 'SettlementHandler', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') });
    sundial.grantToolkit(settlement);

    new CfnOutput(this, 'ApiUrl', { value: sundial.apiUrl });
    new CfnOutput(this, 'InboxTable', { value: sundial.toolkitTables!.inbox.tableName });
  }
}

const app = new App();
new PaymentsStack(app, 'Payments');
app.synth();
