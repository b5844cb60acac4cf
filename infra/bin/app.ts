#!/usr/bin/env node
/**
 * The Sundial CDK app: one stack holding a SundialScheduler. Settings come from context
 * (see lib/config.ts). The stack is environment-agnostic unless CDK_DEFAULT_ACCOUNT/REGION are
 * set by the CLI from real credentials, so `cdk synth` works offline.
 */
import * as path from 'node:path';
import { App } from 'aws-cdk-lib';
import { appConfig } from '../lib/config';
import { SundialStack } from '../lib/sundial-stack';

const app = new App();
const cfg = appConfig((k) => app.node.tryGetContext(k), path.resolve(__dirname, '..'));
const account = process.env.CDK_DEFAULT_ACCOUNT;
const region = process.env.CDK_DEFAULT_REGION;
new SundialStack(app, cfg.stackName, {
  description: 'Sundial: a distributed job scheduler (DynamoDB, SQS, Lambda)',
  env: account && region ? { account, region } : undefined,
  scheduler: cfg.scheduler,
});
app.synth();
