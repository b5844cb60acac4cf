//! # sundial-testkit
//!
//! Test instrumentation and local tooling, kept out of the Lambdas: nothing here runs in a
//! deployed function unless its binary is built with the `iam-record` feature (the tests that
//! run the functions under `cargo lambda watch` do, to record their AWS calls).
//!
//! ## Layout
//! - [`access`]: the IAM access recorder (an SDK interceptor writing `SUNDIAL_IAM_RECORD`),
//!   installed per process by [`access::install`]; `infra/test/iam.test.ts` checks what it
//!   records against the CDK roles.
//! - [`intercept`]: how both attach their interceptor to every client.
//! - [`metering`]: an SDK interceptor that counts requests and DynamoDB capacity per component
//!   (the benches and the capacity model's measured costs).
//! - [`provision`]: creates the tables, indexes and per-pool queues (with low lanes and DLQs) on
//!   the emulator, for the tests, the chaos run and `sundial provision` / `sundial dev`; on AWS
//!   the CDK does it from the same `resources.json`.

pub mod access;
pub mod intercept;
pub mod metering;
pub mod provision;
