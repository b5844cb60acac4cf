/**
 * Names of the CloudWatch metrics the Rust functions emit as EMF (embedded metric format) log
 * lines, read from `functions/model/resources.json` (`metrics`): the Rust test
 * `every_emitted_metric_is_in_the_shared_catalogue` fails if the code emits a name missing there,
 * and the alarms and the dashboard take their names from here, so the two cannot drift.
 */
import { loadResources } from './resources';

const catalogue = loadResources().metrics;

export const METRIC_NAMESPACE = catalogue.namespace;
export const POOL_DIMENSION = catalogue.poolDimension;
/** The dimension of the resource-limit metrics (`ResourceWaits`, `ResourceHolders`, ...). */
export const RESOURCE_DIMENSION = catalogue.resourceDimension;

/** Metric names by logical name (`Metrics.startLag` is `StartLagMs`, ...). */
export const Metrics = catalogue.names;
