/**
 * Fixed numbers of the construct, in one place because both the parts that size the resources and
 * the settings that tell the functions about them (worker capacity, shutdown grace) use them.
 */
import { Duration } from 'aws-cdk-lib';

export const DEFAULT_LAMBDA_RUN_TIMEOUT = Duration.minutes(2);
export const DEFAULT_ECS_RUN_TIMEOUT = Duration.minutes(15);
/** Visibility is this much above the run timeout so a slow finish is not redelivered. */
export const VISIBILITY_MARGIN_SECONDS = 30;
export const TICK_TIMEOUT = Duration.seconds(30);
export const SCAN_TIMEOUT = Duration.seconds(60);
/** Fargate's longest wait between SIGTERM and SIGKILL. */
export const ECS_STOP_TIMEOUT = Duration.seconds(120);
/** Records in one worker invocation (the SQS event sources' batch size). */
export const LAMBDA_BATCH_SIZE = 10;
/** ECS deployments start the new tasks before the old ones stop: up to twice the tasks. */
export const ECS_MAX_HEALTHY_PERCENT = 200;
