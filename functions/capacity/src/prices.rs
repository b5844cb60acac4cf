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
    /// DynamoDB provisioned capacity, per write capacity unit-hour.
    pub dynamo_wcu_hour: f64,
    /// DynamoDB provisioned capacity, per read capacity unit-hour.
    pub dynamo_rcu_hour: f64,
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
    /// DynamoDB reserved capacity terms (partial upfront, bought in blocks of 100 units).
    #[serde(default)]
    pub reserved: Vec<ReservedPrice>,
}

/// One DynamoDB reserved-capacity term: an upfront fee and an hourly rate per 100 units, for
/// provisioned capacity of the Standard table class in one region.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ReservedPrice {
    /// Length of the commitment, years.
    pub term_years: u32,
    /// Upfront fee per 100 WCU.
    pub wcu_upfront_per_100: f64,
    /// Hourly rate per 100 WCU.
    pub wcu_hour_per_100: f64,
    /// Upfront fee per 100 RCU.
    pub rcu_upfront_per_100: f64,
    /// Hourly rate per 100 RCU.
    pub rcu_hour_per_100: f64,
}

impl ReservedPrice {
    /// What one reserved WCU costs an hour, the upfront fee spread over the term.
    pub fn wcu_hour(&self) -> f64 {
        (self.wcu_upfront_per_100 / self.term_hours() + self.wcu_hour_per_100) / 100.0
    }

    /// What one reserved RCU costs an hour, the upfront fee spread over the term.
    pub fn rcu_hour(&self) -> f64 {
        (self.rcu_upfront_per_100 / self.term_hours() + self.rcu_hour_per_100) / 100.0
    }

    fn term_hours(&self) -> f64 {
        f64::from(self.term_years.max(1)) * 8_760.0
    }
}

impl Prices {
    /// us-east-1 list prices (aws.amazon.com/dynamodb/pricing/on-demand and /provisioned, after
    /// the November 2024 on-demand cut; aws.amazon.com/sqs/pricing; aws.amazon.com/lambda/pricing;
    /// aws.amazon.com/eventbridge/pricing): DynamoDB on-demand $0.625 per million WRU, $0.125 per
    /// million RRU; provisioned $0.00065 per WCU-hour, $0.00013 per RCU-hour; $0.25 per GB-month; SQS standard $0.40 per million requests;
    /// Lambda $0.20 per million requests and $0.0000133334 per GB-second (arm64);
    /// EventBridge Scheduler $1.00 per million invocations.
    ///
    /// DynamoDB reserved capacity (aws.amazon.com/dynamodb/pricing/provisioned, "Reserved
    /// capacity"), per 100 units: 1 year $150 upfront + $0.0128 an hour (WCU), $30 + $0.0025
    /// (RCU); 3 years $180 + $0.0081 (WCU), $36 + $0.0016 (RCU): 54 % and 77 % below the
    /// provisioned rate, the figures AWS advertises.
    pub fn us_east_1() -> Prices {
        Prices {
            dynamo_write_per_million: 0.625,
            dynamo_read_per_million: 0.125,
            dynamo_wcu_hour: 0.000_65,
            dynamo_rcu_hour: 0.000_13,
            dynamo_storage_per_gb_month: 0.25,
            sqs_per_million: 0.40,
            lambda_per_million_requests: 0.20,
            lambda_per_gb_second: 0.000_013_333_4,
            eventbridge_scheduler_per_million: 1.00,
            reserved: vec![
                ReservedPrice {
                    term_years: 1,
                    wcu_upfront_per_100: 150.0,
                    wcu_hour_per_100: 0.0128,
                    rcu_upfront_per_100: 30.0,
                    rcu_hour_per_100: 0.0025,
                },
                ReservedPrice {
                    term_years: 3,
                    wcu_upfront_per_100: 180.0,
                    wcu_hour_per_100: 0.0081,
                    rcu_upfront_per_100: 36.0,
                    rcu_hour_per_100: 0.0016,
                },
            ],
        }
    }
}
