//! CloudWatch Embedded Metric Format (EMF) lines.
//!
//! A Lambda's stdout goes to CloudWatch Logs, which turns EMF JSON lines into metrics with no
//! API call and no extra latency. Dimensions are low-cardinality only (`Pool`, `Policy`): job and
//! execution ids belong in logs, never in metric dimensions (seed 000 §15).

use serde_json::{json, Map, Value};

/// The CloudWatch namespace of every Sundial metric (the CDK dashboard reads it).
pub const NAMESPACE: &str = "Sundial";

/// One EMF record: a set of dimensions and metric values.
#[derive(Debug, Default, Clone)]
pub struct Emf {
    dims: Vec<(String, String)>,
    metrics: Vec<(String, String, Value)>,
}

impl Emf {
    /// A record with the given dimensions.
    pub fn new(dims: &[(&str, &str)]) -> Self {
        Emf { dims: dims.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(), metrics: Vec::new() }
    }

    /// Adds a count.
    pub fn count(mut self, name: &str, v: u64) -> Self {
        self.metrics.push((name.into(), "Count".into(), json!(v)));
        self
    }

    /// Adds milliseconds; several values make a distribution (percentiles in CloudWatch).
    pub fn millis(mut self, name: &str, values: &[i64]) -> Self {
        self.metrics.push((name.into(), "Milliseconds".into(), json!(values)));
        self
    }

    /// The EMF JSON line for `timestamp_ms`.
    pub fn render(&self, timestamp_ms: i64) -> String {
        let mut root = Map::new();
        let defs: Vec<Value> = self.metrics.iter().map(|(n, u, _)| json!({"Name": n, "Unit": u})).collect();
        let dim_names: Vec<&str> = self.dims.iter().map(|(k, _)| k.as_str()).collect();
        root.insert(
            "_aws".into(),
            json!({"Timestamp": timestamp_ms, "CloudWatchMetrics": [{
                "Namespace": NAMESPACE, "Dimensions": [dim_names], "Metrics": defs}]}),
        );
        for (k, v) in &self.dims {
            root.insert(k.clone(), json!(v));
        }
        for (n, _, v) in &self.metrics {
            root.insert(n.clone(), v.clone());
        }
        Value::Object(root).to_string()
    }

    /// Prints the line to stdout (where Lambda's log capture picks it up).
    pub fn emit(&self, timestamp_ms: i64) {
        if !self.metrics.is_empty() {
            println!("{}", self.render(timestamp_ms));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Resources;

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
            crate::model::ExecStatus::Succeeded,
            crate::model::ExecStatus::Failed,
            crate::model::ExecStatus::Dead,
            crate::model::ExecStatus::Canceled,
            crate::model::ExecStatus::Skipped,
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
            };
            lines.push(m.to_emf());
        }
        // THEN every name, the namespace and the pool dimension come from resources.json, which
        // the CDK alarms and dashboard read too
        let cat = &Resources::get().metrics;
        assert_eq!(NAMESPACE, cat.namespace);
        let mut seen = 0;
        for e in lines {
            let (ns, names, dims) = names_of(&e.render(0));
            assert_eq!(ns, cat.namespace);
            for d in &dims {
                assert!(d == &cat.pool_dimension || d == "Policy", "dimension {d} is not in the catalogue");
            }
            for n in names {
                assert!(cat.knows(&n), "{n} is emitted but missing from resources.json metrics.names");
                seen += 1;
            }
        }
        assert!(seen >= 15, "the fixture exercises the catalogue ({seen} names)");
    }

    #[test]
    fn renders_valid_emf() {
        let line = Emf::new(&[("Pool", "default")])
            .count("FiresDispatched", 3)
            .millis("ScheduleLagMs", &[5, 7])
            .render(1);
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["_aws"]["CloudWatchMetrics"][0]["Namespace"], "Sundial");
        assert_eq!(v["_aws"]["CloudWatchMetrics"][0]["Dimensions"][0][0], "Pool");
        assert_eq!(v["FiresDispatched"], 3);
        assert_eq!(v["ScheduleLagMs"][1], 7);
        assert_eq!(v["Pool"], "default");
    }
}
