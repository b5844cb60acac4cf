/**
 * `@sundial/cdk`: Sundial as a CDK construct.
 *
 * - `SundialScheduler` (./sundial-scheduler, its parts in ./scheduler/): every table, queue,
 *   function, the HTTP API, alarms and dashboard; grant methods and escape hatches.
 * - `SundialCode` (./code): prebuilt assets or a build from the Rust workspace (cargo-lambda-cdk).
 * - `SundialStack` (./sundial-stack): a stack holding one scheduler and its outputs.
 * - `TOOLKIT_TABLES` (./toolkit): the handler toolkit's tables.
 * - `resources()` (./resources): the shared resource definition (resources.json) as the
 *   construct reads it.
 */
export * from './sundial-scheduler';
export * from './sundial-stack';
export * from './code';
export * from './toolkit';
export { Metrics, METRIC_NAMESPACE, POOL_DIMENSION } from './metrics';
export { resources, RESOURCES_JSON_PATH, PACKAGED_RESOURCES_JSON_PATH, REPO_RESOURCES_JSON_PATH } from './resources';
export type { Resources, TableDef, IndexDef, QueueDefs, EnvNames, SettingName } from './resources';
