/**
 * Names of the CloudWatch metrics the Rust functions emit as EMF (embedded metric format) log
 * lines. Alarms and the dashboard read them; the functions must emit exactly these names, in
 * this namespace, with the pool as the `Pool` dimension.
 */
export const METRIC_NAMESPACE = 'Sundial';
export const POOL_DIMENSION = 'Pool';

export const Metrics = {
  /** Milliseconds from an execution's scheduled second to its worker start. */
  scheduleLag: 'ScheduleLagMs',
  /** Milliseconds a message waited in the pool queue after becoming visible. */
  queueWait: 'QueueWaitMs',
  executionsSucceeded: 'ExecutionsSucceeded',
  executionsFailed: 'ExecutionsFailed',
  executionsDead: 'ExecutionsDead',
  /** Executions claimed by a new worker after the previous lease expired. */
  leaseTakeovers: 'LeaseTakeovers',
  /** Fires handled by a misfire policy (missed by more than its tolerance). */
  misfires: 'Misfires',
} as const;
