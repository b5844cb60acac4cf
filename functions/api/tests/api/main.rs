//! API tests through the real Lambda adapter and router, against the emulator, with authorizer
//! contexts for two tenants. One test binary (link time), several modules.
#![allow(dead_code, unreachable_pub)]

mod boundary;
mod calendars;
mod children;
mod clients;
mod common;
mod console;
mod ecs_network;
mod events_distinct;
mod exec_logs;
mod execution_budget;
mod expressions;
mod fair_groups;
mod fan_out_quota;
mod fuzz;
mod headers;
mod hostile;
mod idempotency;
mod ingest;
mod lambda_watch;
mod lifecycle;
mod local_server;
mod next_fire;
mod pools;
mod priority;
mod quotas;
mod replay_limits;
mod resources;
mod routing;
mod tenancy;
mod tenancy_routes;
mod throttle;
mod tz_report;
mod validation;
mod versions;
