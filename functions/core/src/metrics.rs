//! CloudWatch Embedded Metric Format (EMF) lines.
//!
//! A Lambda's stdout goes to CloudWatch Logs, which turns EMF JSON lines into metrics with no
//! API call and no extra latency. Dimensions are low-cardinality only (`Pool`, `Policy`): job and
//! execution ids belong in logs, never in metric dimensions (docs/execution.md §9): they ride along
//! as EMF *properties* (fields of the same log line that are not metrics), so a Logs Insights query
//! finds the execution behind a lag spike.
//!
//! EMF takes at most [`MAX_VALUES`] values per metric in one record; a distribution with more
//! (the schedule lag of a minute in which many jobs fire) is split over several lines, so no
//! value is dropped exactly when load is highest.

use serde_json::{json, Map, Value};

/// The CloudWatch namespace of every Sundial metric (the CDK dashboard reads it).
pub const NAMESPACE: &str = "Sundial";

/// Most values of one metric in one EMF record (CloudWatch drops a record with more).
pub const MAX_VALUES: usize = 100;

/// A metric's values: one count, or a distribution of milliseconds.
#[derive(Debug, Clone)]
enum Values {
    Count(u64),
    Millis(Vec<i64>),
}

/// One EMF record: a set of dimensions, metric values and properties.
#[derive(Debug, Default, Clone)]
pub struct Emf {
    dims: Vec<(String, String)>,
    metrics: Vec<(String, Values)>,
    props: Vec<(String, Value)>,
}

impl Emf {
    /// A record with the given dimensions.
    pub fn new(dims: &[(&str, &str)]) -> Self {
        Emf {
            dims: dims.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            metrics: Vec::new(),
            props: Vec::new(),
        }
    }

    /// Adds a count.
    pub fn count(mut self, name: &str, v: u64) -> Self {
        self.metrics.push((name.into(), Values::Count(v)));
        self
    }

    /// Adds milliseconds; several values make a distribution (percentiles in CloudWatch). No
    /// values, no metric.
    pub fn millis(mut self, name: &str, values: &[i64]) -> Self {
        if !values.is_empty() {
            self.metrics.push((name.into(), Values::Millis(values.to_vec())));
        }
        self
    }

    /// Adds a property: a field of the log line that is not a metric (an execution id).
    pub fn property(mut self, name: &str, v: impl Into<Value>) -> Self {
        self.props.push((name.into(), v.into()));
        self
    }

    /// The EMF JSON lines for `timestamp_ms`: one, or more when a distribution holds more than
    /// [`MAX_VALUES`] values (the counts go in the first line only, the properties in each).
    pub fn lines(&self, timestamp_ms: i64) -> Vec<String> {
        let chunks = self
            .metrics
            .iter()
            .map(|(_, v)| match v {
                Values::Count(_) => 1,
                Values::Millis(m) => m.len().div_ceil(MAX_VALUES),
            })
            .max()
            .unwrap_or(0);
        let dim_names: Vec<&str> = self.dims.iter().map(|(k, _)| k.as_str()).collect();
        let mut out = Vec::with_capacity(chunks);
        for chunk in 0..chunks {
            let mut root = Map::new();
            let mut defs = Vec::new();
            for (name, v) in &self.metrics {
                let (unit, value) = match v {
                    Values::Count(n) if chunk == 0 => ("Count", json!(n)),
                    Values::Millis(m) if chunk * MAX_VALUES < m.len() => {
                        let end = (chunk * MAX_VALUES + MAX_VALUES).min(m.len());
                        ("Milliseconds", json!(m[chunk * MAX_VALUES..end]))
                    }
                    _ => continue,
                };
                defs.push(json!({"Name": name, "Unit": unit}));
                root.insert(name.clone(), value);
            }
            root.insert(
                "_aws".into(),
                json!({"Timestamp": timestamp_ms, "CloudWatchMetrics": [{
                    "Namespace": NAMESPACE, "Dimensions": [dim_names], "Metrics": defs}]}),
            );
            for (k, v) in &self.dims {
                root.insert(k.clone(), json!(v));
            }
            for (k, v) in &self.props {
                root.insert(k.clone(), v.clone());
            }
            out.push(Value::Object(root).to_string());
        }
        out
    }

    /// Prints the lines to stdout (where Lambda's log capture picks them up).
    pub fn emit(&self, timestamp_ms: i64) {
        for line in self.lines(timestamp_ms) {
            println!("{line}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sundial_model::resources::Resources;

    /// Every metric name in an EMF line, and its namespace and dimension names.
    fn names_of(line: &str) -> (String, Vec<String>, Vec<String>) {
        let v: Value = serde_json::from_str(line).unwrap_or_default();
        let m = &v["_aws"]["CloudWatchMetrics"][0];
        let metrics = m["Metrics"].as_array().cloned().unwrap_or_default();
        let dims = m["Dimensions"][0].as_array().cloned().unwrap_or_default();
        (
            m["Namespace"].as_str().unwrap_or_default().to_string(),
            metrics.iter().filter_map(|x| x["Name"].as_str().map(String::from)).collect(),
            dims.iter().filter_map(|x| x.as_str().map(String::from)).collect(),
        )
    }

    #[test]
    fn every_emitted_metric_is_in_the_shared_catalogue() {
        // GIVEN a scan report and a worker record with every field set
        let mut report =
            crate::trigger::scan::ScanReport { shards: 2, shards_complete: 1, ..Default::default() };
        report.lag_ms.insert("default".into(), vec![5]);
        report.missed.insert(("default".into(), "fire_once"), 3);
        report.deferred = 1;
        let mut lines = crate::trigger::tick::metric_lines(&report);
        for outcome in [
            sundial_model::ExecStatus::Succeeded,
            sundial_model::ExecStatus::Failed,
            sundial_model::ExecStatus::Dead,
            sundial_model::ExecStatus::Canceled,
            sundial_model::ExecStatus::Skipped,
        ] {
            let m = crate::execution::metrics::ExecMetrics {
                pool: "default".into(),
                execution_id: "j@1".into(),
                queue_wait_ms: Some(1),
                start_lag_ms: Some(2),
                duration_ms: Some(3),
                outcome: Some(outcome),
                retries: 1,
                takeovers: 1,
                stale_rejections: 1,
                clock_skew: 1,
                fires_missed: 1,
                resources: vec![crate::execution::resource_limits::ResourceUse {
                    resource: "legacy-db".into(),
                    waits: 1,
                    holders: Some(3),
                    undefined: 1,
                }],
            };
            lines.push(m.to_emf());
            lines.extend(m.resource_emfs());
        }
        // AND a reconciler run that re-sent and found a missed start
        let mut run = crate::reconcile::ReconcileReport::default();
        run.resent.insert("default".into(), 1);
        run.missed.insert("default".into(), 1);
        lines.extend(run.metric_lines());
        // THEN every name, the namespace and the pool dimension come from resources.json, which
        // the CDK alarms and dashboard read too
        let cat = &Resources::get().metrics;
        assert_eq!(NAMESPACE, cat.namespace);
        let mut seen = 0;
        for e in lines {
            let (ns, names, dims) = names_of(&e.lines(0)[0]);
            assert_eq!(ns, cat.namespace);
            for d in &dims {
                assert!(
                    d == &cat.pool_dimension || d == &cat.resource_dimension || d == "Policy",
                    "dimension {d} is not in the catalogue"
                );
            }
            for n in names {
                assert!(cat.knows(&n), "{n} is emitted but missing from resources.json metrics.names");
                seen += 1;
            }
        }
        assert!(seen >= 15, "the fixture exercises the catalogue ({seen} names)");
    }

    #[test]
    fn distributions_over_a_hundred_values_are_split_and_nothing_is_lost() {
        // GIVEN a minute in which 250 fires were dispatched
        let lags: Vec<i64> = (0..250).collect();
        let e = Emf::new(&[("Pool", "default")])
            .count("FiresDispatched", 250)
            .millis("ScheduleLagMs", &lags)
            .millis("QueueWaitMs", &[1, 2])
            .property("tick", "req-1");
        // WHEN it is rendered
        let lines: Vec<Value> = e.lines(7).iter().map(|l| serde_json::from_str(l).unwrap()).collect();
        // THEN three records, none with more than 100 values of a metric, every value once,
        // the count once, and each line a valid EMF record with its metrics declared
        assert_eq!(lines.len(), 3);
        let mut all = Vec::new();
        for v in &lines {
            let declared: Vec<&str> = v["_aws"]["CloudWatchMetrics"][0]["Metrics"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["Name"].as_str().unwrap())
                .collect();
            let vals = v["ScheduleLagMs"].as_array().unwrap();
            assert!(vals.len() <= MAX_VALUES);
            assert!(declared.contains(&"ScheduleLagMs"));
            assert_eq!(declared.contains(&"FiresDispatched"), v.get("FiresDispatched").is_some());
            all.extend(vals.iter().map(|x| x.as_i64().unwrap()));
            assert_eq!((v["Pool"].as_str(), v["tick"].as_str()), (Some("default"), Some("req-1")));
        }
        assert_eq!(all, lags);
        assert_eq!(lines.iter().filter(|v| v.get("FiresDispatched").is_some()).count(), 1);
        assert_eq!(lines.iter().filter(|v| v.get("QueueWaitMs").is_some()).count(), 1);
        // AND an empty distribution is no metric, and a record without metrics no line
        assert!(Emf::new(&[]).millis("ScheduleLagMs", &[]).lines(1).is_empty());
    }

    #[test]
    fn renders_valid_emf() {
        let line = Emf::new(&[("Pool", "default")])
            .count("FiresDispatched", 3)
            .millis("ScheduleLagMs", &[5, 7])
            .lines(1)
            .remove(0);
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["_aws"]["CloudWatchMetrics"][0]["Namespace"], "Sundial");
        assert_eq!(v["_aws"]["CloudWatchMetrics"][0]["Dimensions"][0][0], "Pool");
        assert_eq!(v["FiresDispatched"], 3);
        assert_eq!(v["ScheduleLagMs"][1], 7);
        assert_eq!(v["Pool"], "default");
    }
}
