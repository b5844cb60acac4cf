//! The unit prices of the monthly bill.

use serde::{Deserialize, Serialize};

/// Unit prices in US dollars.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Prices {
    /// DynamoDB on-demand, per million write request units.
    pub dynamo_write_per_million: f64,
    /// DynamoDB on-demand, per million read request units.
    pub dynamo_read_per_million: f64,
    /// DynamoDB standard table class storage, per GB-month.
    pub dynamo_storage_per_gb_month: f64,
    /// SQS standard queue, per million requests.
    pub sqs_per_million: f64,
    /// Lambda, per million requests.
    pub lambda_per_million_requests: f64,
    /// Lambda compute, per GB-second.
    pub lambda_per_gb_second: f64,
    /// EventBridge Scheduler, per million scheduled invocations.
    pub eventbridge_scheduler_per_million: f64,
}

impl Prices {
    /// us-east-1 on-demand list prices as of 2026: DynamoDB $0.625 per million WRU,
    /// $0.125 per million RRU, $0.25 per GB-month; SQS standard $0.40 per million requests;
    /// Lambda $0.20 per million requests and $0.0000133334 per GB-second (arm64);
    /// EventBridge Scheduler $1.00 per million invocations.
    pub fn us_east_1() -> Prices {
        Prices {
            dynamo_write_per_million: 0.625,
            dynamo_read_per_million: 0.125,
            dynamo_storage_per_gb_month: 0.25,
            sqs_per_million: 0.40,
            lambda_per_million_requests: 0.20,
            lambda_per_gb_second: 0.000_013_333_4,
            eventbridge_scheduler_per_million: 1.00,
        }
    }
}
