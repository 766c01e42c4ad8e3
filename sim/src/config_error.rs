//! A config field that cannot be, and the checks that the world's config and its faults
//! share: its own module, because the config holds the faults and both validate with these.

use crate::{clock::MAX_DRIFT_PPM, ratio::Ratio};
use std::fmt;

/// A config field that cannot be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// Dotted path of the field, e.g. `network.loss` or `faults.plan[2].node`.
    pub field: String,
    /// What is wrong and what was expected.
    pub problem: String,
}

impl ConfigError {
    pub(crate) fn new(field: impl Into<String>, problem: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            problem: problem.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid world config: `{}`: {}",
            self.field, self.problem
        )
    }
}

impl std::error::Error for ConfigError {}

/// A probability: N/D with D > 0 and N <= D.
pub(crate) fn check_probability(field: &str, ratio: Ratio) -> Result<(), ConfigError> {
    if ratio.denominator() == 0 {
        return Err(ConfigError::new(
            field,
            format!("{ratio} has a zero denominator (expected N/D with D > 0)"),
        ));
    }
    if !ratio.is_probability() {
        return Err(ConfigError::new(
            field,
            format!("{ratio} is above 1 (expected a probability N/D with N <= D)"),
        ));
    }
    Ok(())
}

/// A latency range: min <= max, at most an hour.
pub(crate) fn check_range_us(field: &str, min_us: u64, max_us: u64) -> Result<(), ConfigError> {
    if min_us > max_us {
        return Err(ConfigError::new(
            field,
            format!("range {min_us}..={max_us} us is reversed (expected min <= max)"),
        ));
    }
    if max_us > 3_600_000_000 {
        return Err(ConfigError::new(
            field,
            format!("{max_us} us is longer than an hour (expected a latency)"),
        ));
    }
    Ok(())
}

/// A clock drift within what the clocks allow.
pub(crate) fn check_drift(field: &str, drift_ppm: i64) -> Result<(), ConfigError> {
    if drift_ppm.abs() > i64::from(MAX_DRIFT_PPM) {
        return Err(ConfigError::new(
            field,
            format!("{drift_ppm} ppm is outside ±{MAX_DRIFT_PPM} ppm"),
        ));
    }
    Ok(())
}
