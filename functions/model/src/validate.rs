//! A [`JobDefinition`]'s validation against a [`Deployment`]: its schedule, pool, parameters,
//! target and notification policy, retry and timeout limits, resources, deadlines and the
//! checks of its fan-out, map-reduce and dependency blocks; and the per-run parameters merged
//! over it, validated again.

use crate::definition::{merge_params, JobDefinition, MAX_RUNS};
use crate::deployment::Deployment;
use crate::limits::{
    self, MAX_FIRE_ALL_CAP, MAX_INLINE_PARAMS_BYTES, MAX_JOB_RESOURCES, MAX_START_DEADLINE_SECS,
};
use crate::validation::{invalid, ValidationError};
use chrono::{DateTime, Utc};
use std::sync::Arc;
use sundial_schedule::{BusinessDays, Schedule};

impl JobDefinition {
    /// Validates `tenant`'s definition against the deployment (pools, target policy) and parses
    /// its schedule.
    pub fn validate<'a>(
        &self,
        cfg: impl Into<Deployment<'a>>,
        tenant: &str,
        anchor: DateTime<Utc>,
    ) -> Result<Schedule, ValidationError> {
        self.validate_with(cfg, tenant, anchor, None)
    }

    /// [`JobDefinition::validate`] with the business calendar `schedule.businessCalendar`
    /// names, resolved (the version in force).
    pub fn validate_with<'a>(
        &self,
        cfg: impl Into<Deployment<'a>>,
        tenant: &str,
        anchor: DateTime<Utc>,
        business: Option<Arc<BusinessDays>>,
    ) -> Result<Schedule, ValidationError> {
        let cfg: Deployment<'a> = cfg.into();
        let def = self;
        let schedule = Schedule::parse_with(&def.schedule, anchor, business)
            .map_err(|e| invalid(format!("schedule.{}", e.field()), e.reason()))?;
        if !cfg.pools.iter().any(|p| p == &def.pool) {
            return Err(invalid(
                "pool",
                // Not the list of pools: their names say what other tenants run on (issue 28, L1).
                format!("unknown pool {:?}; ask the operator which pools this deployment has", def.pool),
            ));
        }
        cfg.targets.check_pool(tenant, &def.pool)?;
        def.validate_params()?;
        // The one target policy, the same the worker applies before every call.
        cfg.targets.check(cfg, tenant, &def.target)?;
        if let Some(notify) = &def.outcome_notify {
            cfg.targets.check_notify(cfg, tenant, notify)?;
        }
        def.validate_policies()?;
        crate::children::validate(def)?;
        crate::mapreduce::validate(def)?;
        Ok(schedule)
    }

    /// `params` inline up to [`MAX_INLINE_PARAMS_BYTES`], `paramsRef` 1–1024 characters.
    fn validate_params(&self) -> Result<(), ValidationError> {
        let def = self;
        let params_len = serde_json::to_string(&def.params).map(|s| s.len()).unwrap_or(usize::MAX);
        if params_len > MAX_INLINE_PARAMS_BYTES {
            return Err(invalid(
                "params",
                format!("{params_len} bytes inline; the limit is {MAX_INLINE_PARAMS_BYTES}: store large parameters elsewhere and pass paramsRef"),
            ));
        }
        if let Some(r) = &def.params_ref {
            if r.is_empty() || r.len() > 1024 {
                return Err(invalid("paramsRef", "must be 1-1024 characters"));
            }
        }
        Ok(())
    }

    /// The retry policy and the run timeout (within the limits SQS's visibility sets), the
    /// misfire cap and threshold, the resources and the start deadline, in that order.
    fn validate_policies(&self) -> Result<(), ValidationError> {
        let def = self;
        let r = &def.retry;
        if r.max_attempts == 0 || r.max_attempts > limits::MAX_ATTEMPTS {
            return Err(invalid(
                "retry.maxAttempts",
                format!("must be between 1 and {}", limits::MAX_ATTEMPTS),
            ));
        }
        if r.base_delay_secs == 0 || r.base_delay_secs > r.max_delay_secs {
            return Err(invalid("retry.baseDelaySecs", "must be at least 1 and at most retry.maxDelaySecs"));
        }
        if r.max_delay_secs > limits::MAX_RETRY_DELAY_SECS {
            return Err(invalid(
                "retry.maxDelaySecs",
                format!("must be at most {} (SQS visibility limit of 12 h)", limits::MAX_RETRY_DELAY_SECS),
            ));
        }
        if def.timeout_secs == 0 || def.timeout_secs > limits::MAX_TIMEOUT_SECS {
            return Err(invalid(
                "timeoutSecs",
                format!("must be between 1 and {}", limits::MAX_TIMEOUT_SECS),
            ));
        }
        if let sundial_schedule::MisfirePolicy::FireAll { cap } = def.misfire {
            if cap == 0 || cap > MAX_FIRE_ALL_CAP {
                return Err(invalid("misfire.cap", format!("must be between 1 and {MAX_FIRE_ALL_CAP}")));
            }
        }
        if def.misfire_threshold_secs > 86_400 {
            return Err(invalid("misfireThresholdSecs", "must be at most 86400"));
        }
        validate_resources(&def.resources)?;
        crate::dependency::validate(None, &def.after, def.dependency_deadline_secs)?;
        if let Some(n) = def.auto_pause_after_dead_fires {
            let max = crate::outcome::MAX_AUTO_PAUSE_AFTER;
            if n == 0 || n > max {
                return Err(invalid("autoPauseAfterDeadFires", format!("must be between 1 and {max}")));
            }
        }
        if let Some(n) = def.max_runs {
            if n == 0 || n > MAX_RUNS {
                return Err(invalid("maxRuns", format!("must be between 1 and {MAX_RUNS}")));
            }
        }
        if let Some(d) = def.start_deadline_secs {
            if d == 0 || d > MAX_START_DEADLINE_SECS {
                return Err(invalid(
                    "startDeadlineSecs",
                    format!("must be between 1 and {MAX_START_DEADLINE_SECS} (7 days)"),
                ));
            }
        }
        if let Some(d) = def.finish_deadline_secs {
            if d == 0 || d > MAX_START_DEADLINE_SECS {
                return Err(invalid(
                    "finishDeadlineSecs",
                    format!("must be between 1 and {MAX_START_DEADLINE_SECS} (7 days)"),
                ));
            }
            if def.start_deadline_secs.is_some_and(|s| s > d) {
                return Err(invalid("finishDeadlineSecs", "must not be before startDeadlineSecs"));
            }
        }
        Ok(())
    }
}

impl JobDefinition {
    /// This definition with per-run parameters `run` merged over its own ([`merge_params`]),
    /// refused (400 on `params`) when the result is larger than [`MAX_INLINE_PARAMS_BYTES`].
    pub fn with_run_params(&self, run: Option<&serde_json::Value>) -> Result<JobDefinition, ValidationError> {
        let Some(run) = run else { return Ok(self.clone()) };
        let mut def = self.clone();
        def.params = merge_params(&self.params, run);
        def.validate_params()?;
        Ok(def)
    }
}

/// The syntax of a job's `resources` (that each names a defined limit is the control plane's
/// check, which reads them): ids, at most [`MAX_JOB_RESOURCES`], none twice.
fn validate_resources(resources: &[String]) -> Result<(), ValidationError> {
    if resources.len() > MAX_JOB_RESOURCES {
        return Err(invalid("resources", format!("at most {MAX_JOB_RESOURCES} resources per job")));
    }
    for (i, r) in resources.iter().enumerate() {
        let field = format!("resources[{i}]");
        crate::keys::validate_id("resources", r).map_err(|e| invalid(&field, e.reason))?;
        if resources[..i].contains(r) {
            return Err(invalid(field, format!("{r:?} is listed twice")));
        }
    }
    Ok(())
}
