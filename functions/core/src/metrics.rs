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
