/** The small stack the app deploys: one SundialScheduler and its outputs. */
import { CfnOutput, Fn, Stack, StackProps } from 'aws-cdk-lib';
import { Construct } from 'constructs';
import { SundialScheduler, SundialSchedulerProps } from './sundial-scheduler';

export interface SundialStackProps extends StackProps {
  readonly scheduler: SundialSchedulerProps;
}

export class SundialStack extends Stack {
  public readonly scheduler: SundialScheduler;

  constructor(scope: Construct, id: string, props: SundialStackProps) {
    super(scope, id, props);
    this.scheduler = new SundialScheduler(this, 'Sundial', props.scheduler);
    const s = this.scheduler;
    new CfnOutput(this, 'ApiUrl', { value: s.apiUrl });
    new CfnOutput(this, 'JobsTableName', { value: s.jobsTable.tableName });
    new CfnOutput(this, 'ExecutionsTableName', { value: s.executionsTable.tableName });
    new CfnOutput(this, 'QueuePrefix', { value: s.queuePrefix });
    new CfnOutput(this, 'EventBusName', { value: s.eventBusName });
    new CfnOutput(this, 'TickFunctionName', { value: s.tickFunction.functionName });
    // Attach it to every tenant principal of this account (docs/tenancy.md, "The guardrail
    // policy"): nothing else stops one from invoking Sundial's functions or re-tagging targets.
    new CfnOutput(this, 'TenantGuardrailPolicyArns', {
      description: "Attach each (comma-separated) to every tenant role, user or group in this account: they deny them Sundial's functions, tables, queues, roles and the tenant tag",
      value: Fn.join(',', s.tenantGuardrailPolicies().map((p) => p.managedPolicyArn)),
    });
    new CfnOutput(this, 'DashboardUrl', {
      description: 'The CloudWatch dashboard: tick and scan, and per pool lag, queue wait, outcomes, takeovers, DLQ depth',
      value: `https://${this.region}.console.aws.amazon.com/cloudwatch/home?region=${this.region}#dashboards:name=${s.dashboard.dashboardName}`,
    });
    new CfnOutput(this, 'AlarmsUrl', {
      description: 'Sundial alarms (names start with the stack name)',
      value: `https://${this.region}.console.aws.amazon.com/cloudwatch/home?region=${this.region}#alarmsV2:?search=${this.stackName}`,
    });
  }
}
